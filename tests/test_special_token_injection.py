"""No special-token injection (issue 43, item 2): text holding `<s>`, `</s>`, `<pad>`, `<mask>`, `<unk>`, `[CLS]`,
`[SEP]`, `[MASK]`, `<cls>`, `<sep>` is tokenized as text by every family's tokenizer, eagerly and in-graph, and
the packed preprocessor output holds exactly the packing's own special tokens; the explicit
`special_tokens_in_strings=True` (RoBERTa, GPT-1, BERT / ERNIE / DistilBERT, ALBERT, XLNet) reads them as their
ids, the text between tokenized as it would be alone, eagerly, in `tf.function` and in `tf.data`."""

import numpy as np
import pytest

from keras_pretrain import families
from tests.test_huggingface_tokenizers import TOKENIZERS

pytestmark = pytest.mark.tf_only

SPECIALS = ["<s>", "</s>", "<pad>", "<mask>", "<unk>", "[CLS]", "[SEP]", "[MASK]", "<cls>", "<sep>", "[PAD]",
            "[UNK]", "<eod>", "<eop>", "_start_", "_delimiter_", "_classify_"]
TEXT = "a " + " ".join(SPECIALS) + " b<mask>c [CLS][SEP]"


def special_ids(tokenizer):
    """The ids of the special tokens the vocabulary holds (the unknown token aside: text can be unknown)."""
    found = set()
    for token in SPECIALS:
        if token in ("<unk>", "[UNK]"):
            continue
        try:
            i = tokenizer.token_to_id(token)
        except (KeyError, ValueError, TypeError):
            continue
        if i is not None and tokenizer.id_to_token(int(i)) == token:  # not the unknown id of a missing token
            found.add(int(i))
    return found


def in_graph(tokenizer):
    import keras

    return isinstance(tokenizer, keras.layers.Layer)  # not GPT-1's Python BPE


def ids_of(tokenizer, text, graph=False):
    import tensorflow as tf

    if not in_graph(tokenizer):
        return [int(i) for i in tokenizer.tokenize(text)]
    if graph:
        return tf.function(lambda t: tokenizer(t))(tf.constant([text])).to_list()[0]
    out = tokenizer([text])
    return out.to_list()[0] if hasattr(out, "to_list") else [int(i) for i in np.asarray(out)[0]]


@pytest.mark.parametrize("family", sorted(TOKENIZERS))
def test_literal_special_tokens_are_text(family, tmp_path):
    tokenizer = TOKENIZERS[family](tmp_path)
    if not in_graph(tokenizer):
        tokenizer.add_special_tokens(["_start_", "_delimiter_", "_classify_"])  # GPT-1's fine-tuning tokens
    specials = special_ids(tokenizer)
    assert specials, family  # the vocabulary has some: the check can fail
    for graph in (False, True):
        if graph and not in_graph(tokenizer):
            continue
        ids = ids_of(tokenizer, TEXT, graph)
        assert len(ids) > len(SPECIALS) and not set(ids) & specials, (family, graph, set(ids) & specials)


@pytest.mark.parametrize("family", ["bert", "albert", "roberta", "xlnet"])
def test_the_preprocessor_packs_only_its_own_special_tokens(family, tmp_path):
    tokenizer = TOKENIZERS[family](tmp_path)
    spec = families.get(family)
    text = spec.preprocessor_class(spec, tokenizer)
    ids = text.special_ids()
    x = text.encode([[TEXT, "plain"], [TEXT, TEXT]], 64, (ids["cls"], ids["sep"]))
    layout = text.packing.layout(2)
    for row in range(2):
        tokens = x["token_ids"][row][x["padding_mask"][row] > 0].tolist()
        assert tokens.count(ids["cls"]) == sum(part == "cls" for part, _ in layout)
        assert tokens.count(ids["sep"]) == sum(part == "sep" for part, _ in layout)
        assert not set(tokens) & (special_ids(tokenizer) - {ids["cls"], ids["sep"]})


def test_roberta_parses_special_tokens_when_asked(tmp_path):
    import keras

    from keras_pretrain.models.roberta import RobertaTokenizer
    from tests.models.roberta.fixtures import write_bpe_files

    files = write_bpe_files(tmp_path)
    parsing = RobertaTokenizer(*files, special_tokens_in_strings=True)
    assert ids_of(parsing, "<mask>") == [parsing.token_to_id("<mask>")]
    assert ids_of(parsing, "a<s>b", graph=True)[1] == parsing.token_to_id("<s>")
    plain = RobertaTokenizer(*files)
    assert parsing.token_to_id("<mask>") not in ids_of(plain, "<mask>")
    config = parsing.get_config()
    assert config["special_tokens_in_strings"] is True and "unsplittable_tokens" not in config
    restored = RobertaTokenizer.from_config(config)
    restored.set_vocabulary_and_merges(*files)
    assert ids_of(restored, "<mask>") == [parsing.token_to_id("<mask>")]
    assert keras.saving.serialize_keras_object(plain)["config"]["special_tokens_in_strings"] is False


def test_elmo_has_no_special_token_ids():
    import inspect

    from keras_pretrain.models.elmo.elmo_tokenizer import ElmoCharacterMapper

    assert "no special-token ids" in ElmoCharacterMapper.__doc__
    assert "special_tokens_in_strings" not in inspect.signature(ElmoCharacterMapper).parameters


