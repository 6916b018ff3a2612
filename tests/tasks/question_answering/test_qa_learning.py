"""Learning is real for extractive QA (issue 41, item 7): a tiny randomly initialised BERT learns, through
`SpanQuestionAnswering` and the whole SQuAD pipeline (SQuAD JSON files -> `read_squad` ->
`convert_examples_to_features` with our `BertTokenizer` -> `to_arrays` -> `fit` -> start/end logits ->
`write_predictions` -> `evaluate_v1` / `evaluate_v2`), a synthetic task whose answer can only be found through
the right positions: the answer is the word right after the one "mat" of a context of random words, the marker
moving from example to example, some contexts longer than one window (`max_seq_length` 32, `doc_stride` 8).
The v2.0 case adds unanswerable questions (no "mat" in the context: the gold answer is empty)."""

import dataclasses
import json
import types

import keras
import numpy as np
import pytest

from keras_pretrain.tasks.question_answering.evaluation import evaluate_v1
from keras_pretrain.tasks.question_answering.evaluation import evaluate_v2
from keras_pretrain.tasks.question_answering.features_wordpiece import convert_examples_to_features
from keras_pretrain.tasks.question_answering.features_wordpiece import to_arrays
from keras_pretrain.tasks.question_answering.features_wordpiece import word_tokenizer
from keras_pretrain.tasks.question_answering.predictions import write_predictions
from keras_pretrain.tasks.question_answering.squad import read_squad
from keras_pretrain.tasks import SpanQuestionAnswering

MARKER = "mat"
# Words that are single WordPiece tokens of the vocabulary (no article: SQuAD's normalisation drops them).
WORDS = ["cat", "dog", "sun", "moon", "tree", "rock", "fish", "bird", "lamp", "door", "road", "milk", "rain",
         "snow", "wind", "fire", "leaf", "rose", "king", "ship", "bell", "coin", "drum", "kite"]
VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "what", "follows", MARKER] + WORDS
QUESTION = "what follows mat"
MAX_SEQ_LENGTH, DOC_STRIDE, MAX_QUERY_LENGTH = 32, 8, 8


def tokenizer():
    from keras_pretrain.models.bert import BertTokenizer

    return BertTokenizer(vocabulary=VOCABULARY, lowercase=True)


def backbone(hidden=64):
    from keras_pretrain.models.bert import BertBackbone

    return BertBackbone(vocabulary_size=len(VOCABULARY), max_sequence_length=MAX_SEQ_LENGTH, num_layers=2,
                        num_heads=4, hidden_dim=hidden, intermediate_dim=2 * hidden, dropout=0.0)


def squad_file(path, rng, count, impossible_share, version):
    """A SQuAD JSON file of `count` one-question paragraphs (4 to 40 words: up to 3 windows of 26 doc tokens);
    `impossible_share` of them without the marker (v2.0: `is_impossible`, no answer). Returns its dict."""
    paragraphs = []
    for i in range(count):
        words = list(rng.choice(WORDS, int(rng.integers(4, 41))))
        qa = {"id": f"q{i}", "question": QUESTION}
        if rng.random() < impossible_share:
            qa.update(answers=[], is_impossible=True)
        else:
            at = int(rng.integers(0, len(words) - 1))
            words[at] = MARKER
            context = " ".join(words)
            start = len(" ".join(words[:at + 1])) + 1
            qa["answers"] = [{"text": words[at + 1], "answer_start": start}]
            assert context[start:start + len(words[at + 1])] == words[at + 1]
            if version == "v2.0":
                qa["is_impossible"] = False
        paragraphs.append({"context": " ".join(words), "qas": [qa]})
    data = {"version": version, "data": [{"title": "synthetic", "paragraphs": paragraphs}]}
    path.write_text(json.dumps(data), encoding="utf-8")
    return data


def features(text, path, version, is_training):
    examples = read_squad(str(path), version, is_training=is_training)
    special = {"cls": text.cls_token_id, "sep": text.sep_token_id, "pad": text.pad_token_id}
    return examples, convert_examples_to_features(examples, word_tokenizer(text, examples), MAX_SEQ_LENGTH,
                                                  DOC_STRIDE, MAX_QUERY_LENGTH, is_training, special)


