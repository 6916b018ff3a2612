"""The preprocessor SavedModels keep TF-Hub's BERT preprocessor contract, for every family.

`tokenize` -> RaggedTensor [batch, (words), (pieces)], `tokenize.get_special_tokens_dict()`,
`bert_pack_inputs(segments, seq_length=N)` on one or two ragged levels, `training=` accepted; used
the way TF-Hub documents it (`hub.load`, `hub.KerasLayer(preprocessor.tokenize)`,
`hub.KerasLayer(preprocessor.bert_pack_inputs, arguments=dict(seq_length=N))`).
"""

import os

import numpy as np
import pytest

import hub_modules
from tests.hub_modules.fixtures import MIXED_TEXT

pytestmark = pytest.mark.tf_only  # SavedModels: TF-side code

WITH_PREPROCESSOR = ["bert", "albert", "ernie", "distil_bert", "roberta", "xlnet"]
WORDPIECE = ("bert", "ernie", "distil_bert")
# The tokens TF Model Garden's tokenizers look up for each key (text_layers.py,
# BertTokenizer / SentencepieceTokenizer.get_special_tokens_dict); RoBERTa and XLNet use theirs.
SPECIAL_TOKENS = {
    "wordpiece": ("[CLS]", "[SEP]", "[PAD]", "[MASK]"),
    "albert": ("[CLS]", "[SEP]", "<pad>", "[MASK]"),
    "roberta": ("<s>", "</s>", "<pad>", "<mask>"),
    "xlnet": ("<cls>", "<sep>", "<pad>", "<mask>"),
}
KEYS = ("start_of_sequence_id", "end_of_segment_id", "padding_id", "mask_id")
PLAIN = ["the cat sat on the mat", "Another sentence about a cat and a mat"]  # no unknown characters


def google_words(vocabulary, text):
    """Google's original BasicTokenizer words, each WordPiece'd (bert-tensorflow's tokenization.py)."""
    from bert import tokenization

    if not tokenization.FLAGS.is_parsed():  # its --preserve_unused_tokens flag (default False)
        tokenization.FLAGS.mark_as_parsed()
    vocab = {token: i for i, token in enumerate(vocabulary)}
    basic = tokenization.BasicTokenizer(do_lower_case=True)
    wordpiece = tokenization.WordpieceTokenizer(vocab=vocab)
    return [[vocab[piece] for piece in wordpiece.tokenize(word)] for word in basic.tokenize(text)]


def quick(families, slow=("roberta", "ernie", "distil_bert")):
    """`families`, the slow ones only under `-m large` (ERNIE and DistilBERT share BERT's WordPiece
    preprocessor; RoBERTa's in-graph BPE is slow to build: its word marks are checked by the tokenize and
    special-token tests)."""
    return [pytest.param(f, marks=pytest.mark.large) if f in slow else f for f in families]


@pytest.mark.parametrize("family", quick(WITH_PREPROCESSOR, slow=("ernie", "distil_bert")))
def test_tokenize_has_words_and_pieces(hub_module, family):
    import tensorflow as tf

    module = hub_module(family)
    preprocessor = module.savedmodel("preprocessor")
    tokenizer = hub_modules.load_tokenizer(module.path)
    texts = [MIXED_TEXT, "", *PLAIN]
    tokens = preprocessor.tokenize(tf.constant(texts))
    assert isinstance(tokens, tf.RaggedTensor) and tokens.ragged_rank == 2 and tokens.dtype == tf.int32
    assert tokens.shape.rank == 3 and tokens.nrows() == len(texts)
    # The flat ids are the tokenizer's, unchanged.
    flat = tokens.merge_dims(-2, -1).to_list()
    assert flat[0] == module.text_ids
    python_ids = tokenizer(tf.constant(texts))
    assert flat == (python_ids if isinstance(python_ids, list) else python_ids.to_list())
    words = tokens.to_list()
    assert words[1] == []
    if family in WORDPIECE:  # TF-Hub's BERT words: the original basic tokenizer's
        vocabulary = tokenizer.get_vocabulary()
        assert words == [google_words(vocabulary, t) for t in texts]
        assert len(words[0]) == 15 and [12, 13] in words[0]  # "unknown", "##word": one word
        return
    # SentencePiece / byte-level BPE: whitespace words; each word's pieces spell the word.
    expected = [w.lower() if family == "albert" else w for text in PLAIN for w in text.split()]
    rows = [ids for row in words[2:] for ids in row]
    if family == "roberta":  # byte-level BPE: the detokenized word, its leading space dropped
        spelled = tokenizer.detokenize(tf.ragged.constant(rows))
        spelled = [w.strip() if isinstance(w, str) else w.decode().strip() for w in np.asarray(spelled).tolist()]
    else:
        spelled = ["".join(tokenizer.id_to_token(i) for i in ids).replace("\u2581", "") for ids in rows]
    assert spelled == expected
    assert len(words[0]) == len(MIXED_TEXT.split())


