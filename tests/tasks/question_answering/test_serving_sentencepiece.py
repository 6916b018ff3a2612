"""The QA serving SavedModel of ALBERT's SentencePiece models (issue 41, item 5): `question` and `context`
strings in, the answers of albert `squad_utils`' Python pipeline out (`read_squad_examples` ->
`convert_examples_to_features` (LCS character alignment) -> the model -> `write_predictions_v1` for v1.1, the
answer-class model and `write_predictions_v2` for v2.0).

The dev file is `tests/tasks/question_answering/test_features_sentencepiece.py`'s: accents (composed and decomposed), runs of spaces,
tabs and newlines, CJK and an unknown character, ligatures (NFKD "ﬁ" -> "fi"), a paragraph of ligatures only
(their "MISMATCH DETECTED!": no features, answer ""), digit-comma pieces, contexts over several windows,
questions longer than `max_query_length`, and (v2.0) unanswerable questions. The models have random weights:
their spans fall anywhere. One export per module fixture."""

import functools
import pathlib
import random
import types

import keras
import numpy as np
import pytest

from tests.tasks.question_answering.test_features_sentencepiece import CJK
from tests.tasks.question_answering.test_features_sentencepiece import write_spm
from tests.tasks.question_answering.test_features_sentencepiece import write_squad

pytestmark = pytest.mark.tf_only

SEQ_LENGTH, DOC_STRIDE, MAX_QUERY_LENGTH, N_BEST, MAX_ANSWER = 40, 8, 8, 5, 6


def tokenizer_and_backbone(tmp, lowercase, seed):
    from keras_pretrain.models.albert import AlbertBackbone
    from keras_pretrain.models.albert import AlbertTokenizer

    keras.utils.set_random_seed(seed)
    tokenizer = AlbertTokenizer(proto=write_spm(tmp / "sp.model"), lowercase=lowercase)
    backbone = AlbertBackbone(vocabulary_size=tokenizer.vocabulary_size(), num_layers=1, num_heads=2, hidden_dim=16,
                              intermediate_dim=32, embedding_dim=8, max_sequence_length=SEQ_LENGTH)
    return tokenizer, backbone


def python_run(model, tokenizer, path, v2, threshold=None):
    """(predictions, nbest, null_odds, features) of the Python pipeline (the recipe's functions)."""
    from keras_pretrain.tasks.question_answering import predictions as squad_predictions_beam
    from keras_pretrain.tasks.question_answering import squad as squad_sentencepiece
    from recipes import finetune_squad_albert
    from recipes import finetune_squad_beam

    examples = squad_sentencepiece.read_squad_examples(path, is_training=False)
    args = types.SimpleNamespace(doc_stride=DOC_STRIDE, max_query_length=MAX_QUERY_LENGTH, n_best_size=N_BEST,
                                 max_answer_length=MAX_ANSWER)
    features = finetune_squad_albert.features(examples, tokenizer, args, SEQ_LENGTH, False)
    x, _, unique_ids = finetune_squad_beam.to_arrays("albert", features)
    if v2:
        outputs = model.predict(x, verbose=0)
        results = [finetune_squad_beam.RawBeamResult(int(u), *[np.asarray(outputs[n][i]).tolist()
                                                                for n in finetune_squad_beam.BEAM_FIELDS])
                   for i, u in enumerate(unique_ids)]
        return squad_predictions_beam.write_predictions_beam(examples, features, results, N_BEST, MAX_ANSWER,
                                                        model.start_n_top, model.end_n_top, "albert",
                                                        threshold) + (features,)
    outputs = model.predict({n: x[n] for n in model.input}, verbose=0)
    results = [types.SimpleNamespace(unique_id=int(u), start_logits=s.tolist(), end_logits=e.tolist())
               for u, s, e in zip(unique_ids, np.asarray(outputs["start_logits"], "float32"),
                                  np.asarray(outputs["end_logits"], "float32"))]
    return finetune_squad_albert.predictions(examples, features, results, args) + (features,)


def questions_and_contexts(path):
    from keras_pretrain.tasks.question_answering import squad as squad_sentencepiece

    examples = squad_sentencepiece.read_squad_examples(path, is_training=False)
    return examples, [e.question_text for e in examples], [e.paragraph_text for e in examples]


