"""The official SQuAD evaluations, v1.1 (`evaluate-v1.1.py`) and v2.0 (`evaluate-v2.0.py`), as functions.

An answer is normalised (lower case, punctuation removed, the articles a/an/the removed, runs of
whitespace collapsed) before it is compared; a question scores the best over its gold answers.

- v1.1 (`evaluate_v1`): {"exact_match", "f1"}, in percent over every question of the dataset. A question
  without a prediction scores 0 and is reported on stderr ("Unanswered question ... will receive score 0."),
  as the official script does; predictions for unknown ids are ignored.
- v2.0 (`evaluate_v2`): {"exact", "f1", "total"} and the same for the answerable ("HasAns_...") and the
  unanswerable ("NoAns_...") questions; the gold answer of an unanswerable question is the empty string.
  Questions without a prediction are skipped ("Missing prediction for ..." on stderr) and left out of
  every count. With `na_probs` (question id -> probability of no answer, e.g. `null_odds.json`): a
  prediction whose probability is above `na_prob_thresh` (1.0, the script's default) counts as "no answer",
  and "best_exact", "best_exact_thresh", "best_f1", "best_f1_thresh" are the best scores over all
  thresholds and where they are reached (ties resolved in the order of `na_probs`, as the script does).

The messages go to `log` (default: `sys.stderr`).
`read_dataset`, `read_predictions` and `read_na_probs` read the JSON files and raise
`keras_pretrain.errors.CorpusFormatError` naming the file when it is missing or malformed.
"""

import collections
import json
import re
import string
import sys

from keras_pretrain.errors import CorpusFormatError

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)


# === Answers ===

