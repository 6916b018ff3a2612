"""No special-token injection (issue 43, item 2): text holding `<s>`, `</s>`, `<pad>`, `<mask>`, `<unk>`, `[CLS]`,
`[SEP]`, `[MASK]`, `<cls>`, `<sep>` is tokenized as text by every family's tokenizer, eagerly and in-graph, and
the packed preprocessor output holds exactly the packing's own special tokens; RoBERTa's explicit
`special_tokens_in_strings=True` reads them as their ids (keras-hub's default)."""

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
