"""Every family: export, reload (Keras layer and SavedModels), equal outputs, strings in."""

import os
import shutil

import keras
import numpy as np
import pytest

import hub_modules
from tests.hub_modules.fixtures import ELMO_SENTENCES
from tests.hub_modules.fixtures import MIXED_TEXT
from tests.hub_modules.fixtures import ernie_task_outputs
from tests.hub_modules.fixtures import tokenizer_ids
from tests.testing import max_abs_diff
from tests.testing import to_numpy

FAMILIES = ["bert", "albert", "ernie", "distil_bert", "roberta", "xlnet", "gpt", "elmo"]
WITH_PREPROCESSOR = ["bert", "albert", "ernie", "distil_bert", "roberta", "xlnet"]
TOLERANCE = 1e-5
COMPILED_FIT = ("bert", "xlnet")


def assert_close(got, reference, what):
    worst = {}
    for key, expected in reference.items():
        if key in got:
            pairs = zip(keras.tree.flatten(got[key]), keras.tree.flatten(expected))
            worst[key] = max(max_abs_diff(a, b) for a, b in pairs)
    assert worst and max(worst.values()) <= TOLERANCE, (what, worst)
    print(what, "max abs diff", f"{max(worst.values()):.1e}")


@pytest.mark.parametrize("family", FAMILIES)
def test_load_matches_model(hub_module, family):
    module = hub_module(family)
    layer = hub_modules.load(module.path)
    assert_close(layer(module.inputs), module.reference, f"{family} load()")
    if family == "ernie":  # ERNIE 2.0 task embeddings: optional input_task_ids
        inputs, expected = ernie_task_outputs(module.model.backbone, module.inputs)
        assert max_abs_diff(expected, module.reference["sequence_output"]) > 1e-3  # the task ids matter
        assert max_abs_diff(layer(inputs)["sequence_output"], expected) <= TOLERANCE


def fine_tune_params():
    """Every family; on JAX (slow on 2 cores) BERT and ELMo in the default run, all with `-m large`."""
    if keras.config.backend() != "jax":
        return FAMILIES
    return [f if f in ("bert", "elmo") else pytest.param(f, marks=pytest.mark.large) for f in FAMILIES]


@pytest.mark.parametrize("family", fine_tune_params())
def test_fine_tune_step_in_fit(hub_module, family, tmp_path):
    module = hub_module(family)
    layer = hub_modules.load(module.path)
    inputs = {k: keras.Input(shape=v.shape[1:], dtype=v.dtype, name=k) for k, v in module.inputs.items()}
    outputs = layer(inputs)
    features = outputs["sequence_output"][:, -1] if family == "gpt" else outputs["default"]
    model = keras.Model(inputs, keras.layers.Dense(2)(features))
    # Compiled (tf.function / jax.jit) for some contracts, eagerly for the
    # others (the same layer code), whichever is faster on the backend.
    compiled = family in COMPILED_FIT or (family == "elmo" and keras.config.backend() == "jax")
    model.compile(keras.optimizers.SGD(0.1), keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  run_eagerly=not compiled)
    before = [to_numpy(w).copy() for w in layer.weights]
    model.fit(module.inputs, np.array([0, 1]), epochs=1, verbose=0)
    changed = [np.abs(to_numpy(w) - b).max() > 0 for w, b in zip(layer.weights, before)]
    names = [w.path for w in layer.weights]
    if family == "elmo":  # as TF-Hub's ELMo: the mix trains, the biLM does not
        assert {n.split("/")[-1] for n, c in zip(names, changed) if c} == {"scalar_weights", "gamma"}
        # The fine-tuned model (HubEncoder inside) round-trips through .keras.
        model.save(tmp_path / "fine_tuned.keras")
        again = keras.models.load_model(tmp_path / "fine_tuned.keras")
        assert max_abs_diff(again(module.inputs), model(module.inputs)) <= 1e-6
    else:
        assert sum(changed) > len(changed) // 2, [n for n, c in zip(names, changed) if not c]


