"""SQuAD answers from start/end logits, as bert's `run_squad.py` `write_predictions` computes them.

`write_predictions(examples, features, results, ...)` returns `(predictions, nbest, null_odds)`:

- `predictions`: question id -> answer text ("" for "no answer" in v2.0);
- `nbest`: question id -> the n best answers, each {"text", "probability", "start_logit", "end_logit"},
  the probabilities a softmax over start + end logits of the listed answers;
- `null_odds`: question id -> null score minus the best non-null score (v2.0; empty for v1.1). The answer
  is "" when this is above `null_score_diff_threshold`.

The inputs are duck-typed, as the original's objects:

- an example has `qas_id` and `doc_tokens` (the whitespace-split words of the context);
- a feature has `unique_id`, `example_index` (the index of its example in `examples`), `tokens` (the
  WordPiece tokens of the window, "[CLS]" first), `token_to_orig_map` (window token index -> word index in
  `doc_tokens`, context tokens only) and `token_is_max_context` (window token index -> bool);
- a result has `unique_id`, `start_logits`, `end_logits` (lists of floats, one per window token).

For every window, the `n_best_size` best start and end logits make the candidate spans; spans outside
the context, not in their window's best context, reversed or longer than `max_answer_length` tokens are
dropped. In v2.0 the null answer is the window whose [CLS] start + end logits are the smallest. A span's
text is its WordPiece text mapped back onto the original words by `get_final_text` (the original words
when the mapping fails). `write_prediction_files` writes `predictions.json`, `nbest_predictions.json`
and (v2.0) `null_odds.json` byte for byte as the original.
"""

import collections
import json
import math
import os
import unicodedata

_Candidate = collections.namedtuple("_Candidate", ["feature_index", "start_index", "end_index",
                                                   "start_logit", "end_logit"])
_Answer = collections.namedtuple("_Answer", ["text", "start_logit", "end_logit"])


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


def _candidates(features, results, n_best_size, max_answer_length):
    """The valid spans of every window of one example, and the window with the smallest null score.

    Returns (candidates, (null score, null feature index, null start logit, null end logit)).
    """
    spans, null = [], (1000000, 0, 0, 0)
    for feature_index, feature in enumerate(features):
        result = results[feature.unique_id]
        null_score = result.start_logits[0] + result.end_logits[0]
        if null_score < null[0]:
            null = (null_score, feature_index, result.start_logits[0], result.end_logits[0])
        for start in _get_best_indexes(result.start_logits, n_best_size):
            for end in _get_best_indexes(result.end_logits, n_best_size):
                if start >= len(feature.tokens) or end >= len(feature.tokens):
                    continue
                if start not in feature.token_to_orig_map or end not in feature.token_to_orig_map:
                    continue
                if not feature.token_is_max_context.get(start, False):
                    continue
                if end < start or end - start + 1 > max_answer_length:
                    continue
                spans.append(_Candidate(feature_index, start, end, result.start_logits[start],
                                        result.end_logits[end]))
    return spans, null


def _nbest(example, features, candidates, n_best_size, do_lower_case, null, version_2_with_negative,
           tokens_to_text=wordpiece_text):
    """The n best distinct answers (text, start logit, end logit) of one example, best first."""
    answers, seen = [], set()
    for candidate in sorted(candidates, key=lambda c: c.start_logit + c.end_logit, reverse=True):
        if len(answers) >= n_best_size:
            break
        if candidate.start_index > 0:
            text = _span_text(example, features[candidate.feature_index], candidate.start_index,
                              candidate.end_index, do_lower_case, tokens_to_text)
            if text in seen:
                continue
        else:  # the null answer
            text = ""
        seen.add(text)
        answers.append(_Answer(text, candidate.start_logit, candidate.end_logit))
    if version_2_with_negative and "" not in seen:
        answers.append(_Answer("", null[2], null[3]))
    return answers or [_Answer("empty", 0.0, 0.0)]  # no valid span at all (v1.1)


def write_predictions(examples, features, results, n_best_size=20, max_answer_length=30, do_lower_case=True,
                      version_2_with_negative=False, null_score_diff_threshold=0.0, tokens_to_text=wordpiece_text):
    """(predictions, nbest, null_odds) of `examples` from the logits of their `features`' `results`.

    `tokens_to_text`: the text of a span's tokens before `get_final_text` (`wordpiece_text`, run_squad's;
    `byte_level_text` for RoBERTa's byte-level BPE, as transformers' SQuAD post-processing decodes them).

    In v2.0, an example whose n best hold no valid non-null span (where the original fails) gets transformers'
    placeholder answer "empty" (logits 0) first in its n best: its null odds are the null score.
    """
    by_example = collections.defaultdict(list)
    for feature in features:
        by_example[feature.example_index].append(feature)
    by_id = {result.unique_id: result for result in results}
    predictions, nbest_json, null_odds = {}, {}, {}
    for example_index, example in enumerate(examples):
        windows = by_example[example_index]
        candidates, null = _candidates(windows, by_id, n_best_size, max_answer_length)
        if version_2_with_negative:
            candidates.append(_Candidate(null[1], 0, 0, null[2], null[3]))
        answers = _nbest(example, windows, candidates, n_best_size, do_lower_case, null,
                         version_2_with_negative, tokens_to_text)
        if version_2_with_negative and not any(a.text for a in answers):
            # No valid non-null span in the n best (the original fails here): transformers' placeholder.
            answers.insert(0, _Answer("empty", 0.0, 0.0))
        probabilities = _compute_softmax([a.start_logit + a.end_logit for a in answers])
        nbest_json[example.qas_id] = [
            {"text": a.text, "probability": p, "start_logit": a.start_logit, "end_logit": a.end_logit}
            for a, p in zip(answers, probabilities)]
        if not version_2_with_negative:
            predictions[example.qas_id] = answers[0].text
            continue
        best = next(a for a in answers if a.text)
        null_odds[example.qas_id] = null[0] - best.start_logit - best.end_logit
        predictions[example.qas_id] = "" if null_odds[example.qas_id] > null_score_diff_threshold else best.text
    return predictions, nbest_json, null_odds


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
