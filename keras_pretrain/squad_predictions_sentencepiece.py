"""ALBERT's SQuAD v1.1 answers from start/end logits: albert-tensorflow `squad_utils`'
`accumulate_predictions_v1` + `write_predictions_v1`, on the features of `keras_pretrain.data.squad_sentencepiece`.

Unlike bert's `run_squad.py` (`keras_pretrain.squad_predictions`), the answer text is read off the raw context
by character: a window's doc token `i` covers `paragraph_text[tok_start_to_orig_index[i]:
tok_end_to_orig_index[i] + 1]`, and a span's text is that slice from its first to its last token, stripped (no
`get_final_text`). For each window the `n_best_size` best start and end positions make the candidates; spans
outside the doc, not in their window's max context, reversed or longer than `max_answer_length` are dropped;
the candidates of all windows are ranked by start + end logit (the original's `start_log_prob` /
`end_log_prob` hold the v1 model's logits), the first of each distinct text kept.

`write_predictions(examples, features, results, ...)` returns `(predictions, nbest)`; the n best entries are
{"text", "probability", "start_log_prob", "end_log_prob"}, as the original writes them. The files are written
byte for byte as the original by `keras_pretrain.squad_predictions.write_prediction_files`.
"""

import collections

from keras_pretrain.squad_predictions import _compute_softmax
from keras_pretrain.squad_predictions import _get_best_indexes

_Candidate = collections.namedtuple("_Candidate", ["feature_index", "start_index", "end_index", "start_logit",
                                                   "end_logit"])


def doc_offset(feature):
    """The window position of the first doc token (after `[CLS] question [SEP]`: the first segment-1 id)."""
    return list(feature.segment_ids).index(1)


def _candidates(features, results, n_best_size, max_answer_length):
    """`accumulate_predictions_v1`: the valid (window, start, end) of one example, doc-relative positions."""
    candidates = []
    for feature_index, feature in enumerate(features):
        result = results[feature.unique_id]
        offset = doc_offset(feature)
        seen = set()
        for start in _get_best_indexes(result.start_logits, n_best_size):
            for end in _get_best_indexes(result.end_logits, n_best_size):
                if start - offset >= len(feature.tok_start_to_orig_index):
                    continue
                if end - offset >= len(feature.tok_end_to_orig_index):
                    continue
                if not feature.token_is_max_context.get(start, False):
                    continue
                if end < start or end - start + 1 > max_answer_length:
                    continue
                key = (start - offset, end - offset)
                if key not in seen:
                    seen.add(key)
                    candidates.append(_Candidate(feature_index, key[0], key[1], result.start_logits[start],
                                                 result.end_logits[end]))
    return candidates


def write_predictions(examples, features, results, n_best_size=20, max_answer_length=30):
    """(predictions, nbest) of `examples` (`squad_sentencepiece.SquadExample`) from the logits of their
    evaluation `features` (`squad_sentencepiece.SquadFeature`, with `example_index`); `results` have
    `unique_id`, `start_logits`, `end_logits` (lists of floats, one per window position)."""
    by_example = collections.defaultdict(list)
    for feature in features:
        by_example[feature.example_index].append(feature)
    by_id = {result.unique_id: result for result in results}
    predictions, nbest_json = {}, {}
    for example_index, example in enumerate(examples):
        windows = by_example[example_index]
        candidates = sorted(_candidates(windows, by_id, n_best_size, max_answer_length),
                            key=lambda c: c.start_logit + c.end_logit, reverse=True)
        answers, seen = [], set()
        for candidate in candidates:
            if len(answers) >= n_best_size:
                break
            text = ""
            if candidate.start_index >= 0:
                feature = windows[candidate.feature_index]
                begin = feature.tok_start_to_orig_index[candidate.start_index]
                end = feature.tok_end_to_orig_index[candidate.end_index]
                text = example.paragraph_text[begin:end + 1].strip()
                if text in seen:
                    continue
            seen.add(text)
            answers.append((text, candidate.start_logit, candidate.end_logit))
        answers = answers or [("empty", 0.0, 0.0)]  # no valid span at all (the original's nonce prediction)
        probabilities = _compute_softmax([s + e for _, s, e in answers])
        nbest_json[example.qas_id] = [{"text": t, "probability": p, "start_log_prob": s, "end_log_prob": e}
                                      for (t, s, e), p in zip(answers, probabilities)]
        predictions[example.qas_id] = answers[0][0]
    return predictions, nbest_json