@functools.lru_cache(maxsize=2)
def _signature(path):
    import tensorflow as tf
    import tensorflow_text  # noqa: F401 (the SavedModel's ops)

    return tf.saved_model.load(path).signatures["serving_default"]


def serve_all(path, questions, contexts):
    import tensorflow as tf

    out = _signature(path)(question=tf.constant(questions), context=tf.constant(contexts))
    return {k: v.numpy() for k, v in out.items()}


def check_answers(out, examples, predictions, nbest, null_odds, v2):
    answers = [a.decode("utf-8") for a in out["answer"]]
    expected = [predictions[e.qas_id] for e in examples]
    if not v2:  # no valid span: the Python code answers its "empty" placeholder, the graph "" (score -inf)
        expected = ["" if nbest[e.qas_id][0]["text"] == "empty" and nbest[e.qas_id][0]["start_log_prob"] == 0.0
                    else p for e, p in zip(examples, expected)]
    assert answers == expected
    for i, example in enumerate(examples):
        best = nbest[example.qas_id][0]
        if best["start_log_prob"] in (0.0, -1e6) and best["text"] in ("empty", ""):
            assert out["score"][i] == -np.inf
        else:
            np.testing.assert_allclose(out["score"][i], best["start_log_prob"] + best["end_log_prob"], rtol=1e-6,
                                       atol=1e-5)
        if v2:
            np.testing.assert_allclose(out["no_answer_score"][i], null_odds[example.qas_id], rtol=1e-6, atol=1e-5)
        start, end = int(out["start"][i]), int(out["end"][i])
        if answers[i]:
            assert example.paragraph_text[start:end] == answers[i]
        else:
            assert start == end == -1


@pytest.fixture(scope="module")
def v1_run(tmp_path_factory):
    from keras_pretrain.tasks.question_answering.serving import export_qa_serving
    from keras_pretrain.tasks import SpanQuestionAnswering

    tmp = tmp_path_factory.mktemp("albert_v1")
    tokenizer, backbone = tokenizer_and_backbone(tmp, True, 3)
    model = SpanQuestionAnswering(backbone)
    path = write_squad(tmp / "dev.json", v2=False)
    predictions, nbest, null_odds, features = python_run(model, tokenizer, path, False)
    export_qa_serving(model, str(tmp / "qa" / "1"), tokenizer, SEQ_LENGTH, DOC_STRIDE, MAX_QUERY_LENGTH, N_BEST,
                      MAX_ANSWER)
    return tmp, path, predictions, nbest, null_odds, features


def test_v1_answers_equal_albert_write_predictions_v1(v1_run):
    tmp, path, predictions, nbest, null_odds, features = v1_run
    examples, questions, contexts = questions_and_contexts(path)
    assert max(f.doc_span_index for f in features) >= 3  # several windows
    assert len({f.example_index for f in features}) < len(examples)  # the ligature paragraph: no features
    out = serve_all(str(tmp / "qa" / "1"), questions, contexts)
    check_answers(out, examples, predictions, nbest, null_odds, False)
    answers = [a.decode("utf-8") for a in out["answer"]]
    assert sum(bool(a) for a in answers) >= len(answers) // 2
    # One question at a time (a batch of one: other shapes) gives the same answers.
    for i in (0, len(questions) - 1):
        one = serve_all(str(tmp / "qa" / "1"), questions[i:i + 1], contexts[i:i + 1])
        assert one["answer"][0].decode("utf-8") == answers[i]


@pytest.fixture(scope="module")
def v2_run(tmp_path_factory):
    from keras_pretrain.tasks.question_answering.serving import export_qa_serving
    from keras_pretrain.tasks import BeamQuestionAnswering

    tmp = tmp_path_factory.mktemp("albert_v2")
    tokenizer, backbone = tokenizer_and_backbone(tmp, False, 5)
    model = BeamQuestionAnswering(backbone, start_n_top=3, end_n_top=3, dropout=0.0)
    path = write_squad(tmp / "dev.json", v2=True)
    _, _, null_odds, _ = python_run(model, tokenizer, path, True, None)
    threshold = float(np.median(sorted(set(null_odds.values()))[:-1]))  # some questions answered, some not
    predictions, nbest, null_odds, features = python_run(model, tokenizer, path, True, threshold)
    export_qa_serving(model, str(tmp / "qa" / "1"), tokenizer, SEQ_LENGTH, DOC_STRIDE, MAX_QUERY_LENGTH, N_BEST,
                      MAX_ANSWER, True, threshold)
    return tmp, path, predictions, nbest, null_odds, features