@pytest.mark.tf_only
@pytest.mark.parametrize("family", FAMILIES)
def test_savedmodel_matches_model(hub_module, family):
    import tensorflow as tf

    module = hub_module(family)
    encoder = module.savedmodel("encoder")
    inputs = {k: tf.constant(v) for k, v in module.inputs.items()}
    if family == "elmo":
        strings = tf.constant([" ".join(s) for s in ELMO_SENTENCES])
        assert_close(encoder(strings), module.reference, "elmo encoder(strings)")
        width = max(len(s) for s in ELMO_SENTENCES)
        tokens = tf.constant([s + [""] * (width - len(s)) for s in ELMO_SENTENCES])
        lengths = tf.constant([len(s) for s in ELMO_SENTENCES])
        assert_close(encoder.tokens(tokens, lengths), module.reference, "elmo encoder.tokens")
        signature = encoder.signatures["tokens"](tokens=tokens, sequence_len=lengths)
        assert_close(signature, module.reference, "elmo tokens signature")
        assert sorted(encoder.signatures["default"](strings=strings)) == [
            "default", "elmo", "lstm_outputs1", "lstm_outputs2", "sequence_len", "word_emb"]
        assert len(encoder.trainable_variables) == 2  # the mix only
        return
    outputs = encoder(inputs)
    assert_close(outputs, module.reference, f"{family} encoder")
    flat = encoder.signatures["serving_default"](**inputs)
    assert_close(flat, module.reference, f"{family} serving_default")
    if "encoder_outputs" in module.reference:
        last = len(module.reference["encoder_outputs"]) - 1
        assert max_abs_diff(flat[f"encoder_outputs_{last}"], module.reference["sequence_output"]) <= TOLERANCE
    if "mlm_logits" in module.reference:
        positions = tf.constant([[1, 2], [3, 5]])
        mlm = encoder.mlm({**inputs, "masked_lm_positions": positions})
        assert_close(mlm, {"mlm_logits": module.reference["mlm_logits"]}, f"{family} mlm")
    if family in ("roberta", "distil_bert"):  # no token types: the 2-key dict works too
        two = encoder({k: inputs[k] for k in ("input_word_ids", "input_mask")})
        assert max_abs_diff(two["pooled_output"], outputs["pooled_output"]) == 0.0
    if family == "ernie":  # task ids are optional (default task 0)
        with_tasks, expected = ernie_task_outputs(module.model.backbone, module.inputs)
        got = encoder({k: tf.constant(v) for k, v in with_tasks.items()})
        assert max_abs_diff(got["sequence_output"], expected) <= TOLERANCE
    if family == "xlnet":
        backbone = module.model
        mems = outputs["mems"]
        assert tuple(mems.shape) == (2, backbone.num_layers, 6, backbone.hidden_dim)  # mem_len 6
        following = encoder.signatures["with_memories"](**inputs, mems=mems)
        expected = backbone({"token_ids": module.inputs["input_word_ids"], "padding_mask": module.inputs["input_mask"],
                             "segment_ids": module.inputs["input_type_ids"], "mems": to_numpy(mems)})
        assert_close(following, {"sequence_output": to_numpy(expected["sequence_output"]),
                                 "mems": np.stack(to_numpy(expected["mems"]), 1)}, "xlnet with_memories")
    if family == "gpt":
        prompts = [[5, 6, 7], [8, 9, 10, 11, 12]]
        module.model.compile(sampler="greedy")
        expected = module.model.generate_ids(prompts, 12)
        ids = np.zeros((2, 5), "int32")
        for row, prompt in enumerate(prompts):
            ids[row, : len(prompt)] = prompt
        generated = encoder.generate(tf.constant(ids), tf.constant((ids > 0).astype("int32")), tf.constant(12))
        assert generated["output_ids"].numpy().tolist() == expected
        assert sorted(os.listdir(os.path.join(module.path, "encoder", "assets"))) == ["merges.txt", "vocab.json"]
    layer = hub_modules.load(module.path, savedmodel=True)  # keras.layers.TFSMLayer
    assert_close(layer(inputs), module.reference, f"{family} TFSMLayer")