def learn_and_score(tmp_path, version, train_count, dev_count, impossible_share, epochs, seed):
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(seed)
    squad_file(tmp_path / "train.json", rng, train_count, impossible_share, version)
    squad_file(tmp_path / "dev.json", rng, dev_count, impossible_share, version)
    text = tokenizer()
    train_examples, train_features = features(text, tmp_path / "train.json", version, True)
    assert len(train_examples) == train_count  # every answer found again in the words
    assert max(f.doc_span_index for f in train_features) >= 2  # contexts of several windows
    x, y = to_arrays(train_features)
    model = SpanQuestionAnswering(backbone())
    steps = -(-len(train_features) // 32) * epochs  # AdamW 2e-3 decaying linearly to 0: no late swings
    model.compile(optimizer=keras.optimizers.AdamW(keras.optimizers.schedules.PolynomialDecay(2e-3, steps, 0.0)))
    model.fit({n: x[n] for n in model.input}, y, epochs=epochs, batch_size=32, shuffle=True, verbose=0)

    dev_examples, dev_features = features(text, tmp_path / "dev.json", version, False)
    # Some held-out answers lie beyond the first window (26 doc tokens, one per word).
    assert any(MARKER in e.doc_tokens[25:-1] for e in dev_examples)
    dev_x, _ = to_arrays(dev_features)
    outputs = model.predict({n: dev_x[n] for n in model.input}, batch_size=128, verbose=0)
    start, end = (np.asarray(outputs[k], "float32") for k in ("start_logits", "end_logits"))
    assert start.shape == end.shape == (len(dev_features), MAX_SEQ_LENGTH)
    results = [types.SimpleNamespace(unique_id=int(u), start_logits=s.tolist(), end_logits=e.tolist())
               for u, s, e in zip(dev_x["unique_ids"], start, end)]
    # `write_predictions` reads the window's tokens as WordPiece strings; `word_tokenizer` gives ids.
    dev_features = [dataclasses.replace(f, tokens=tuple(VOCABULARY[t] for t in f.tokens)) for f in dev_features]
    v2 = version == "v2.0"
    predictions, _, _ = write_predictions(dev_examples, dev_features, results, n_best_size=20,
                                          max_answer_length=30, version_2_with_negative=v2)
    dataset = json.loads((tmp_path / "dev.json").read_text(encoding="utf-8"))["data"]
    return (evaluate_v2(dataset, predictions) if v2 else evaluate_v1(dataset, predictions)), predictions


# `make test-large`: the v2.0 test below learns the same spans (answerable exact match >= 85%) and the
# unanswerable questions; this one costs 35-60 s per backend.
@pytest.mark.large
def test_span_qa_learns_the_word_after_the_marker(tmp_path):
    """SQuAD v1.1: held-out exact match >= 90% (a random word of the context: about 5%)."""
    scores, _ = learn_and_score(tmp_path, "v1.1", 1024, 200, 0.0, epochs=12, seed=0)
    print(f"v1.1: held-out EM {scores['exact_match']:.1f}, F1 {scores['f1']:.1f}")
    assert scores["exact_match"] >= 90, scores


def test_span_qa_learns_unanswerable_questions(tmp_path):
    """SQuAD v2.0, a third of the questions without the marker: held-out exact match >= 90% overall, and on the
    answerable and the unanswerable ones (answering all with "no answer": about 33%)."""
    scores, predictions = learn_and_score(tmp_path, "v2.0", 1024, 240, 1 / 3, epochs=16, seed=1)
    print(f"v2.0: held-out EM {scores['exact']:.1f}, F1 {scores['f1']:.1f} (HasAns EM {scores['HasAns_exact']:.1f}, "
          f"NoAns EM {scores['NoAns_exact']:.1f})")
    assert 0.2 < scores["NoAns_total"] / scores["total"] < 0.5
    assert scores["exact"] >= 90 and scores["HasAns_exact"] >= 85 and scores["NoAns_exact"] >= 85, scores


def test_answer_class_head_learns_spans_and_unanswerable_questions(tmp_path):
    """`BeamQuestionAnswering` (the XLNet / ALBERT v2 head) on the v2.0 task, a tiny BERT under it (the class
    token first, as ALBERT's layout): per held-out window, the beam's best (start, end) is the gold span where
    the window holds the answer, and the answer class says "no answer" (cls_logits > 0) where it does not,
    for >= 90% of the windows of each kind."""
    from keras_pretrain.tasks import BeamQuestionAnswering

    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(2)
    squad_file(tmp_path / "train.json", rng, 1024, 1 / 3, "v2.0")
    squad_file(tmp_path / "dev.json", rng, 240, 1 / 3, "v2.0")
    text = tokenizer()

    def arrays(path, is_training):
        _, windows = features(text, path, "v2.0", is_training)
        x, _ = to_arrays(windows)
        doc = np.zeros_like(x["token_ids"], dtype="float32")
        for i, f in enumerate(windows):
            doc[i, list(f.token_to_orig_map)] = 1.0
        x["p_mask"] = 1.0 - doc
        x["p_mask"][:, 0] = 0.0  # the class token: where an impossible window's labels point
        return x, windows

    x, windows = arrays(tmp_path / "train.json", True)
    x = {k: v for k, v in x.items() if k != "unique_ids"}
    labels = {"start_positions": np.array([f.start_position for f in windows], "int32"),
              "end_positions": np.array([f.end_position for f in windows], "int32"),
              "is_impossible": np.array([f.start_position == 0 for f in windows], "float32")}
    model = BeamQuestionAnswering(backbone(), start_n_top=3, end_n_top=3, dropout=0.0)
    epochs = 16
    steps = -(-len(windows) // 32) * epochs
    model.compile(optimizer=keras.optimizers.AdamW(keras.optimizers.schedules.PolynomialDecay(2e-3, steps, 0.0)))
    model.fit({**x, **labels}, epochs=epochs, batch_size=32, verbose=0)

    dev_x, dev_windows = arrays(tmp_path / "dev.json", True)
    dev_x = {k: v for k, v in dev_x.items() if k != "unique_ids"}
    out = model.predict(dev_x, batch_size=128, verbose=0)
    best_start = np.asarray(out["start_top_index"])[:, 0]
    best_end = np.asarray(out["end_top_index"])[:, 0]  # the best end of the best start
    gold = np.array([(f.start_position, f.end_position) for f in dev_windows])
    answerable = gold[:, 0] > 0
    spans = np.mean((best_start == gold[:, 0]) & (best_end == gold[:, 1]), where=answerable)
    no_answer = np.mean(np.asarray(out["cls_logits"]) > 0, where=~answerable)
    print(f"answer-class head: held-out windows, span exact {100 * spans:.1f}%, "
          f"no-answer recall {100 * no_answer:.1f}%")
    assert answerable.sum() > 50 and (~answerable).sum() > 50
    assert spans >= 0.9 and no_answer >= 0.9, (spans, no_answer)
