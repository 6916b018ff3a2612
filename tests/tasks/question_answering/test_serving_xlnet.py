"""The QA serving SavedModel of XLNet (issue 41, item 5): `question` and `context` strings in, the answers of
xlnet-tensorflow `run_squad.py`'s Python pipeline out (`read_squad_examples` -> `convert_examples_to_features`
(`P <sep> Q <sep> <cls>`, the LCS character alignment) -> the answer-class model -> `write_predictions`), v1.1
and v2.0 (`keras_pretrain.tasks.question_answering.serving_sentencepiece.XLNetLayout`).

The dev file is `tests/tasks/question_answering/test_features_sentencepiece.py`'s (accents composed and decomposed, runs of
whitespace, CJK and an unknown character, ligatures, a paragraph that fails the alignment: no features,
digit-comma pieces, contexts over several windows, questions longer than `max_query_length`, unanswerable
questions in v2.0) and a paragraph of XLNet's own: "``" / "''" quotes (one '"' after `preprocess_text`) and
digit-comma pieces. A tiny SentencePiece model with XLNet's special pieces first and digit-comma pieces without
a "▁" ("0,", "5,", which xlnet re-splits otherwise than albert) is trained in the test on those texts. The
models have random weights: their spans fall anywhere."""

import io
import json
import types

import keras
import numpy as np
import pytest

from tests.tasks.question_answering.test_features_sentencepiece import ACCENTS
from tests.tasks.question_answering.test_features_sentencepiece import CJK
from tests.tasks.question_answering.test_features_sentencepiece import LONG
from tests.tasks.question_answering.test_features_sentencepiece import PUNCT
from tests.tasks.question_answering.test_features_sentencepiece import _paragraphs
from tests.tasks.question_answering.test_features_sentencepiece import _qa
from tests.tasks.question_answering.test_serving_sentencepiece import check_answers
from tests.tasks.question_answering.test_serving_sentencepiece import questions_and_contexts
from tests.tasks.question_answering.test_serving_sentencepiece import serve_all

pytestmark = pytest.mark.tf_only

SEQ_LENGTH, DOC_STRIDE, MAX_QUERY_LENGTH, N_BEST, MAX_ANSWER = 40, 8, 8, 5, 6
SPECIAL = ["<unk>", "<s>", "</s>", "<cls>", "<sep>", "<pad>", "<mask>", "<eod>", "<eop>"]
QUOTES = ("He said ``hello there'' to the crowd (12,000 people, 3,4,5 rows) and paid £3,50 or ¥7, then "
          "``left'' at 9,30.")


def write_squad(path, v2):
    flag = False if v2 else None
    paragraphs = _paragraphs(v2)
    paragraphs.append({"context": QUOTES, "qas": [
        _qa("q-1", "What did he say?", QUOTES, "``hello there''", impossible=flag),
        _qa("q-2", "How many people were there?", QUOTES, "12,000", impossible=flag),
        _qa("q-3", "How much did he pay?", QUOTES, "£3,50", impossible=flag)]})
    data = {"version": "v2.0" if v2 else "1.1", "data": [{"title": "t", "paragraphs": paragraphs}]}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False)
    return str(path)


def write_spm(path):
    """A unigram model with XLNet's special pieces (`<cls>` = 3, `<sep>` = 4, as the features' constants) and
    the pieces "0," and "5," ("10," -> "▁1" "0,", which xlnet's `encode_pieces` re-splits to "▁1" "0" ",")."""
    import sentencepiece as spm

    from keras_pretrain.tasks.question_answering.features_sentencepiece import normalize_sentencepiece_text

    lines = [normalize_sentencepiece_text(t, lower=lower, xlnet_quotes=True)
             for t in (LONG, ACCENTS, CJK, PUNCT, QUOTES) for lower in (True, False)]
    buffer = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(lines * 10), model_writer=buffer, vocab_size=220,
                                   model_type="unigram", hard_vocab_limit=False, minloglevel=2, unk_id=0, bos_id=1,
                                   eos_id=2, pad_id=-1, control_symbols=SPECIAL[3:], num_threads=1,
                                   user_defined_symbols=["0,", "5,"])  # digit-comma pieces without a "▁"
    path.write_bytes(buffer.getvalue())
    return str(path)