@pytest.mark.parametrize("family", quick(WITH_PREPROCESSOR, slow=("ernie", "distil_bert")))
def test_special_tokens_dict(hub_module, family):
    import tensorflow as tf

    module = hub_module(family)
    tokenizer = hub_modules.load_tokenizer(module.path)
    kind = "wordpiece" if family in WORDPIECE else family
    expected = {key: tokenizer.token_to_id(token) for key, token in zip(KEYS, SPECIAL_TOKENS[kind])}
    expected["vocab_size"] = tokenizer.vocabulary_size()
    for preprocessor in (module.savedmodel("preprocessor"), tf.saved_model.load(
            os.path.join(module.path, "preprocessor"))):
        special = preprocessor.tokenize.get_special_tokens_dict()
        assert {k: int(v.numpy()) for k, v in special.items()} == expected
        assert all(v.dtype == tf.int32 and v.shape == () for v in special.values())
        assert int(special["padding_id"]) == int(preprocessor.pad_id)


def test_special_tokens_dict_leaves_out_missing_tokens():
    """As TF-Hub's: a token the vocabulary lacks has no entry (keras-hub tokenizers all hold a mask)."""
    from keras_pretrain.export.preprocessor_savedmodel import special_tokens_dict

    assert special_tokens_dict({"cls": 2, "sep": 3, "pad": 0, "mask": -1}, 7) == {
        "vocab_size": 7, "start_of_sequence_id": 2, "end_of_segment_id": 3, "padding_id": 0}


@pytest.mark.parametrize("family", quick(WITH_PREPROCESSOR))
def test_pack_inputs_takes_both_levels_and_training(hub_module, family):
    import tensorflow as tf

    preprocessor = hub_module(family).savedmodel("preprocessor")
    first, second = tf.constant([MIXED_TEXT, "the mat"]), tf.constant(PLAIN)
    words_a, words_b = preprocessor.tokenize(first), preprocessor.tokenize(second)
    flat_a, flat_b = words_a.merge_dims(-2, -1), words_b.merge_dims(-2, -1)
    reference = preprocessor.bert_pack_inputs([flat_a, flat_b], seq_length=tf.constant(20))
    for segments in ([words_a, words_b], [flat_a, words_b], [words_a, flat_b]):
        for length in (20, tf.constant(20)):  # a Python int too, as TF-Hub's examples pass it
            packed = preprocessor.bert_pack_inputs(segments, seq_length=length)
            for key in ("input_word_ids", "input_mask", "input_type_ids"):
                np.testing.assert_array_equal(packed[key], reference[key])
    single = preprocessor.bert_pack_inputs([words_a])  # default length
    plain = preprocessor(first)
    assert single["input_word_ids"].shape == (2, 12)
    for training in (True, False):
        called = preprocessor(first, training=training)
        for key in plain:
            np.testing.assert_array_equal(called[key], plain[key])
            np.testing.assert_array_equal(single[key], plain[key])


@pytest.mark.parametrize("family", quick(WITH_PREPROCESSOR))
def test_tensorflow_hub_usage(hub_module, family):
    """TF-Hub's documented code, unchanged, on our preprocessor."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401

    hub = pytest.importorskip("tensorflow_hub")
    tf_keras = pytest.importorskip("tf_keras")
    path = os.path.join(hub_module(family).path, "preprocessor")
    preprocessor = hub.load(path)
    special = preprocessor.tokenize.get_special_tokens_dict()
    text_inputs = [tf_keras.layers.Input(shape=(), dtype=tf.string) for _ in range(2)]
    tokenize = hub.KerasLayer(preprocessor.tokenize)
    tokenized_inputs = [tokenize(segment) for segment in text_inputs]
    bert_pack_inputs = hub.KerasLayer(preprocessor.bert_pack_inputs, arguments=dict(seq_length=20))
    model = tf_keras.Model(text_inputs, bert_pack_inputs(tokenized_inputs))
    first, second = tf.constant([MIXED_TEXT, "the mat"]), tf.constant(PLAIN)
    got = model([first, second])
    expected = preprocessor.bert_pack_inputs(
        [preprocessor.tokenize(first), preprocessor.tokenize(second)], seq_length=tf.constant(20))
    for key in expected:
        np.testing.assert_array_equal(got[key], expected[key])
    ids = got["input_word_ids"].numpy()
    if family != "xlnet":  # XLNet: A <sep> B <sep> <cls>, padded on the left
        assert (ids[:, 0] == int(special["start_of_sequence_id"])).all()
    assert int(special["end_of_segment_id"]) in ids[0] and ids.max() < int(special["vocab_size"])
    # The whole preprocessor as one layer: hub.KerasLayer passes `training`.
    layer = hub.KerasLayer(path)
    assert layer._has_training_argument
    text = tf_keras.layers.Input(shape=(), dtype=tf.string)
    packed = tf_keras.Model(text, layer(text))(first, training=True)
    np.testing.assert_array_equal(packed["input_word_ids"], preprocessor(first)["input_word_ids"])
