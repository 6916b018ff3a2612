"""Strings in for every family (issue 39, item 3): the keras-hub preprocessors of RoBERTa, XLNet, GPT-1 and
ELMo (`Family.keras_preprocessor`) let `classifier.fit(strings)` / `predict(strings)` run, save with the
model, and pack exactly what the family's text preprocessor (`keras_pretrain.models.text_preprocessor`, used by the
recipes) packs, single segments and pairs, truncation included."""

import json

import keras
import keras_hub
import numpy as np
import pytest
import tensorflow as tf

from keras_pretrain import families
from tests.hub_modules.fixtures import TRANSFORMER

FAMILIES = ["roberta", "xlnet", "gpt", "elmo"]
FIRST = ["The quick fox, hello world!", "Héllo naïve café 中文 mixed", "the lower and the newest",
         "tab\tnew\nline\u3000wide\u00a0space ... !!!"]
SECOND = ["the lazy dog", "world", "newer and lower, the lowest ones of all the lower ones", "ok"]
LABELS = np.array([0, 1, 1, 0], "int32")
LENGTH = 16  # long enough for the short rows, short enough to truncate the long ones
SHORT = 7  # every pair truncated

# GPT-1's tiny BPE vocabulary (characters, word-final characters with "</w>", merges), with accents'
# bases, CJK and punctuation, so the tricky texts give real pieces as well as <unk>.
GPT_CHARS = list("abcdefghiklmnopqrstuvwxyz.,!'") + ["中", "文"]
GPT_MERGES = [("t", "h"), ("th", "e</w>"), ("e", "r"), ("l", "o"), ("lo", "w</w>"), ("lo", "w"), ("e", "s"),
              ("es", "t</w>"), ("a", "n"), ("an", "d</w>"), ("n", "e"), ("ne", "w"), ("e", "r</w>"),
              ("new", "er</w>"), ("h", "e"), ("he", "l"), ("hel", "lo"), ("o", "n"), ("on", "e"), ("c", "a"),
              ("ca", "f"), ("caf", "e</w>")]
GPT_TEXTS = FIRST + SECOND + ["Ünïcödé ÀÉÎ résumé", "中文，混合。", "don't... stop!?",
                              "a\u2009b\u200bc\u00a0d\u3000e", "emoji \U0001F600 x", "", "THE LoWeR"]


def gpt_vocabulary():
    tokens = ["<unk>"] + GPT_CHARS + [c + "</w>" for c in GPT_CHARS] + ["".join(m) for m in GPT_MERGES]
    return {t: i for i, t in enumerate(dict.fromkeys(tokens))}


@pytest.fixture(scope="module")
def assets(tmp_path_factory):
    """Per family: `(tokenizer, make_preprocessor(sequence_length), make_backbone())`, tiny."""
    from keras_pretrain.models.elmo import ElmoBackbone
    from keras_pretrain.models.elmo import ElmoPreprocessor
    from keras_pretrain.models.gpt import GPTBackbone
    from keras_pretrain.models.gpt import GPTPreprocessor
    from keras_pretrain.models.gpt import GPTTokenizer
    from keras_pretrain.models.roberta import RobertaBackbone
    from keras_pretrain.models.roberta import RobertaPreprocessor
    from keras_pretrain.models.roberta import RobertaTokenizer
    from keras_pretrain.models.xlnet import XLNetBackbone
    from keras_pretrain.models.xlnet import XLNetPreprocessor
    from keras_pretrain.models.xlnet import XLNetTokenizer
    from tests.hub_modules.fixtures import _xlnet_proto
    from tests.models.roberta.fixtures import write_bpe_files

    folder = tmp_path_factory.mktemp("bpe")
    roberta = RobertaTokenizer(*write_bpe_files(folder))
    proto = _xlnet_proto()
    xlnet = XLNetTokenizer(proto=proto)
    gpt = GPTTokenizer(gpt_vocabulary(), GPT_MERGES)
    gpt_size = gpt.vocabulary_size() + 3  # the preprocessor's special tokens
    return {
        "roberta": (roberta, lambda n: RobertaPreprocessor(roberta, sequence_length=n),
                    lambda: RobertaBackbone(vocabulary_size=roberta.vocabulary_size(), max_sequence_length=LENGTH + 2,
                                            **TRANSFORMER)),
        # A new tokenizer per preprocessor: `keras.utils.set_random_seed` drops the SentencePiece resource an
        # eager call made, which a later `tf.data` map would still use (see `ReloadsSentencePiece`).
        "xlnet": (xlnet, lambda n: XLNetPreprocessor(XLNetTokenizer(proto=proto), sequence_length=n),
                  lambda: XLNetBackbone(vocabulary_size=96, mem_len=0, **TRANSFORMER)),
        "gpt": (gpt, lambda n: GPTPreprocessor(tokenizer=gpt, sequence_length=n),
                lambda: GPTBackbone(vocabulary_size=gpt_size, max_sequence_length=LENGTH, **TRANSFORMER)),
        "elmo": (None, lambda n: ElmoPreprocessor(sequence_length=n),
                 lambda: ElmoBackbone(num_layers=2, hidden_dim=8, lstm_dim=16, filters=[[1, 4], [2, 8]],
                                      num_highway=1, char_embedding_dim=4)),
    }


