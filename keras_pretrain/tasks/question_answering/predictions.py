"""SQuAD answers from the heads' outputs, as the authors post-process them, written once for every pipeline.

Three variants share the candidates, the n best and the files (`_candidates`, `_best_answers`, `_nbest_json`,
`write_prediction_files`):

- `write_predictions`: bert `run_squad.py`'s, on the span head's start / end logits and the features of
  `features_wordpiece` (also RoBERTa's byte-level BPE with `tokens_to_text=byte_level_text`);
- `write_predictions_sentencepiece`: albert `squad_utils`' `accumulate_predictions_v1` + `write_predictions_v1`,
  on the span head's logits and the features of `features_sentencepiece`;
- `write_predictions_beam`: the answer-class head's beam, xlnet `run_squad.write_predictions`
  (`layout="xlnet"`, the features of `features_xlnet`) and albert's `accumulate_predictions_v2` +
  `write_predictions_v2` (`layout="albert"`).

The inputs are duck-typed, as the originals' objects: an example has `qas_id` and `doc_tokens` (run_squad's
whitespace-split words) or `paragraph_text` (the raw context); a feature has `unique_id`, `example_index` (the
index of its example in `examples`), `token_is_max_context` (window position -> bool) and either `tokens` and
`token_to_orig_map` (window position -> word index, context tokens only) or `tok_start_to_orig_index` /
`tok_end_to_orig_index` (the raw-context characters of each doc piece); a result has `unique_id` and
`start_logits`, `end_logits` (one float per window position) or the beam: `start_top_log_probs` /
`start_top_index` (`start_n_top`), `end_top_log_probs` / `end_top_index` (`start_n_top * end_n_top`, the ends of
start `i` at `i * end_n_top + j`) and `cls_logits` (the answer-class score: higher = no answer).

The candidates of a window are its (start, end) pairs (the `n_best_size` best start and end logits, or the
beam), dropped when outside the context, not in their window's best context, reversed or longer than
`max_answer_length` tokens; the candidates of all windows are ranked by start + end score and the first of each
distinct text kept, `n_best_size` of them; the probabilities are a softmax over start + end of the listed
answers.

- run_squad (`write_predictions`, returns `(predictions, nbest, null_odds)`): a span's text is its WordPiece text
  mapped back onto the original words by `get_final_text` (the original words when the mapping fails); in
  v2.0 the null answer is the window whose [CLS] start + end logits are the smallest, `null_odds` the null
  score minus the best non-null score, the answer "" when it is above `null_score_diff_threshold`; n best
  entries {"text", "probability", "start_logit", "end_logit"}.
- albert v1 (`write_predictions_sentencepiece`, returns `(predictions, nbest)`): the text is read off the raw
  context by character, from the start piece's first character to the end piece's last, stripped (no
  `get_final_text`); positions are doc-relative (after `[CLS] question [SEP]`); n best entries {"text",
  "probability", "start_log_prob", "end_log_prob"} (the original's names, holding the v1 model's logits).
- beam (`write_predictions_beam`, returns `(predictions, nbest, null_odds)`): the text as albert v1's; the null
  odds the smallest `cls_logits` over the question's windows. `xlnet`: the paragraph is first in the window
  (doc offset 0) and a start or end at or after `paragraph_len - 1` is dropped; the prediction is always the
  best span (the evaluation picks the null threshold: `evaluation`'s `best_*`). `albert`: the doc starts after
  the first `[SEP]`; a candidate with the same (start, end) in one window is scored by the mean of its
  log-probs; the prediction is "" when the null odds are at least `null_score_diff_threshold` (None: always the
  best span). With no valid candidate the n best hold one "" answer of log-probs -1e6, as both originals.

`write_prediction_files` writes `predictions.json`, `nbest_predictions.json` and (v2.0) `null_odds.json` byte
for byte as the originals.
"""

import collections
import json
import math
import os
import unicodedata

_Candidate = collections.namedtuple("_Candidate", ["feature_index", "start_index", "end_index",
                                                   "start_logit", "end_logit"])