def test_v2_answers_equal_albert_write_predictions_v2(v2_run):
    tmp, path, predictions, nbest, null_odds, features = v2_run
    examples, questions, contexts = questions_and_contexts(path)
    out = serve_all(str(tmp / "qa" / "1"), questions, contexts)
    check_answers(out, examples, predictions, nbest, null_odds, True)
    answers = [a.decode("utf-8") for a in out["answer"]]
    assert "" in answers and sum(bool(a) for a in answers) >= 3
    assert 1000000.0 in list(out["no_answer_score"])  # the ligature paragraph: no window


def test_alignment_equals_albert_lcs_on_random_text(tmp_path):
    """The in-graph alignment (banded LCS, back-tracking, `_convert_index`) equals albert's on random text of
    letters, spaces, newlines, ligatures, decomposed accents, CJK and symbols that NFKD expands."""
    import sentencepiece as spm
    import tensorflow as tf
    import tensorflow_text as tf_text

    from keras_pretrain.tasks.question_answering import serving_sentencepiece as serving
    from keras_pretrain.tasks.question_answering.features_sentencepiece import align
    from keras_pretrain.tasks.question_answering.features_sentencepiece import normalize_sentencepiece_text as preprocess_text
    from keras_pretrain.tasks.question_answering.features_sentencepiece import sentencepiece_functions
    from keras_pretrain.models.sentencepiece_text import normalize

    proto = pathlib.Path(write_spm(tmp_path / "sp.model")).read_bytes()
    encode, _, _ = sentencepiece_functions(spm.SentencePieceProcessor(model_proto=proto))
    rng = random.Random(0)
    alphabet = list("the normans ab  ,.9") * 3 + ["\n", "\t", "ﬁ", "ﬀ", "é", "e\u0301", "北", "½", "Σ", "…",
                                                  "ß", "\u3000", "İ"]
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 50))) for _ in range(150)] + [CJK]
    sentence_piece = tf_text.SentencepieceTokenizer(model=proto, out_type=tf.string)
    differ = aligned = 0
    for lower in (True, False):
        pieces = serving.encode_pieces(tf, sentence_piece, normalize(tf.constant(texts), lowercase=lower))
        first, last, skip = tf.function(lambda c, p: serving.align(tf, c, p, lower))(tf.constant(texts), pieces)
        for i, text in enumerate(texts):
            expected_pieces = encode(preprocess_text(text, lower=lower))
            assert [p.decode("utf-8") for p in pieces[i].numpy()] == expected_pieces
            expected = align(text, expected_pieces, lower)
            if expected is None:
                differ += not bool(skip[i])
                continue
            aligned += 1
            differ += bool(skip[i]) or [list(first[i].numpy()), list(last[i].numpy())] != list(expected[:2])
    assert aligned > 150 and differ == 0


def test_refusals(tmp_path):
    import keras_hub

    from keras_pretrain.tasks.question_answering.serving import check_model
    from keras_pretrain.tasks.question_answering.serving import check_tokenizer
    from keras_pretrain.export.tracing import ExportError
    from keras_pretrain.tasks import BeamQuestionAnswering
    from keras_pretrain.tasks import SpanQuestionAnswering

    tokenizer, backbone = tokenizer_and_backbone(tmp_path, True, 0)
    layout = check_tokenizer(tokenizer)
    with pytest.raises(ExportError, match="answer-class model"):
        check_model(SpanQuestionAnswering(backbone), layout, True)
    with pytest.raises(ExportError, match="answer-class model"):
        check_model(BeamQuestionAnswering(backbone), layout, False)
    with pytest.raises(ExportError, match="got SentencePieceTokenizer"):  # neither ALBERT's nor XLNet's
        check_tokenizer(keras_hub.tokenizers.SentencePieceTokenizer(proto=str(tmp_path / "sp.model")))
