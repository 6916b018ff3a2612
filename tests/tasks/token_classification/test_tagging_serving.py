"""The NER serving SavedModel (issue 42, item 5): text in, entities out, equal to the Python pipeline
(`tagging_features` -> the model -> `word_predictions` -> `word_entities`) on sentences that exercise every rule:
multi-piece and unknown words, accents and CJK, sentences over several windows (with and without overlap),
XLNet's packing (`<cls>` last, padded left), RoBERTa's byte-level BPE, the three aggregation strategies. The
models have random weights: their tags fall anywhere, so chunking meets I- after O, type changes and B-X B-X."""

import keras
import numpy as np
import pytest

from keras_pretrain import families
from keras_pretrain.tasks.token_classification import features as tagging_features
from keras_pretrain.tasks.question_answering.predictions import basic_tokenize
from keras_pretrain.tasks import TokenClassifier


LABELS = ["O", "B-LOC", "B-PER", "I-LOC", "I-PER", "B-MISC", "I-MISC"]
SENTENCES = [
    "EU rejects German call to boycott British lamb .",
    "Peter Blackburn lives in Brussels , Belgium since 1996-08-22 .",
    "Zoë Müller opened the café in 北京 in 1921 ; a zzqx riverbank",
    "word " * 30 + "end",
    "short",
    "新华社北京电 中国国家主席访问巴黎和伦敦",  # Chinese without spaces: one word per ideograph
]
SEQ_LENGTH = 12


def bert_model(seed, lowercase=True):
    from keras_pretrain.models.bert import BertBackbone
    from keras_pretrain.models.bert import BertTokenizer

    words = sorted({w for s in SENTENCES for w in basic_tokenize(s, lowercase)} - {"zzqx", "riverbank"})
    tokenizer = BertTokenizer(vocabulary=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "river", "##bank"] + words,
                              lowercase=lowercase)
    keras.utils.set_random_seed(seed)
    backbone = BertBackbone(vocabulary_size=tokenizer.vocabulary_size(), max_sequence_length=SEQ_LENGTH,
                            num_layers=1, num_heads=2, hidden_dim=16, intermediate_dim=32, dropout=0.0)
    return TokenClassifier(backbone, len(LABELS), dropout=0.0), tokenizer


def roberta_model(seed, tmp_path):
    from keras_pretrain.models.roberta import RobertaBackbone
    from keras_pretrain.models.roberta import RobertaTokenizer
    from tests.models.roberta.fixtures import write_bpe_files

    tokenizer = RobertaTokenizer(*write_bpe_files(tmp_path))
    keras.utils.set_random_seed(seed)
    backbone = RobertaBackbone(vocabulary_size=tokenizer.vocabulary_size(), max_sequence_length=40,
                               num_layers=1, num_heads=2, hidden_dim=16, intermediate_dim=32, dropout=0.0)
    return TokenClassifier(backbone, len(LABELS), dropout=0.0), tokenizer


def xlnet_model(seed, tmp_path):
    from keras_pretrain.models.xlnet import XLNetBackbone
    from keras_pretrain.models.xlnet import XLNetTokenizer
    from tests.models.xlnet.make_tf1_release import train_sentencepiece

    path = tmp_path / "spiece.model"
    path.write_bytes(train_sentencepiece())
    tokenizer = XLNetTokenizer(str(path))
    keras.utils.set_random_seed(seed)
    family = families.get("xlnet")
    config = dict(family.demo_config, num_layers=1, num_heads=2, hidden_dim=16, intermediate_dim=32, dropout=0.0)
    backbone = XLNetBackbone(vocabulary_size=tokenizer.vocabulary_size(), **config)
    return TokenClassifier(backbone, len(LABELS), dropout=0.0), tokenizer


def python_entities(model, tokenizer, overlap, aggregation):
    """The Python pipeline's (tags, scores, entities) per sentence."""
    import keras_hub

    family = families.family_of(model.backbone)
    text = family.preprocessor_class(family, tokenizer)
    ids = text.special_ids()
    split = [tagging_features.text_words(s) for s in SENTENCES]
    sentences = [[w for w, _, _ in words] for words in split]
    byte_level = isinstance(tokenizer, keras_hub.tokenizers.BytePairTokenizer)
    tokenize = tagging_features.word_tokenizer(tokenizer, sentences, prefix_space=byte_level)
    windows = tagging_features.convert_sentences_to_features(
        sentences, None, tokenize, SEQ_LENGTH, family.packing, ids, tagging_features.unknown_id(tokenizer), overlap)
    assert max(f.sub_sentence_id for f in windows) >= 3  # several windows
    x, _, words = tagging_features.to_arrays(windows, SEQ_LENGTH, family.packing, ids["pad"])
    logits = model.predict({n: x[n] for n in model.input}, verbose=0)
    labels, scores = tagging_features.word_predictions(windows, np.asarray(logits, "float32"), words,
                                                       [len(s) for s in sentences], aggregation)
    tags = [[LABELS[i] for i in row] for row in labels]
    return tags, scores, [tagging_features.word_entities(s, t, c, text, [(a, b) for _, a, b in words])
                          for s, t, c, text, words in zip(sentences, tags, scores, SENTENCES, split)]


def served(path):
    import tensorflow as tf
    import tensorflow_text  # noqa: F401 (the SavedModel's ops)

    serve = tf.saved_model.load(path).signatures["serving_default"]
    return {k: v.numpy() for k, v in serve(text=tf.constant(SENTENCES)).items()}


