"""The span-QA serving SavedModel (issue 41, item 5): `question` and `context` strings in, the answers of the
Python pipeline out (`read_squad` -> `convert_examples_to_features` -> the model -> `write_predictions`), on
contexts that exercise every rule: several windows, punctuation inside words ("Smith's", "(1990),"), accents
(composed and decomposed), [UNK] words, run_squad's whitespace (newlines, double spaces, U+202F), CJK, and a
question longer than `max_query_length`. The model has random weights: its spans fall anywhere."""

import dataclasses
import json
import types

import keras
import numpy as np
import pytest

from keras_pretrain.tasks.question_answering import features_wordpiece
from keras_pretrain.tasks.question_answering import squad
from keras_pretrain.tasks.question_answering.predictions import basic_tokenize
from keras_pretrain.tasks.question_answering.predictions import byte_level_text
from keras_pretrain.tasks.question_answering.predictions import write_predictions
from keras_pretrain.tasks import SpanQuestionAnswering

SEQ_LENGTH, DOC_STRIDE, MAX_QUERY_LENGTH, N_BEST, MAX_ANSWER = 32, 6, 6, 5, 6
CONTEXTS = [
    "Steve Smith's bat (1990), was sold in Paris for 300 dollars.",
    "The  café\nopened in 1921 ; its owner , Zoë  Müller , sold cafe\u0301 au lait.",
    "Le\u202fmusée du Louvre est à Paris. 北京 是 中国 的 首都 。 The quick brown fox jumps over the lazy dog "
    "while the xylophonist plays a zzqx tune near the riverbank every single morning of the year.",
    "short",
    "word " * 40 + "end.",
]
QUESTIONS = ["Who sold the bat?", "When did the café open, and who was the owner of it in the end?",
             "Where is the Louvre?", "What?", "Which word ends it?"]


def vocabulary(lowercase):
    words = set()
    for text in CONTEXTS + QUESTIONS:
        words.update(basic_tokenize(text, lowercase))
    words -= {"zzqx", "xylophonist", "riverbank"}  # [UNK] words, and one spelled with pieces
    return ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "river", "##bank", "##s"] + sorted(words)


def squad_file(path):
    paragraphs = [{"context": c, "qas": [{"id": f"q{i}", "question": q, "answers": [{"text": c.split()[0],
                                                                                    "answer_start": 0}]}]}
                  for i, (c, q) in enumerate(zip(CONTEXTS, QUESTIONS))]
    path.write_text(json.dumps({"version": "1.1", "data": [{"title": "t", "paragraphs": paragraphs}]}),
                    encoding="utf-8")
    return str(path)


def model_and_tokenizer(lowercase, seed):
    from keras_pretrain.models.bert import BertBackbone
    from keras_pretrain.models.bert import BertTokenizer

    keras.utils.set_random_seed(seed)
    tokenizer = BertTokenizer(vocabulary=vocabulary(lowercase), lowercase=lowercase)
    backbone = BertBackbone(vocabulary_size=tokenizer.vocabulary_size(), max_sequence_length=SEQ_LENGTH,
                            num_layers=1, num_heads=2, hidden_dim=16, intermediate_dim=32, dropout=0.0)
    return SpanQuestionAnswering(backbone), tokenizer


def roberta_model_and_tokenizer(seed, tmp_path):
    from keras_pretrain.models.roberta import RobertaBackbone
    from keras_pretrain.models.roberta import RobertaTokenizer
    from tests.models.roberta.fixtures import write_bpe_files

    keras.utils.set_random_seed(seed)
    tokenizer = RobertaTokenizer(*write_bpe_files(tmp_path))
    backbone = RobertaBackbone(vocabulary_size=tokenizer.vocabulary_size(), max_sequence_length=SEQ_LENGTH + 2,
                               num_layers=1, num_heads=2, hidden_dim=16, intermediate_dim=32, dropout=0.0)
    return SpanQuestionAnswering(backbone), tokenizer