def normalize_answer(text):
    """`text` lower-cased, without ASCII punctuation nor the words a/an/the, whitespace collapsed."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def answer_tokens(text):
    """The words of the normalised `text` (none for an empty text)."""
    return normalize_answer(text).split() if text else []


def _overlap_f1(prediction_tokens, gold_tokens):
    """Token-overlap F1 (a fraction) of two token lists; 0 when they share no token."""
    common = sum((collections.Counter(prediction_tokens) & collections.Counter(gold_tokens)).values())
    if common == 0:
        return 0
    precision = 1.0 * common / len(prediction_tokens)
    recall = 1.0 * common / len(gold_tokens)
    return (2 * precision * recall) / (precision + recall)


def exact_match_score(prediction, ground_truth):
    """v1.1: whether the two normalised answers are equal."""
    return normalize_answer(prediction) == normalize_answer(ground_truth)


def f1_score(prediction, ground_truth):
    """v1.1: token-overlap F1 of the two normalised answers (0 when they share no word)."""
    prediction_tokens = normalize_answer(prediction).split()
    gold_tokens = normalize_answer(ground_truth).split()
    return _overlap_f1(prediction_tokens, gold_tokens)


def compute_exact(gold, prediction):
    """v2.0: 1 if the two normalised answers are equal, else 0."""
    return int(normalize_answer(gold) == normalize_answer(prediction))


def compute_f1(gold, prediction):
    """v2.0: token-overlap F1; when either answer is empty ("no answer"), 1 if both are, else 0."""
    gold_tokens, prediction_tokens = answer_tokens(gold), answer_tokens(prediction)
    if not gold_tokens or not prediction_tokens:
        return int(gold_tokens == prediction_tokens)
    return _overlap_f1(prediction_tokens, gold_tokens)


# === The dataset ===

def questions(dataset):
    """The question dicts ("id", "answers", ...) of `dataset` (the list under "data"), in file order."""
    for article in dataset:
        for paragraph in article["paragraphs"]:
            yield from paragraph["qas"]


def is_v2(dataset):
    """Whether `dataset` is a SQuAD v2.0 file: some question has "is_impossible" set."""
    return any(qa.get("is_impossible", False) for qa in questions(dataset))


# === v1.1 ===

def evaluate_v1(dataset, predictions, log=None):
    """The v1.1 {"exact_match", "f1"} (percent) of `predictions` (id -> text) on `dataset` ("data" list)."""
    exact_match = f1 = total = 0
    for qa in questions(dataset):
        total += 1
        if qa["id"] not in predictions:
            print(f"Unanswered question {qa['id']}  will receive score 0.", file=log or sys.stderr)
            continue
        prediction, golds = predictions[qa["id"]], [answer["text"] for answer in qa["answers"]]
        exact_match += max(exact_match_score(prediction, gold) for gold in golds)
        f1 += max(f1_score(prediction, gold) for gold in golds)
    return {"exact_match": 100.0 * exact_match / total, "f1": 100.0 * f1 / total}


# === v2.0 ===

def has_answer(dataset):
    """Question id -> whether it has gold answers, in file order."""
    return {qa["id"]: bool(qa["answers"]) for qa in questions(dataset)}


def raw_scores(dataset, predictions, log=None):
    """(id -> exact, id -> f1) of each predicted question, best over its gold answers ("" if none)."""
    exact, f1 = {}, {}
    for qa in questions(dataset):
        golds = [answer["text"] for answer in qa["answers"] if normalize_answer(answer["text"])] or [""]
        if qa["id"] not in predictions:
            print(f"Missing prediction for {qa['id']}", file=log or sys.stderr)
            continue
        prediction = predictions[qa["id"]]
        exact[qa["id"]] = max(compute_exact(gold, prediction) for gold in golds)
        f1[qa["id"]] = max(compute_f1(gold, prediction) for gold in golds)
    return exact, f1


def apply_no_answer_threshold(scores, na_probs, qid_to_has_ans, threshold):
    """`scores` where a no-answer probability above `threshold` means "no answer" (1 iff unanswerable)."""
    return {qid: float(not qid_to_has_ans[qid]) if na_probs[qid] > threshold else score
            for qid, score in scores.items()}


def summary(exact, f1, qids=None):
    """{"exact", "f1", "total"} in percent over `qids` (default: every scored question)."""
    qids = list(exact) if not qids else qids
    return {"exact": 100.0 * sum(exact[q] for q in qids) / len(qids),
            "f1": 100.0 * sum(f1[q] for q in qids) / len(qids), "total": len(qids)}


def best_threshold(predictions, scores, na_probs, qid_to_has_ans):
    """(best score in percent, the no-answer probability where it is reached) over all thresholds.

    Starting from "every question is answered with no answer", questions are switched to their prediction
    in increasing order of their no-answer probability (stable: `na_probs` order for ties).
    """
    score = best = sum(1 for has in qid_to_has_ans.values() if not has)
    best_at = 0.0
    for qid in sorted(na_probs, key=lambda k: na_probs[k]):
        if qid not in scores:
            continue
        if qid_to_has_ans[qid]:
            score += scores[qid]
        else:
            score += -1 if predictions[qid] else 0
        if score > best:
            best, best_at = score, na_probs[qid]
    return 100.0 * best / len(scores), best_at


def evaluate_v2(dataset, predictions, na_probs=None, na_prob_thresh=1.0, log=None):
    """The v2.0 metrics dict of `predictions` (id -> text, "" for no answer) on `dataset` ("data" list).

    `na_probs` (id -> probability of no answer) adds the best_* entries; without it every probability is 0.
    Raises ValueError when `na_probs` lacks a predicted question.
    """
    qid_to_has_ans = has_answer(dataset)
    exact_raw, f1_raw = raw_scores(dataset, predictions, log=log)
    if not exact_raw:
        raise ValueError("no question of the dataset has a prediction")
    probs = na_probs if na_probs is not None else {qid: 0.0 for qid in predictions}
    missing = [qid for qid in exact_raw if qid not in probs]
    if missing:
        raise ValueError(f"no no-answer probability for question {missing[0]!r} "
                         f"({len(missing)} predicted questions without one)")
    exact = apply_no_answer_threshold(exact_raw, probs, qid_to_has_ans, na_prob_thresh)
    f1 = apply_no_answer_threshold(f1_raw, probs, qid_to_has_ans, na_prob_thresh)
    result = summary(exact, f1)
    for prefix, wanted in (("HasAns", True), ("NoAns", False)):
        # The official script counts every such question and fails on one without a prediction; those
        # are skipped here, as in the overall numbers.
        qids = [qid for qid, has in qid_to_has_ans.items() if has == wanted and qid in exact]
        if qids:
            result.update({f"{prefix}_{key}": value for key, value in summary(exact, f1, qids).items()})
    if na_probs is not None:
        result["best_exact"], result["best_exact_thresh"] = best_threshold(predictions, exact_raw, probs,
                                                                           qid_to_has_ans)
        result["best_f1"], result["best_f1_thresh"] = best_threshold(predictions, f1_raw, probs, qid_to_has_ans)
    return result


def evaluate(dataset, predictions, na_probs=None, log=None):
    """`evaluate_v2` for a v2.0 dataset (some "is_impossible"), else `evaluate_v1` (`na_probs` unused)."""
    if is_v2(dataset):
        return evaluate_v2(dataset, predictions, na_probs, log=log)
    return evaluate_v1(dataset, predictions, log=log)


# === Files ===

def _load_json(path, what):
    """The parsed JSON of `path`; CorpusFormatError naming the file (as `what`) when missing or invalid."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise CorpusFormatError(f"{path}: no such file ({what})") from None
    except (OSError, UnicodeDecodeError) as e:
        raise CorpusFormatError(f"{path}: cannot read the {what}: {e}") from None
    except json.JSONDecodeError as e:
        raise CorpusFormatError(f"{path}, line {e.lineno}: not valid JSON ({e.msg})") from None