def check(out, tags, scores, entities):
    sentences = [[w for w, _, _ in tagging_features.text_words(s)] for s in SENTENCES]
    assert sentences[-1][:3] == ["新", "华", "社"]
    assert [[w.decode() for w in row if w] for row in out["words"]] == sentences
    assert [[t.decode() for t in row[:len(s)]] for row, s in zip(out["tags"], sentences)] == tags
    for row, expected in zip(out["tag_scores"], scores):
        np.testing.assert_allclose(row[:len(expected)], expected, rtol=1e-5, atol=1e-6)
    assert out["num_entities"].tolist() == [len(e) for e in entities]
    assert sum(len(e) for e in entities) > 5
    for i, expected in enumerate(entities):
        got = [{"text": out["entity_text"][i, j].decode(), "type": out["entity_type"][i, j].decode(),
                "start": int(out["entity_start"][i, j]), "end": int(out["entity_end"][i, j])}
               for j in range(len(expected))]
        assert got == [{k: e[k] for k in ("text", "type", "start", "end")} for e in expected]
        np.testing.assert_allclose(out["entity_score"][i, :len(expected)], [e["score"] for e in expected],
                                   rtol=1e-5, atol=1e-6)
        for e in got:
            assert SENTENCES[i][e["start"]:e["end"]] == e["text"]
        assert (out["entity_start"][i, len(expected):] == -1).all()


@pytest.mark.tf_only
@pytest.mark.parametrize("family,overlap,aggregation", [("bert", 0, "first"), ("bert", 3, "average"),
                                                        ("bert", 2, "max"), ("roberta", 2, "first"),
                                                        ("xlnet", 2, "first")])
def test_serving_entities_equal_the_python_pipeline(tmp_path, family, overlap, aggregation):
    from keras_pretrain.tasks.token_classification.serving import export_tagging_serving

    if family == "bert":
        model, tokenizer = bert_model(1)
    elif family == "roberta":
        model, tokenizer = roberta_model(2, tmp_path)
    else:
        model, tokenizer = xlnet_model(3, tmp_path)
    tags, scores, entities = python_entities(model, tokenizer, overlap, aggregation)
    path = str(tmp_path / "ner" / "1")
    export_tagging_serving(model, path, tokenizer, LABELS, SEQ_LENGTH, overlap, aggregation)
    check(served(path), tags, scores, entities)


@pytest.mark.tf_only
def test_elmo_tagger_serving_equals_its_viterbi_tags(tmp_path):
    """ELMo: whole words as characters between <S> and </S>, the CRF's Viterbi tags per window, merged back."""
    from keras_pretrain.tasks.token_classification.serving import export_tagging_serving
    from keras_pretrain.tasks import ElmoTagger

    family = families.get("elmo")
    keras.utils.set_random_seed(5)
    model = ElmoTagger(family.backbone_class(**family.demo_config), len(LABELS), lstm_units=8, lstm_layers=1)
    split = [tagging_features.text_words(s) for s in SENTENCES]
    sentences = [[w for w, _, _ in words] for words in split]
    windows = tagging_features.word_windows(sentences, None, SEQ_LENGTH, family.packing, overlap=2)
    _, _, words = tagging_features.to_arrays(windows, SEQ_LENGTH, family.packing, 0)
    tags = np.asarray(model.predict(tagging_features.character_inputs(windows, sentences, SEQ_LENGTH),
                                    verbose=0)["tags"])
    logits = np.where(np.eye(len(LABELS), dtype=bool)[tags], 0.0, -1e9)
    labels, scores = tagging_features.word_predictions(windows, logits, words, [len(s) for s in sentences])
    predicted = [[LABELS[i] for i in row] for row in labels]
    entities = [tagging_features.word_entities(s, t, c, text, [(a, b) for _, a, b in w])
                for s, t, c, text, w in zip(sentences, predicted, scores, SENTENCES, split)]
    path = str(tmp_path / "ner" / "1")
    export_tagging_serving(model, path, None, LABELS, SEQ_LENGTH, overlap=2)
    check(served(path), predicted, scores, entities)


@pytest.mark.tf_only
def test_bad_exports_say_why(tmp_path):
    from keras_pretrain.tasks.token_classification.serving import export_tagging_serving
    from keras_pretrain.export.tracing import ExportError

    model, tokenizer = bert_model(0)
    with pytest.raises(ExportError, match="labels"):
        export_tagging_serving(model, str(tmp_path / "a"), tokenizer, LABELS[:3])
    with pytest.raises(ExportError, match="aggregation"):
        export_tagging_serving(model, str(tmp_path / "b"), tokenizer, LABELS, SEQ_LENGTH, 0, "vote")
    with pytest.raises(ExportError, match="positions"):
        export_tagging_serving(model, str(tmp_path / "c"), tokenizer, LABELS, 64)


@pytest.mark.one_backend
def test_export_from_another_backend(tmp_path):
    """Under PyTorch (JAX alike) a TensorFlow subprocess writes the SavedModel; the same entities."""
    from hub_modules.exporting import export_tagging_serving

    model, tokenizer = bert_model(4)
    tags, scores, entities = python_entities(model, tokenizer, 2, "first")
    spec = export_tagging_serving(model, tmp_path / "ner" / "1", tokenizer, LABELS, seq_length=SEQ_LENGTH, overlap=2)
    assert spec["inputs"] == ["text"] and spec["labels"] == LABELS
    check(served(str(tmp_path / "ner" / "1")), tags, scores, entities)