# Each family's tokenizer with `special_tokens_in_strings=True` (ELMo has character ids, no special-token ids).
PARSING = {"bert": "[MASK]", "distil_bert": "[MASK]", "ernie": "[MASK]", "albert": "[MASK]", "xlnet": "<mask>",
           "roberta": "<mask>"}
OTHERS = {"bert": ["[CLS]", "[SEP]", "[PAD]", "[UNK]"], "albert": ["[CLS]", "[SEP]", "<pad>", "<unk>"],
          "xlnet": ["<s>", "</s>", "<cls>", "<sep>", "<pad>", "<unk>", "<eod>", "<eop>"],
          "roberta": ["<s>", "</s>", "<pad>"]}


def parsing_copy(tokenizer, config=None):
    """The tokenizer rebuilt from `config` (its own config with the option on by default), vocabulary set."""
    config = config or {**tokenizer.get_config(), "special_tokens_in_strings": True}
    restored = type(tokenizer).from_config(config)
    if hasattr(tokenizer, "proto"):
        restored.set_proto(tokenizer.proto)
    elif hasattr(tokenizer, "merges"):
        restored.set_vocabulary_and_merges(tokenizer.vocabulary, tokenizer.merges)
    else:
        restored.set_vocabulary(tokenizer.get_vocabulary())
    return restored


def data_ids(tokenizer, texts):
    import tensorflow as tf

    dataset = tf.data.Dataset.from_tensor_slices(texts).batch(len(texts)).map(tokenizer)
    return next(iter(dataset)).to_list()


@pytest.mark.parametrize("family", sorted(PARSING))
def test_special_tokens_in_strings_reads_them_as_ids(family, tmp_path):
    import keras

    plain = TOKENIZERS[family](tmp_path)
    assert plain.get_config()["special_tokens_in_strings"] is False
    parsing = parsing_copy(plain)
    mask = PARSING[family]
    mask_id = parsing.token_to_id(mask)
    assert mask_id in special_ids(plain)
    # The pieces around are tokenized as they are alone (the original preprocessing of each piece).
    a, b = ids_of(plain, "a"), ids_of(plain, " b" if family == "roberta" else "b")
    assert a and b and ids_of(parsing, "a") == a
    text = f"a {mask} b" if family != "roberta" else f"a{mask} b"
    expected = a + [mask_id] + b
    assert ids_of(parsing, text) == expected
    assert ids_of(parsing, text, graph=True) == expected
    assert mask_id not in ids_of(plain, text)
    # Each special token of the family, the longest first, twice in a row and next to text.
    others = OTHERS.get(family, OTHERS["bert"])
    texts = [text, "".join(others) + mask + mask + "a", "", mask]
    expected_rows = [expected, [parsing.token_to_id(t) for t in others] + [mask_id, mask_id] + a, [], [mask_id]]
    assert [ids_of(parsing, t) for t in texts] == expected_rows
    assert data_ids(parsing, texts) == expected_rows
    # The option is saved, and a tokenizer rebuilt from the saved config parses as well.
    config = keras.saving.serialize_keras_object(parsing)["config"]
    assert config["special_tokens_in_strings"] is True
    assert ids_of(parsing_copy(plain, config), text) == expected


@pytest.mark.parametrize("family", ["bert", "albert", "xlnet"])
def test_special_tokens_in_strings_in_an_exported_preprocessor(family, tmp_path):
    import tensorflow as tf

    from keras_pretrain.export.preprocessor_savedmodel import export_preprocessor

    parsing = parsing_copy(TOKENIZERS[family](tmp_path))
    mask = PARSING[family]
    texts = [f"a {mask} b", f"{mask}{mask}a", "a"]
    export_preprocessor(parsing, str(tmp_path / "preprocessor"))
    loaded = tf.saved_model.load(str(tmp_path / "preprocessor"))
    exported = loaded.tokenize(tf.constant(texts)).merge_dims(-2, -1).to_list()
    assert exported == [ids_of(parsing, t) for t in texts]
    assert parsing.token_to_id(mask) in exported[0]


def test_split_at_special_tokens():
    import tensorflow as tf

    from keras_pretrain.models.special_tokens import split_at_special_tokens
    from keras_pretrain.models.special_tokens import tokenize_around_special_tokens

    texts = tf.constant([b"", b"a <s>b<sep>", b"<sep><s>", b"x\xff<s>", b"\x00<s>\x00"])
    segments, special = split_at_special_tokens(tf, texts, ["<s>", "<sep>"])
    assert segments.to_list() == [[], [b"a ", b"<s>", b"b", b"<sep>"], [b"<sep>", b"<s>"], [b"x\xff<s>"],
                                  [b"\x00", b"<s>", b"\x00"]]  # the longest first; a 0xFF byte: left whole
    assert special.numpy().tolist() == [False, True, False, True, True, True, False, False, True, False]
    ids = tokenize_around_special_tokens(tf, texts, {"<s>": 7, "<sep>": 8},
                                         lambda t: tf.strings.unicode_decode(t, "UTF-8", errors="replace"))
    assert ids.to_list() == [[], [97, 32, 7, 98, 8], [8, 7], [120, 65533, 60, 115, 62], [0, 7, 0]]