def text_preprocessor(family, tokenizer):
    """The family's recipe-side preprocessor and the special ids its `encode` packs with."""
    text = family.preprocessor_class(family, tokenizer)
    if family.vocabulary.characters:
        return text, None
    if not text.takes_strings:  # GPT-1: the special tokens are appended to the vocabulary (a copy here)
        import copy

        tokenizer = copy.deepcopy(tokenizer)
        text = family.preprocessor_class(family, tokenizer)
        return text, tuple(tokenizer.add_special_tokens(list(family.packing.special_tokens)))
    ids = text.special_ids()
    return text, (ids["cls"], ids["sep"])


def classifier(name, assets, **kwargs):
    family = families.get(name)
    _, make_preprocessor, make_backbone = assets[name]
    keras.utils.set_random_seed(0)
    return family.classifier_class(make_backbone(), num_classes=2, preprocessor=make_preprocessor(LENGTH),
                                   **kwargs)


def logits(outputs):
    return outputs["logits"] if isinstance(outputs, dict) else outputs


def numpy(x):
    return {k: keras.ops.convert_to_numpy(v) for k, v in x.items()}


def test_the_families_name_their_preprocessors():
    for name in FAMILIES:
        family = families.get(name)
        cls = family.keras_preprocessor_class
        assert family.classifier_class.preprocessor_cls is cls, name
        assert keras.saving.get_registered_object(f"keras_pretrain>{cls.__name__}") is cls
        assert issubclass(cls, keras_hub.models.TextClassifierPreprocessor)


@pytest.mark.tf_only
@pytest.mark.parametrize("name", FAMILIES)
def test_packs_what_the_recipes_pack(name, assets):
    """Eagerly and in `tf.data`, single segments and pairs, with and without truncation."""
    family = families.get(name)
    tokenizer, make_preprocessor, _ = assets[name]
    text, special = text_preprocessor(family, tokenizer)
    for length in (LENGTH, SHORT):
        preprocessor = make_preprocessor(length)
        for columns in ([FIRST], [FIRST, SECOND]):
            expected = text.encode(columns, length, special)
            got = numpy(preprocessor(columns[0]) if len(columns) == 1 else preprocessor(x=tuple(columns)))
            assert set(got) <= set(expected), (got.keys(), expected.keys())
            for key in got:
                np.testing.assert_array_equal(got[key], expected[key], err_msg=f"{name} {key} {length}")
            assert next(iter(got.values())).shape[:2] == (len(FIRST), length)
    # In `tf.data` (where `fit` runs it): the truncated pairs.
    expected = text.encode([FIRST, SECOND], SHORT, special)
    ds = tf.data.Dataset.from_tensor_slices((FIRST, SECOND)).batch(len(FIRST))
    mapped = numpy(next(iter(ds.map(lambda a, b: preprocessor(x=(a, b))))))
    for key, value in mapped.items():
        np.testing.assert_array_equal(value, expected[key], err_msg=f"{name} tf.data {key}")
    # The long pairs really were truncated (the check above compared trimmed rows).
    if not family.vocabulary.characters:
        full = text.encode([FIRST, SECOND], 64, special)["padding_mask"].sum(1)
        assert (full > SHORT).all()
    else:
        full = text.encode([FIRST, SECOND], 64)["char_ids"].any(-1).sum(1)
        assert (full > SHORT).all()


@pytest.mark.tf_only
def test_xlnet_pads_left_and_ends_with_cls(assets):
    tokenizer, make_preprocessor, _ = assets["xlnet"]
    x = numpy(make_preprocessor(LENGTH)(x=(["the cat", "猫坐在垫子上。 Quick brown foxes jump over lazy dogs"],
                                           ["a mat", "XLNet"])))
    cls, sep, pad = (tokenizer.token_to_id(t) for t in ("<cls>", "<sep>", "<pad>"))
    np.testing.assert_array_equal(x["token_ids"][:, -1], [cls, cls])
    np.testing.assert_array_equal(x["token_ids"][:, -2], [sep, sep])
    np.testing.assert_array_equal(x["segment_ids"][:, -1], [2, 2])
    short = x["padding_mask"][0]
    n = int(short.sum())
    assert 0 < n < LENGTH and short[: LENGTH - n].sum() == 0 and short[LENGTH - n:].all()  # padding first
    np.testing.assert_array_equal(x["token_ids"][0, : LENGTH - n], [pad] * (LENGTH - n))
    assert x["padding_mask"][1].all()  # the long row fills the row
    segments = x["segment_ids"][0, LENGTH - n:]
    assert list(segments[:1]) == [0] and 1 in segments  # A's ids then B's, then <cls>'s 2
    assert x["segment_ids"][0, : LENGTH - n].sum() == 0