_Answer = collections.namedtuple("_Answer", ["text", "start_logit", "end_logit"])
LAYOUTS = ("xlnet", "albert")  # the beam's post-processing
LOG_PROB_KEYS = ("start_log_prob", "end_log_prob")  # albert's and xlnet's n best entries (run_squad's: *_logit)


# === BERT's basic tokenization (what `get_final_text` needs of `BasicTokenizer`) ===

def _is_whitespace(ch):
    return ch in " \t\n\r" or unicodedata.category(ch) == "Zs"


def _is_control(ch):
    return ch not in "\t\n\r" and unicodedata.category(ch) in ("Cc", "Cf")


def _is_punctuation(ch):
    """ASCII non-letters/digits and every Unicode "P*" character."""
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def _is_cjk(cp):
    """Whether the code point is in a CJK ideograph block (spaced out as one word each)."""
    return any(low <= cp <= high for low, high in (
        (0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
        (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F)))


def _split_punctuation(word):
    """`word` cut before and after every punctuation character (each one a piece of its own)."""
    pieces, current = [], ""
    for ch in word:
        if _is_punctuation(ch):
            pieces += [current, ch] if current else [ch]
            current = ""
        else:
            current += ch
    return pieces + [current] if current else pieces


def basic_tokenize(text, do_lower_case):
    """BERT's `BasicTokenizer(do_lower_case).tokenize`: cleaned, CJK-spaced, lower-cased and accents
    stripped (when `do_lower_case`), split on whitespace and punctuation."""
    cleaned = []
    for ch in text:
        cp = ord(ch)
        if cp == 0 or cp == 0xFFFD or _is_control(ch):
            continue
        cleaned.append(" " if _is_whitespace(ch) else f" {ch} " if _is_cjk(cp) else ch)
    pieces = []
    for word in "".join(cleaned).split():
        if do_lower_case:
            word = unicodedata.normalize("NFD", word.lower())
            word = "".join(ch for ch in word if unicodedata.category(ch) != "Mn")
        pieces.extend(_split_punctuation(word))
    return " ".join(pieces).split()


# === Spans and scores ===

def _without_spaces(text):
    """(`text` without " ", index there -> index in `text`)."""
    kept, positions = [], {}
    for i, ch in enumerate(text):
        if ch != " ":
            positions[len(kept)] = i
            kept.append(ch)
    return "".join(kept), positions


def get_final_text(pred_text, orig_text, do_lower_case):
    """The part of `orig_text` (original words) that the normalised `pred_text` covers.

    `orig_text` is basic-tokenized as the model's tokenizer did; if the two agree character for character
    once spaces are removed, the characters of `pred_text` are mapped back onto `orig_text` (so
    "steve smith" in "Steve Smith's" gives "Steve Smith"). Otherwise `orig_text` is returned whole.
    """
    tok_text = " ".join(basic_tokenize(orig_text, do_lower_case))
    start = tok_text.find(pred_text)
    if start == -1:
        return orig_text
    end = start + len(pred_text) - 1
    orig_chars, orig_positions = _without_spaces(orig_text)
    tok_chars, tok_positions = _without_spaces(tok_text)
    if len(orig_chars) != len(tok_chars):
        return orig_text
    tok_to_stripped = {position: i for i, position in tok_positions.items()}
    if start not in tok_to_stripped or tok_to_stripped[start] not in orig_positions:
        return orig_text
    if end not in tok_to_stripped or tok_to_stripped[end] not in orig_positions:
        return orig_text
    return orig_text[orig_positions[tok_to_stripped[start]]:orig_positions[tok_to_stripped[end]] + 1]


def _get_best_indexes(logits, n_best_size):
    """The indexes of the `n_best_size` largest logits, largest first (ties: lower index first)."""
    order = sorted(range(len(logits)), key=lambda i: logits[i], reverse=True)
    return order[:n_best_size]


def _compute_softmax(scores):
    """Softmax of a list of floats, as a list (empty for no scores)."""
    if not scores:
        return []
    top = max(scores)
    exps = [math.exp(score - top) for score in scores]
    total = 0.0
    for x in exps:
        total += x
    return [x / total for x in exps]


def wordpiece_text(tokens):
    """run_squad's text of WordPiece tokens: joined, the "##" continuations glued."""
    return " ".join(tokens).replace(" ##", "").replace("##", "")


def byte_level_text(tokens):
    """The text of byte-level BPE pieces (RoBERTa, GPT-2): each character mapped back to its byte (GPT-2's
    `bytes_to_unicode` table, inverted), as transformers' `convert_tokens_to_string`."""
    from keras_hub.src.tokenizers.byte_pair_tokenizer import bytes_to_unicode  # the table keras-hub encodes with

    byte_values, characters = bytes_to_unicode()
    decoder = dict(zip(characters, byte_values))
    return b"".join(decoder.get(c, c.encode("utf-8")) for c in "".join(tokens)).decode("utf-8", errors="replace")


def _span_text(example, feature, start, end, do_lower_case, tokens_to_text=wordpiece_text):
    """The original-text answer of the window tokens `start..end` of `feature`."""
    tok_text = tokens_to_text(feature.tokens[start:end + 1])
    tok_text = " ".join(tok_text.strip().split())
    words = example.doc_tokens[feature.token_to_orig_map[start]:feature.token_to_orig_map[end] + 1]
    return get_final_text(tok_text, " ".join(words), do_lower_case)


# === Candidates ===

def _logit_pairs(result, n_best_size):
    """(start, end, start score, end score) of the `n_best_size` best starts x ends, start-major."""
    for start in _get_best_indexes(result.start_logits, n_best_size):
        for end in _get_best_indexes(result.end_logits, n_best_size):
            yield start, end, result.start_logits[start], result.end_logits[end]


def _beam_pairs(result, start_n_top, end_n_top):
    """(start, end, start log-prob, end log-prob) of the beam, in its order (start-major)."""
    for i in range(start_n_top):
        for j in range(end_n_top):
            k = i * end_n_top + j
            yield (result.start_top_index[i], result.end_top_index[k], result.start_top_log_probs[i],
                   result.end_top_log_probs[k])


def _in_words(feature, start, end):
    """run_squad: both ends on context tokens of the window."""
    if start >= len(feature.tokens) or end >= len(feature.tokens):
        return False
    return start in feature.token_to_orig_map and end in feature.token_to_orig_map


def doc_offset(feature):
    """The window position of the first doc token (after `[CLS] question [SEP]`: the first segment-1 id)."""
    return list(feature.segment_ids).index(1)


def _in_doc(offset):
    """albert: both ends on the window's doc pieces (which start at `offset`)."""

    def valid(feature, start, end):
        return not (start - offset >= len(feature.tok_start_to_orig_index) or start - offset < 0
                    or end - offset >= len(feature.tok_end_to_orig_index))

    return valid


def _in_paragraph(feature, start, end):
    """xlnet: both ends before the paragraph's last piece (`>= paragraph_len - 1` is dropped, as the original)."""
    return not (start >= feature.paragraph_len - 1 or end >= feature.paragraph_len - 1)


def _candidates(feature_index, feature, pairs, valid, max_answer_length):
    """The valid (start, end) pairs of one window, in their order: on the window's context (`valid`), in the
    start's max-context window, not reversed, at most `max_answer_length` tokens."""
    for start, end, start_score, end_score in pairs:
        if not valid(feature, start, end):
            continue
        if not feature.token_is_max_context.get(start, False):
            continue
        if end < start or end - start + 1 > max_answer_length:
            continue
        yield _Candidate(feature_index, start, end, start_score, end_score)


def _doc_relative(candidates, offset, mean):
    """albert's candidates of one window at doc-relative positions, one per (start, end): its first (v1) or the
    mean of their scores (`mean`, v2), in the order of their first occurrence."""
    spans = collections.OrderedDict()
    for candidate in candidates:
        spans.setdefault((candidate.start_index - offset, candidate.end_index - offset), []).append(candidate)
    for (start, end), same in spans.items():
        if mean:
            yield _Candidate(same[0].feature_index, start, end, sum(c.start_logit for c in same) / len(same),
                             sum(c.end_logit for c in same) / len(same))
        else:
            yield _Candidate(same[0].feature_index, start, end, same[0].start_logit, same[0].end_logit)


def _best_answers(candidates, n_best_size, text_of):
    """The first candidate of each distinct text, best start + end score first, at most `n_best_size`: (answers,
    the texts seen). `text_of(candidate)` is None for the null answer (listed as "", even after a "")."""
    answers, seen = [], set()
    for candidate in sorted(candidates, key=lambda c: c.start_logit + c.end_logit, reverse=True):
        if len(answers) >= n_best_size:
            break
        text = text_of(candidate)
        if text is None:
            text = ""
        elif text in seen:
            continue
        seen.add(text)
        answers.append(_Answer(text, candidate.start_logit, candidate.end_logit))
    return answers, seen


def _nbest_json(answers, keys=("start_logit", "end_logit")):
    """The n best entries: {"text", "probability", start key, end key}, the probabilities a softmax of start +
    end."""
    probabilities = _compute_softmax([a.start_logit + a.end_logit for a in answers])
    return [{"text": a.text, "probability": p, keys[0]: a.start_logit, keys[1]: a.end_logit}
            for a, p in zip(answers, probabilities)]


def _by_example(examples, features, results):
    """(example, its windows, results by unique id) for each example, in order."""
    by_example = collections.defaultdict(list)
    for feature in features:
        by_example[feature.example_index].append(feature)
    by_id = {result.unique_id: result for result in results}
    for example_index, example in enumerate(examples):
        yield example, by_example[example_index], by_id


def _raw_text(example, windows):
    """albert's and xlnet's answer text: the raw context from the start piece's first character to the end
    piece's last, stripped."""

    def text_of(candidate):
        feature = windows[candidate.feature_index]
        begin = feature.tok_start_to_orig_index[candidate.start_index]
        end = feature.tok_end_to_orig_index[candidate.end_index]
        return example.paragraph_text[begin:end + 1].strip()

    return text_of


# === run_squad (bert) ===

def write_predictions(examples, features, results, n_best_size=20, max_answer_length=30, do_lower_case=True,
                      version_2_with_negative=False, null_score_diff_threshold=0.0, tokens_to_text=wordpiece_text):
    """(predictions, nbest, null_odds) of `examples` from the logits of their `features`' `results`, as bert
    `run_squad.py`'s `write_predictions` (see the module docstring).

    `tokens_to_text`: the text of a span's tokens before `get_final_text` (`wordpiece_text`, run_squad's;
    `byte_level_text` for RoBERTa's byte-level BPE, as transformers' SQuAD post-processing decodes them).

    In v2.0, an example whose n best hold no valid non-null span (where the original fails) gets transformers'
    placeholder answer "empty" (logits 0) first in its n best: its null odds are the null score.
    """
    predictions, nbest_json, null_odds = {}, {}, {}
    for example, windows, by_id in _by_example(examples, features, results):
        candidates, null = [], (1000000, 0, 0, 0)  # (null score, its window, its start and end logits)
        for feature_index, feature in enumerate(windows):
            result = by_id[feature.unique_id]
            null_score = result.start_logits[0] + result.end_logits[0]
            if null_score < null[0]:
                null = (null_score, feature_index, result.start_logits[0], result.end_logits[0])
            candidates += _candidates(feature_index, feature, _logit_pairs(result, n_best_size), _in_words,
                                      max_answer_length)
        if version_2_with_negative:
            candidates.append(_Candidate(null[1], 0, 0, null[2], null[3]))

        def text_of(candidate):
            if candidate.start_index <= 0:
                return None  # the null answer
            return _span_text(example, windows[candidate.feature_index], candidate.start_index,
                              candidate.end_index, do_lower_case, tokens_to_text)

        answers, seen = _best_answers(candidates, n_best_size, text_of)
        if version_2_with_negative and "" not in seen:
            answers.append(_Answer("", null[2], null[3]))
        answers = answers or [_Answer("empty", 0.0, 0.0)]  # no valid span at all (v1.1)
        if version_2_with_negative and not any(a.text for a in answers):
            # No valid non-null span in the n best (the original fails here): transformers' placeholder.
            answers.insert(0, _Answer("empty", 0.0, 0.0))
        nbest_json[example.qas_id] = _nbest_json(answers)
        if not version_2_with_negative:
            predictions[example.qas_id] = answers[0].text
            continue
        best = next(a for a in answers if a.text)
        null_odds[example.qas_id] = null[0] - best.start_logit - best.end_logit
        predictions[example.qas_id] = "" if null_odds[example.qas_id] > null_score_diff_threshold else best.text
    return predictions, nbest_json, null_odds


# === albert squad_utils v1 ===

def write_predictions_sentencepiece(examples, features, results, n_best_size=20, max_answer_length=30):
    """(predictions, nbest) of `examples` (`squad.SquadExample`, with `paragraph_text`) from the logits of their
    evaluation `features` (`squad.SquadFeature`, with `example_index`), as albert's
    `accumulate_predictions_v1` + `write_predictions_v1` (see the module docstring)."""
    predictions, nbest_json = {}, {}
    for example, windows, by_id in _by_example(examples, features, results):
        candidates = []
        for feature_index, feature in enumerate(windows):
            offset = doc_offset(feature)
            pairs = _logit_pairs(by_id[feature.unique_id], n_best_size)
            candidates += _doc_relative(_candidates(feature_index, feature, pairs, _in_doc(offset),
                                                    max_answer_length), offset, mean=False)
        answers, _ = _best_answers(candidates, n_best_size, _raw_text(example, windows))
        answers = answers or [_Answer("empty", 0.0, 0.0)]  # no valid span at all (the original's nonce prediction)
        nbest_json[example.qas_id] = _nbest_json(answers, LOG_PROB_KEYS)
        predictions[example.qas_id] = answers[0].text
    return predictions, nbest_json


# === the answer-class beam (xlnet, albert v2) ===

def write_predictions_beam(examples, features, results, n_best_size=20, max_answer_length=30, start_n_top=5,
                           end_n_top=5, layout="xlnet", null_score_diff_threshold=None):
    """(predictions, nbest, null_odds) of `examples` (`squad.SquadExample`, with `paragraph_text`) from the beam
    `results` of their evaluation `features` (`squad.SquadFeature`: `features_xlnet`'s for `xlnet`,
    `features_sentencepiece`'s for `albert`); see the module docstring."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}; got {layout!r}")
    predictions, nbest_json, null_odds = {}, {}, {}
    for example, windows, by_id in _by_example(examples, features, results):
        candidates, null = [], 1000000
        for feature_index, feature in enumerate(windows):
            result = by_id[feature.unique_id]
            null = min(null, result.cls_logits)
            pairs = _beam_pairs(result, start_n_top, end_n_top)
            if layout == "xlnet":
                candidates += _candidates(feature_index, feature, pairs, _in_paragraph, max_answer_length)
            else:
                offset = doc_offset(feature)
                candidates += _doc_relative(_candidates(feature_index, feature, pairs, _in_doc(offset),
                                                        max_answer_length), offset, mean=True)
        answers, _ = _best_answers(candidates, n_best_size, _raw_text(example, windows))
        answers = answers or [_Answer("", -1e6, -1e6)]
        nbest_json[example.qas_id] = _nbest_json(answers, LOG_PROB_KEYS)
        null_odds[example.qas_id] = null if layout == "xlnet" else float(null)  # albert: a mean of one
        answer = answers[0].text
        if layout == "albert" and null_score_diff_threshold is not None and not null < null_score_diff_threshold:
            answer = ""
        predictions[example.qas_id] = answer
    return predictions, nbest_json, null_odds


# === Files ===

def write_prediction_files(folder, predictions, nbest, null_odds=None):
    """Write `predictions.json`, `nbest_predictions.json` and, when `null_odds` is not empty, `null_odds.json`
    into `folder` (as the original: 4-space indented JSON and a newline). Returns the paths written."""
    os.makedirs(folder, exist_ok=True)
    contents = {"predictions.json": predictions, "nbest_predictions.json": nbest}
    if null_odds:
        contents["null_odds.json"] = null_odds
    paths = []
    for name, content in contents.items():
        path = os.path.join(folder, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(json.dumps(content, indent=4) + "\n")
        paths.append(path)
    return paths