@pytest.mark.tf_only
@pytest.mark.parametrize("family", WITH_PREPROCESSOR)
def test_preprocessor_matches_tokenizer_and_strings_give_vectors(hub_module, family):
    import tensorflow as tf

    module = hub_module(family)
    preprocessor = module.savedmodel("preprocessor")
    encoder = module.savedmodel("encoder")
    expected = module.text_ids
    assert preprocessor.tokenize(tf.constant([MIXED_TEXT])).merge_dims(-2, -1).to_list()[0] == expected
    assert any(i != expected[0] for i in expected)  # not all [UNK]
    reloaded = hub_modules.load_tokenizer(module.path)
    assert tokenizer_ids(reloaded, MIXED_TEXT) == expected
    packed = preprocessor(tf.constant([MIXED_TEXT, "猫"]))
    ids = packed["input_word_ids"].numpy()
    assert ids.shape == (2, 12)
    cls, sep, pad = int(preprocessor.cls_id), int(preprocessor.sep_id), int(preprocessor.pad_id)
    if family == "xlnet":  # A <sep> <cls>, padded on the left
        assert list(ids[0, -2:]) == [sep, cls] and ids[1, 0] == pad and packed["input_mask"].numpy()[1, 0] == 0
        assert list(ids[0, :10]) == expected[:10]
    else:
        assert ids[0, 0] == cls and ids[0, -1] == sep and ids[1, -1] == pad
        assert list(ids[0, 1:11]) == expected[:10]

    # Strings in, vectors out, in one graph.
    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def embed(texts):
        return encoder(preprocessor(texts))["default"]

    vectors = embed(tf.constant([MIXED_TEXT, "猫", "the mat"]))
    assert vectors.shape == (3, 16) and np.all(np.isfinite(vectors.numpy()))
    # The Keras layer on the same packed ids gives the same vector.
    layer = hub_modules.load(module.path)
    keras_vectors = layer({k: v.numpy() for k, v in preprocessor(tf.constant([MIXED_TEXT])).items()})["default"]
    assert max_abs_diff(vectors[:1], keras_vectors) <= TOLERANCE


def test_gpt_module_ships_its_python_tokenizer(hub_module):
    module = hub_module("gpt")
    assert not os.path.exists(os.path.join(module.path, "preprocessor"))
    tokenizer = hub_modules.load_tokenizer(module.path)
    assert tokenizer.tokenize(MIXED_TEXT) == module.text_ids
    metadata = hub_modules.read_metadata(module.path)[1]
    assert metadata["contract"] == "gpt" and metadata["preprocessor"] is False


@pytest.mark.tf_only
def test_roberta_and_xlnet_packing_match_transformers(hub_module, tmp_path):
    """`<s> A </s></s> B </s>` and left-padded `A <sep> B <sep> <cls>`, against `transformers`' tokenizers."""
    import tensorflow as tf

    transformers = pytest.importorskip("transformers")
    first, second = [MIXED_TEXT, "the fox"], ["Hello world", "quick quick quick"]
    roberta, xlnet = hub_module("roberta"), hub_module("xlnet")
    assets = os.path.join(roberta.path, "tokenizer", "assets")
    shutil.copy(os.path.join(xlnet.path, "tokenizer", "assets", "vocabulary.spm"), tmp_path / "spiece.model")
    references = {
        "roberta": transformers.RobertaTokenizer(
            os.path.join(assets, "vocabulary.json"), os.path.join(assets, "merges.txt")),
        "xlnet": transformers.XLNetTokenizer.from_pretrained(str(tmp_path)),
    }
    for module in (roberta, xlnet):
        preprocessor = module.savedmodel("preprocessor")
        reference = references[module.family]
        # Pairs, long enough not to truncate (round-robin trimming, as TF-Hub's
        # preprocessors, can differ by one token from `longest_first`).
        packed = preprocessor.bert_pack_inputs(
            [preprocessor.tokenize(tf.constant(first)), preprocessor.tokenize(tf.constant(second))],
            seq_length=tf.constant(80))
        expected = reference(first, second, padding="max_length", max_length=80, return_token_type_ids=True)
        np.testing.assert_array_equal(packed["input_word_ids"], expected["input_ids"])
        np.testing.assert_array_equal(packed["input_mask"], expected["attention_mask"])
        if module.family == "xlnet":  # RoBERTa's type ids are all 0 (transformers' too)
            np.testing.assert_array_equal(packed["input_type_ids"], expected["token_type_ids"])
        # One segment, truncated to the default length (12).
        expected = reference(first, padding="max_length", max_length=12, truncation=True)
        np.testing.assert_array_equal(preprocessor(tf.constant(first))["input_word_ids"], expected["input_ids"])
