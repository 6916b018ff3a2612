"""SQuAD v2.0 answers from the answer-class ("beam") head's outputs, as its authors post-process them:
xlnet-tensorflow `run_squad.write_predictions` (`layout="xlnet"`) and albert-tensorflow `squad_utils`'
`accumulate_predictions_v2` + `write_predictions_v2` (`layout="albert"`).

A result holds, per window, the head's beam: `start_top_log_probs` / `start_top_index` (`start_n_top`),
`end_top_log_probs` / `end_top_index` (`start_n_top * end_n_top`, the ends of start `i` at `i * end_n_top +
j`) and `cls_logits` (the answer-class score: higher = no answer). Each (start, end) pair of the beam is a
candidate; dropped when outside the paragraph, not in the window's max context, reversed or longer than
`max_answer_length`; the candidates of all windows are ranked by start + end log-prob, the first of each
distinct text kept (text: the raw context from the start token's first character to the end token's last,
stripped). The null odds of a question are the smallest `cls_logits` over its windows.

- `xlnet`: the paragraph is first in the window (doc offset 0) and, as the original, a start or end at or
  after `paragraph_len - 1` (the paragraph's last token included) is dropped; the prediction is always the
  best span (the evaluation picks the null threshold: `squad_eval`'s `best_*`).
- `albert`: the doc starts after the first `[SEP]`; a candidate with the same (start, end) in one window is
  scored by the mean of its log-probs; the prediction is "" when the null odds are at least
  `null_score_diff_threshold` (None: always the best span).

With no valid candidate the n best hold one "" answer of log-probs -1e6, as both originals.
`write_predictions` returns `(predictions, nbest, null_odds)`; `squad_predictions.write_prediction_files`
writes the files byte for byte as the originals.
"""

import collections

from keras_pretrain.squad_predictions import _compute_softmax

LAYOUTS = ("xlnet", "albert")


def _doc_offset(feature, layout):
    return 0 if layout == "xlnet" else list(feature.segment_ids).index(1)


def _valid(feature, start, end, offset, layout, max_answer_length):
    if layout == "xlnet":
        if start >= feature.paragraph_len - 1 or end >= feature.paragraph_len - 1:
            return False
    elif (start - offset >= len(feature.tok_start_to_orig_index) or start - offset < 0
          or end - offset >= len(feature.tok_end_to_orig_index)):
        return False
    if not feature.token_is_max_context.get(start, False):
        return False
    return start <= end and end - start + 1 <= max_answer_length


def _candidates(features, results, start_n_top, end_n_top, max_answer_length, layout):
    """(candidates (feature index, start, end, start log-prob, end log-prob) in the originals' order, null)."""
    candidates, null = [], 1000000
    for feature_index, feature in enumerate(features):
        result = results[feature.unique_id]
        null = min(null, result.cls_logits)
        offset = _doc_offset(feature, layout)
        spans = collections.OrderedDict()  # albert: one entry per (start, end), the mean of its log-probs
        for i in range(start_n_top):
            for j in range(end_n_top):
                start, end = result.start_top_index[i], result.end_top_index[i * end_n_top + j]
                if not _valid(feature, start, end, offset, layout, max_answer_length):
                    continue
                scores = (result.start_top_log_probs[i], result.end_top_log_probs[i * end_n_top + j])
                if layout == "xlnet":
                    candidates.append((feature_index, start, end) + scores)
                else:
                    spans.setdefault((start - offset, end - offset), []).append(scores)
        for (start, end), scores in spans.items():
            candidates.append((feature_index, start, end, sum(s for s, _ in scores) / len(scores),
                               sum(e for _, e in scores) / len(scores)))
    return candidates, null


def write_predictions(examples, features, results, n_best_size=20, max_answer_length=30, start_n_top=5,
                      end_n_top=5, layout="xlnet", null_score_diff_threshold=None):
    """(predictions, nbest, null_odds) of `examples` (`squad_sentencepiece.SquadExample`) from the beam
    `results` of their evaluation `features` (`squad_xlnet.XLNetSquadFeature` for `xlnet`,
    `squad_sentencepiece.SquadFeature` for `albert`); see the module docstring."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}; got {layout!r}")
    by_example = collections.defaultdict(list)
    for feature in features:
        by_example[feature.example_index].append(feature)
    by_id = {result.unique_id: result for result in results}
    predictions, nbest_json, null_odds = {}, {}, {}
    for example_index, example in enumerate(examples):
        windows = by_example[example_index]
        candidates, null = _candidates(windows, by_id, start_n_top, end_n_top, max_answer_length, layout)
        answers, seen = [], set()
        for feature_index, start, end, start_log_prob, end_log_prob in sorted(
                candidates, key=lambda c: c[3] + c[4], reverse=True):
            if len(answers) >= n_best_size:
                break
            feature = windows[feature_index]
            begin, finish = feature.tok_start_to_orig_index[start], feature.tok_end_to_orig_index[end]
            text = example.paragraph_text[begin:finish + 1].strip()
            if text in seen:
                continue
            seen.add(text)
            answers.append((text, start_log_prob, end_log_prob))
        answers = answers or [("", -1e6, -1e6)]
        probabilities = _compute_softmax([s + e for _, s, e in answers])
        nbest_json[example.qas_id] = [{"text": t, "probability": p, "start_log_prob": s, "end_log_prob": e}
                                      for (t, s, e), p in zip(answers, probabilities)]
        null_odds[example.qas_id] = null if layout == "xlnet" else float(null)  # albert: a mean of one
        answer = answers[0][0]
        if layout == "albert" and null_score_diff_threshold is not None and not null < null_score_diff_threshold:
            answer = ""
        predictions[example.qas_id] = answer
    return predictions, nbest_json, null_odds