def model_and_tokenizer(tmp, lowercase, seed):
    from keras_pretrain import families
    from keras_pretrain.models.xlnet import XLNetBackbone
    from keras_pretrain.models.xlnet import XLNetTokenizer
    from keras_pretrain.tasks import BeamQuestionAnswering

    tokenizer = XLNetTokenizer(proto=write_spm(tmp / "spiece.model"), lowercase=lowercase)
    assert [tokenizer.token_to_id(t) for t in ("<cls>", "<sep>")] == [3, 4]
    keras.utils.set_random_seed(seed)
    config = dict(families.get("xlnet").demo_config, num_layers=1, num_heads=2, hidden_dim=16, intermediate_dim=32,
                  dropout=0.0)
    backbone = XLNetBackbone(vocabulary_size=tokenizer.vocabulary_size(), **config)
    return BeamQuestionAnswering(backbone, start_n_top=3, end_n_top=3, dropout=0.0), tokenizer


def python_run(model, tokenizer, path):
    """(predictions, nbest, null_odds, features) of the Python pipeline (the recipe's functions)."""
    from keras_pretrain.tasks.question_answering import predictions as squad_predictions_beam
    from keras_pretrain.tasks.question_answering import squad as squad_sentencepiece
    from recipes import finetune_squad_beam

    examples = squad_sentencepiece.read_squad_examples(path, is_training=False)
    args = types.SimpleNamespace(doc_stride=DOC_STRIDE, max_query_length=MAX_QUERY_LENGTH)
    features = finetune_squad_beam.features("xlnet", examples, tokenizer, args, SEQ_LENGTH, False)
    x, _, unique_ids = finetune_squad_beam.to_arrays("xlnet", features)
    outputs = model.predict(x, verbose=0)
    results = [finetune_squad_beam.RawBeamResult(int(u), *[np.asarray(outputs[n][i]).tolist()
                                                            for n in finetune_squad_beam.BEAM_FIELDS])
               for i, u in enumerate(unique_ids)]
    return squad_predictions_beam.write_predictions_beam(examples, features, results, N_BEST, MAX_ANSWER,
                                                    model.start_n_top, model.end_n_top, "xlnet") + (features,)


@pytest.fixture(scope="module", params=[("v1.1", True, 3), ("v2.0", False, 5)], ids=["v1.1", "v2.0"])
def run(request, tmp_path_factory):
    from keras_pretrain.tasks.question_answering.serving import export_qa_serving

    version, lowercase, seed = request.param
    v2 = version == "v2.0"
    tmp = tmp_path_factory.mktemp("xlnet_" + version)
    model, tokenizer = model_and_tokenizer(tmp, lowercase, seed)
    path = write_squad(tmp / "dev.json", v2)
    predictions, nbest, null_odds, features = python_run(model, tokenizer, path)
    # The threshold is albert's; xlnet's write_predictions always answers the best span: so does the graph.
    export_qa_serving(model, str(tmp / "qa" / "1"), tokenizer, SEQ_LENGTH, DOC_STRIDE, MAX_QUERY_LENGTH, N_BEST,
                      MAX_ANSWER, v2, null_score_diff_threshold=-1e9)
    return v2, tmp, path, predictions, nbest, null_odds, features


def test_answers_equal_xlnet_write_predictions(run):
    v2, tmp, path, predictions, nbest, null_odds, features = run
    examples, questions, contexts = questions_and_contexts(path)
    assert max(f.doc_span_index for f in features) >= 3  # several windows
    assert len({f.example_index for f in features}) < len(examples)  # the ligature paragraph: no features
    out = serve_all(str(tmp / "qa" / "1"), questions, contexts)
    assert sorted(out) == sorted(["answer", "start", "end", "score"] + (["no_answer_score"] if v2 else []))
    check_answers(out, examples, predictions, nbest, null_odds, v2)
    answers = [a.decode("utf-8") for a in out["answer"]]
    assert sum(bool(a) for a in answers) >= len(answers) // 2
    if v2:
        assert 1000000.0 in list(out["no_answer_score"])  # the ligature paragraph: no window
    # One question at a time (a batch of one: other shapes) gives the same answers.
    for i in (0, len(questions) - 1):
        one = serve_all(str(tmp / "qa" / "1"), questions[i:i + 1], contexts[i:i + 1])
        assert one["answer"][0].decode("utf-8") == answers[i]