def python_predictions(model, tokenizer, path, v2, threshold, byte_level=False):
    from recipes.finetune_squad import id_tokens

    examples = squad.read_squad(path, "v1.1", is_training=False)
    names = ("<s>", "</s>", "<pad>") if byte_level else ("[CLS]", "[SEP]", "[PAD]")
    special = {key: tokenizer.token_to_id(name) for key, name in zip(("cls", "sep", "pad"), names)}
    if byte_level:
        special.update(separators=2, doc_segment=0)
    tokenize = features_wordpiece.word_tokenizer(tokenizer, examples, prefix_space=byte_level)
    features = features_wordpiece.convert_examples_to_features(examples, tokenize, SEQ_LENGTH, DOC_STRIDE, MAX_QUERY_LENGTH,
                                                  False, special)
    x, _ = features_wordpiece.to_arrays(features)
    outputs = model.predict({n: x[n] for n in model.input}, verbose=0)
    results = [types.SimpleNamespace(unique_id=int(u), start_logits=s.tolist(), end_logits=e.tolist())
               for u, s, e in zip(x["unique_ids"], np.asarray(outputs["start_logits"], "float32"),
                                  np.asarray(outputs["end_logits"], "float32"))]
    vocab = id_tokens(tokenizer)
    features = [dataclasses.replace(f, tokens=tuple(vocab[t] for t in f.tokens)) for f in features]
    assert max(f.doc_span_index for f in features) >= 3  # several windows
    if byte_level:
        return write_predictions(examples, features, results, N_BEST, MAX_ANSWER, False, v2, threshold,
                                 byte_level_text)
    return write_predictions(examples, features, results, N_BEST, MAX_ANSWER, tokenizer.bert_lowercase, v2,
                             threshold)


def serve_all(path):
    import tensorflow as tf
    import tensorflow_text  # noqa: F401 (the SavedModel's ops)

    serve = tf.saved_model.load(path).signatures["serving_default"]
    return {k: v.numpy() for k, v in serve(question=tf.constant(QUESTIONS), context=tf.constant(CONTEXTS)).items()}


@pytest.mark.tf_only
@pytest.mark.parametrize("lowercase,seed,v2,threshold", [(True, 0, False, 0.0), (True, 1, True, 0.0),
                                                        (False, 2, False, 0.0), (True, 3, True, -1.0),
                                                        ("roberta", 7, False, 0.0), ("roberta", 6, True, 0.0)])
def test_serving_answers_equal_the_python_post_processing(tmp_path, lowercase, seed, v2, threshold):
    """WordPiece (uncased, cased) and RoBERTa's byte-level BPE (cased; spans that cut a character's bytes)."""
    from keras_pretrain.tasks.question_answering.serving import export_qa_serving

    byte_level = lowercase == "roberta"
    if byte_level:
        model, tokenizer = roberta_model_and_tokenizer(seed, tmp_path)
    else:
        model, tokenizer = model_and_tokenizer(lowercase, seed)
    path = squad_file(tmp_path / "dev.json")
    predictions, nbest, null_odds = python_predictions(model, tokenizer, path, v2, threshold, byte_level)
    export_qa_serving(model, str(tmp_path / "qa" / "1"), tokenizer, SEQ_LENGTH, DOC_STRIDE, MAX_QUERY_LENGTH,
                      N_BEST, MAX_ANSWER, v2, threshold)
    out = serve_all(str(tmp_path / "qa" / "1"))
    answers = [a.decode("utf-8") for a in out["answer"]]
    # No valid span among the n best: the Python code answers its "empty" placeholder, the graph "" (score -inf).
    placeholder = [nbest[f"q{i}"][0] == {"text": "empty", "probability": nbest[f"q{i}"][0]["probability"],
                                         "start_logit": 0.0, "end_logit": 0.0} for i in range(len(CONTEXTS))]
    assert byte_level or (any(placeholder) and not all(placeholder))  # the seeds chosen to hit both
    assert answers == ["" if p else predictions[f"q{i}"] for i, p in enumerate(placeholder)]
    for i, (context, answer) in enumerate(zip(CONTEXTS, answers)):
        if placeholder[i]:
            assert out["score"][i] == -np.inf and answer == ""
            continue
        best = next(a for a in nbest[f"q{i}"] if a["text"])
        np.testing.assert_allclose(out["score"][i], best["start_logit"] + best["end_logit"], rtol=1e-6, atol=1e-6)
        if v2:
            np.testing.assert_allclose(out["no_answer_score"][i], null_odds[f"q{i}"], rtol=1e-6, atol=1e-5)
        if answer:  # the offsets cover the answer in the context (run_squad joins words by one space)
            start, end = int(out["start"][i]), int(out["end"][i])
            assert " ".join(context[start:end].split()) == answer, (context[start:end], answer)
        else:
            assert out["start"][i] == out["end"][i] == -1
    assert not v2 or threshold == 0.0 or "" in answers  # a negative threshold answers "no answer" somewhere