@pytest.mark.tf_only
def test_gpt_ids_equal_transformers(assets, tmp_path):
    transformers = pytest.importorskip("transformers")
    tokenizer, make_preprocessor, _ = assets["gpt"]
    tokenizer.save(str(tmp_path))
    reference = transformers.OpenAIGPTTokenizer.from_pretrained(str(tmp_path))
    hf = [reference.encode(t, add_special_tokens=False) for t in GPT_TEXTS]
    assert sum(len(ids) for ids in hf) > 50 and any(reference.unk_token_id in ids for ids in hf)
    assert any(len(set(ids) - {reference.unk_token_id}) > 3 for ids in hf)
    preprocessor = make_preprocessor(64)
    start, delimiter, classify = preprocessor.special_ids
    single = numpy(preprocessor(GPT_TEXTS))
    pairs = numpy(preprocessor(x=(GPT_TEXTS, GPT_TEXTS[::-1])))
    for i, ids in enumerate(hf):
        n = int(single["padding_mask"][i].sum())
        assert list(single["token_ids"][i, :n]) == [start, *ids, classify], GPT_TEXTS[i]
        n = int(pairs["padding_mask"][i].sum())
        assert list(pairs["token_ids"][i, :n]) == [start, *ids, delimiter, *hf[::-1][i], classify]


@pytest.mark.parametrize("name", FAMILIES)
def test_fit_predict_and_keras_file_round_trip(name, assets, tmp_path):
    """`fit(strings)` and `fit((a, b))` train a step; `predict(strings)` is the model on the recipes' packed
    inputs; the `.keras` file (preprocessor included) predicts the same from strings."""
    model = classifier(name, assets)
    model.compile(optimizer=keras.optimizers.Adam(1e-2))
    before = [keras.ops.convert_to_numpy(w).copy() for w in model.trainable_weights]
    single = model.fit(np.array(FIRST), LABELS, batch_size=4, epochs=1, verbose=0)
    after_single = [keras.ops.convert_to_numpy(w).copy() for w in model.trainable_weights]
    pair = model.fit((np.array(FIRST), np.array(SECOND)), LABELS, batch_size=4, epochs=1, verbose=0)
    after_pair = [keras.ops.convert_to_numpy(w) for w in model.trainable_weights]
    for history in (single, pair):
        loss = history.history["loss"][-1]
        assert np.isfinite(loss) and loss > 0
    assert any(not np.allclose(a, b) for a, b in zip(before, after_single))  # each fit trained a step
    assert any(not np.allclose(a, b) for a, b in zip(after_single, after_pair))
    predicted = logits(model.predict(np.array(FIRST), batch_size=4, verbose=0))
    assert predicted.shape == (len(FIRST), 2)
    family = families.get(name)
    text, special = text_preprocessor(family, assets[name][0])
    inputs = text.encode([FIRST], LENGTH, special)
    inputs = {k: v for k, v in inputs.items() if k in model.input}
    direct = logits(model(inputs, training=False))  # the model itself, no preprocessing
    np.testing.assert_allclose(predicted, keras.ops.convert_to_numpy(direct), atol=1e-5)
    assert np.abs(predicted).max() > 0

    path = str(tmp_path / "classifier.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert type(loaded.preprocessor) is type(model.preprocessor)
    assert loaded.preprocessor.get_config() == model.preprocessor.get_config()
    got = logits(loaded.predict_on_batch(np.array(FIRST)))  # its preprocessor called eagerly (no tf.data)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(got), predicted, atol=1e-5)


@pytest.mark.tf_only
@pytest.mark.parametrize("name", FAMILIES)
def test_from_preset_builds_the_preprocessor(name, assets, tmp_path):
    """keras-hub's `from_preset` path (no `preprocessor.json`): the family's preprocessor with the model's
    length where it has learned positions."""
    family = families.get(name)
    tokenizer, _, make_backbone = assets[name]
    backbone = make_backbone()
    preset = str(tmp_path / "preset")
    backbone.save_to_preset(preset)
    if hasattr(tokenizer, "save_to_preset"):
        tokenizer.save_to_preset(preset)
    elif tokenizer is not None:  # GPT-1's BPE files, as a pretraining run writes them
        tokenizer.save(preset)
    preprocessor = family.keras_preprocessor_class.from_preset(preset)
    assert type(preprocessor) is family.keras_preprocessor_class
    expected = {"roberta": LENGTH, "gpt": LENGTH}.get(name, 512)  # RoBERTa: positions less the offset rows
    assert preprocessor.sequence_length == expected
    x = numpy(preprocessor(FIRST[:1]))
    assert next(iter(x.values())).shape[1] == expected
    # keras-hub's classifier entry point builds it through `_add_missing_kwargs`: the same length.
    task = family.classifier_class.from_preset(preset, num_classes=2)
    assert type(task.preprocessor) is family.keras_preprocessor_class
    assert task.preprocessor.sequence_length == expected
    with open(f"{preset}/config.json") as f:
        assert json.load(f)["class_name"] == family.backbone_class.__name__