def test_loads_with_tensorflow_text_only_and_refuses_a_matrix(run):
    import tensorflow as tf

    from tests.export.serving_check import serve
    from tests.tasks.question_answering.test_serving_sentencepiece import _signature

    v2, tmp, path, predictions, nbest, null_odds, features = run
    examples, questions, contexts = questions_and_contexts(path)
    if v2:  # one fresh process (a TensorFlow start) is enough
        pick = [i for i, e in enumerate(examples) if e.paragraph_text.startswith("He said")]
        served, imported = serve(str(tmp / "qa" / "1"), {"question": [questions[i] for i in pick],
                                                         "context": [contexts[i] for i in pick]})
        assert imported == []  # tensorflow + tensorflow_text only
        assert served["answer"].tolist() == [predictions[examples[i].qas_id] for i in pick]
        np.testing.assert_allclose(served["no_answer_score"], [null_odds[examples[i].qas_id] for i in pick],
                                   rtol=1e-6, atol=1e-5)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"\[1,2\] is not compatible with expected shape"):
        _signature(str(tmp / "qa" / "1"))(question=tf.constant([["a", "b"]]), context=tf.constant([["c", "d"]]))


def test_layout_refusals(tmp_path):
    from keras_pretrain.tasks.question_answering.serving import check_model
    from keras_pretrain.tasks.question_answering.serving import check_tokenizer
    from keras_pretrain.tasks.question_answering.serving_sentencepiece import XLNetLayout
    from keras_pretrain.export.tracing import ExportError
    from keras_pretrain.tasks import SpanQuestionAnswering

    model, tokenizer = model_and_tokenizer(tmp_path, False, 0)
    layout = check_tokenizer(tokenizer)
    assert isinstance(layout, XLNetLayout) and layout.ids == {"cls": 3, "sep": 4}
    assert check_model(model, layout, False) and check_model(model, layout, True)
    with pytest.raises(ExportError, match="answer-class model"):
        check_model(SpanQuestionAnswering(model.backbone), layout, False)


def test_pieces_equal_xlnet_encode_pieces_on_random_text(tmp_path):
    """The in-graph text of the layout (xlnet `preprocess_text`, `encode_pieces` with its "▁" drop) equals the
    Python features' on random text of digits, commas, quotes, currency signs, accents and spaces."""
    import random

    import sentencepiece as spm
    import tensorflow as tf

    from keras_pretrain.tasks.question_answering import features_xlnet as squad_xlnet
    from keras_pretrain.tasks.question_answering.features_sentencepiece import normalize_sentencepiece_text
    from keras_pretrain.tasks.question_answering.serving_sentencepiece import XLNetLayout

    _, tokenizer = model_and_tokenizer(tmp_path, False, 0)
    processor = spm.SentencePieceProcessor(model_file=str(tmp_path / "spiece.model"))
    encode, piece_to_id = squad_xlnet.sentencepiece_functions(processor)
    rng = random.Random(0)
    alphabet = list("ab 10 35,,, ") * 3 + ["``", "''", "£", "¥", "(", "é", "e\u0301", "ﬁ", "\t", "北"]
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30))) for _ in range(200)]
    dropped = 0
    for lowercase in (False, True):
        tokenizer.lowercase = lowercase
        layout = XLNetLayout(tokenizer)
        layout.ids = {}
        layout.build(tf)
        pieces = layout._pieces(tf, tf.constant(texts))
        ids = layout._ids(tf, pieces)
        for i, text in enumerate(texts):
            preprocessed = normalize_sentencepiece_text(text, lower=lowercase, xlnet_quotes=True)
            expected = encode(preprocessed)
            assert [p.decode("utf-8") for p in pieces[i].numpy()] == expected, text
            assert ids[i].numpy().tolist() == [piece_to_id(p) for p in expected]
            albert = [p for piece in processor.EncodeAsPieces(preprocessed)
                      for p in ([piece] if not (len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit()) else
                                processor.EncodeAsPieces(piece[:-1].replace("\u2581", "")) + [","])]
            dropped += albert != expected
    assert dropped > 10  # xlnet's "▁" drop changed those