def read_dataset(path):
    """The "data" list of a SQuAD dataset file, checked for the fields the evaluation reads."""
    content = _load_json(path, "SQuAD dataset")
    if not isinstance(content, dict) or not isinstance(content.get("data"), list):
        raise CorpusFormatError(f'{path}: expected a SQuAD dataset, an object with a "data" list of articles')
    for a, article in enumerate(content["data"]):
        paragraphs = article.get("paragraphs") if isinstance(article, dict) else None
        if not isinstance(paragraphs, list):
            raise CorpusFormatError(f'{path}: article {a} has no "paragraphs" list')
        for p, paragraph in enumerate(paragraphs):
            qas = paragraph.get("qas") if isinstance(paragraph, dict) else None
            if not isinstance(qas, list):
                raise CorpusFormatError(f'{path}: paragraph {p} of article {a} has no "qas" list')
            for qa in qas:
                _check_question(path, qa, f"paragraph {p} of article {a}")
    return content["data"]


def _check_question(path, qa, where):
    """CorpusFormatError unless `qa` has a string "id" and a list of "answers" with a string "text"."""
    if not isinstance(qa, dict) or not isinstance(qa.get("id"), str):
        raise CorpusFormatError(f'{path}: a question of {where} has no string "id"')
    answers = qa.get("answers")
    if not isinstance(answers, list) or not all(
            isinstance(answer, dict) and isinstance(answer.get("text"), str) for answer in answers):
        raise CorpusFormatError(f'{path}: question {qa["id"]!r} has no "answers" list of {{"text": ...}}')


def read_predictions(path):
    """Question id -> predicted answer text, from a `predictions.json` (one JSON object of strings)."""
    content = _load_json(path, "predictions")
    if not isinstance(content, dict):
        raise CorpusFormatError(f"{path}: expected a JSON object of question id -> answer text")
    for qid, text in content.items():
        if not isinstance(text, str):
            raise CorpusFormatError(f"{path}: the prediction for question {qid!r} is not a string: {text!r}")
    return content


def read_na_probs(path):
    """Question id -> no-answer probability (or score), from a `null_odds.json` (one JSON object)."""
    content = _load_json(path, "no-answer probabilities")
    if not isinstance(content, dict):
        raise CorpusFormatError(f"{path}: expected a JSON object of question id -> no-answer probability")
    for qid, value in content.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise CorpusFormatError(f"{path}: the value for question {qid!r} is not a number: {value!r}")
    return content