@pytest.mark.tf_only
def test_byte_level_span_text_equals_the_python_decoding(tmp_path):
    """The graph's span text of byte-level pieces equals `byte_level_text` on every slice of the pieces of
    tricky texts, slices that cut a character's bytes (U+FFFD) included."""
    import tensorflow as tf

    from keras_pretrain.tasks.question_answering.serving import PY_WHITESPACE
    from keras_pretrain.tasks.question_answering.serving import check_tokenizer
    from recipes.finetune_squad import id_tokens
    from tests.originals import TRICKY_TEXTS

    _, tokenizer = roberta_model_and_tokenizer(0, tmp_path)
    layout, vocabulary = check_tokenizer(tokenizer), id_tokens(tokenizer)
    slices = []
    for _, text in TRICKY_TEXTS:
        if "\x00" in text:
            continue  # the in-graph NUL cut (issue 43)
        pieces = [vocabulary[int(i)] for i in np.asarray(tokenizer(" " + text))]
        slices += [pieces[i:j] for i in range(0, len(pieces), 3) for j in range(i + 1, min(len(pieces), i + 9))]
    expected = [" ".join(byte_level_text(p).strip().split()) for p in slices]
    text = layout.span_text(tf, tf.ragged.constant(slices))
    got = tf.strings.regex_replace(tf.strings.regex_replace(text, PY_WHITESPACE, " "), "^ | $", "")
    got = [t.decode("utf-8") for t in got.numpy()]
    assert len(slices) > 200 and any("\ufffd" in t for t in expected)
    assert got == expected


@pytest.mark.one_backend
@pytest.mark.parametrize("family", ["bert", "roberta"])
def test_export_from_another_backend(tmp_path, family):
    """Under PyTorch (JAX alike) a TensorFlow subprocess writes the SavedModel; same answers as the Python code."""
    from hub_modules.exporting import export_qa_serving

    byte_level = family == "roberta"
    model, tokenizer = roberta_model_and_tokenizer(7, tmp_path) if byte_level else model_and_tokenizer(True, 4)
    predictions, nbest, _ = python_predictions(model, tokenizer, squad_file(tmp_path / "dev.json"), False, 0.0,
                                               byte_level)
    spec = export_qa_serving(model, tmp_path / "qa" / "1", tokenizer, seq_length=SEQ_LENGTH, doc_stride=DOC_STRIDE,
                             max_query_length=MAX_QUERY_LENGTH, n_best_size=N_BEST, max_answer_length=MAX_ANSWER)
    assert spec["outputs"] == ["answer", "start", "end", "score"]
    out = serve_all(str(tmp_path / "qa" / "1"))
    expected = ["" if nbest[f"q{i}"][0]["text"] == "empty" else predictions[f"q{i}"] for i in range(len(CONTEXTS))]
    assert [a.decode("utf-8") for a in out["answer"]] == expected
