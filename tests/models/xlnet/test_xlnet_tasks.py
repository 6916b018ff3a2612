"""XLNetPretrainer (PLM with memories under fit), XLNetClassifier, XLNetTokenizer."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_pretrain.data.permutation import PermutationLanguageModeling
from keras_pretrain.data.permutation import plm_stream_dataset
from keras_pretrain.models.xlnet import XLNetBackbone
from keras_pretrain.models.xlnet import XLNetClassifier
from keras_pretrain.models.xlnet import XLNetPretrainer
from tests.testing import random_encoder_inputs
from tests.testing import run_task_test
from tests.testing import to_numpy

VOCAB = 24
SEQ, BATCH, MEM = 8, 4, 8


def tiny_backbone(**kwargs):
    config = dict(vocabulary_size=VOCAB, num_layers=2, num_heads=2, hidden_dim=16, intermediate_dim=32,
                  dropout=0.0, mem_len=MEM)
    config.update(kwargs)
    return XLNetBackbone(**config)


def stream_dataset(seed=0):
    # A learnable stream: a fixed random "text" of 40 tokens repeated.
    text = np.random.default_rng(seed).integers(3, VOCAB, 40)
    stream = np.tile(text, 12)
    sampler = PermutationLanguageModeling(SEQ, num_predict=3, plm_probability=0.3, max_span_length=2)
    return stream, plm_stream_dataset(stream, sampler, BATCH, seed=seed)


def test_plm_training_with_memories_lowers_the_loss(tmp_path):
    keras.utils.set_random_seed(0)
    stream, dataset = stream_dataset()
    pretrainer = XLNetPretrainer(tiny_backbone(), memory_batch_size=BATCH)
    pretrainer.compile(optimizer=keras.optimizers.Adam(1e-2))
    # One epoch, materialised: the same targets for every evaluation.
    batches = list(dataset)
    data = tf.data.Dataset.from_tensor_slices({k: np.stack([b[k].numpy() for b in batches]) for k in batches[0]})
    before = pretrainer.evaluate(data, verbose=0, return_dict=True)["loss"]
    history = pretrainer.fit(data, epochs=6, verbose=0)
    after = pretrainer.evaluate(data, verbose=0, return_dict=True)["loss"]
    print("PLM loss", before, "->", after, history.history["loss"])
    assert np.all(np.isfinite(history.history["loss"]))
    assert after < before - 0.2
    assert history.history["loss"][-1] < history.history["loss"][0] - 0.2
    assert np.all(to_numpy(pretrainer.memory_mask) == 1)  # every memory slot filled
    pretrainer.reset_memory()
    assert np.all(to_numpy(pretrainer.memory_mask) == 0)


def test_memory_changes_the_training_step():
    keras.utils.set_random_seed(0)
    _, dataset = stream_dataset(seed=1)
    pretrainer = XLNetPretrainer(tiny_backbone(), memory_batch_size=BATCH)
    pretrainer.compile(optimizer=keras.optimizers.SGD(0.0))  # no update: isolate the memory
    pretrainer.fit(dataset.take(1), verbose=0)
    # Layer 0's memory holds the (dropout-free) embeddings of the batch's last MEM tokens,
    # and the next step's loss depends on it.
    first = next(iter(dataset))["token_ids"].numpy()
    embeddings = to_numpy(pretrainer.backbone.token_embedding(first))[:, -MEM:]
    np.testing.assert_allclose(to_numpy(pretrainer.memory)[0], embeddings, atol=1e-6)
    loss_mem = pretrainer.fit(dataset.skip(1).take(1), verbose=0).history["loss"][0]
    pretrainer.reset_memory()
    loss_none = pretrainer.fit(dataset.skip(1).take(1), verbose=0).history["loss"][0]
    assert abs(loss_mem - loss_none) > 1e-4


def test_pretrainer_round_trip(tmp_path):
    _, dataset = stream_dataset(seed=2)
    pretrainer = XLNetPretrainer(tiny_backbone(), memory_batch_size=BATCH)
    run_task_test(pretrainer, dataset.take(2).cache(), tmp_path)  # cache: one fixed epoch


def test_classifier_fit_and_round_trip(tmp_path):
    backbone = tiny_backbone(mem_len=None)
    classifier = XLNetClassifier(backbone, num_classes=3)
    data = random_encoder_inputs(4, 8, VOCAB, seed=1)
    data["padding_mask"] = data["padding_mask"][:, ::-1].copy()
    labels = np.array([0, 1, 2, 1])
    history = classifier.fit(data, labels, epochs=1, batch_size=4, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    run_task_test(classifier, {**data, "labels": labels}, tmp_path, predict_data=data)


def test_input_mask_is_refused_everywhere():
    """The original XLNet `input_mask` is 1 at padding: never read as our 1-at-real mask."""
    from keras_pretrain.errors import ConfigError

    backbone = tiny_backbone(mem_len=None)
    classifier = XLNetClassifier(backbone, num_classes=2)
    data = random_encoder_inputs(2, 8, VOCAB, seed=3)
    data["padding_mask"] = np.array([[0, 0, 1, 1, 1, 1, 1, 1], [1] * 8], "int32")
    original = {"input_ids": data["token_ids"], "segment_ids": data["segment_ids"],
                "input_mask": 1 - data["padding_mask"], "label_ids": np.array([0, 1])}
    message = "the input 'input_mask' is refused.*padding_mask = 1 - input_mask"
    with pytest.raises(ConfigError, match="XLNetClassifier: " + message):
        classifier.fit({**original, "labels": np.array([0, 1])}, epochs=1, verbose=0)
    with pytest.raises(ConfigError, match="XLNetClassifier: " + message):
        classifier.fit({k: original[k] for k in ("input_ids", "segment_ids", "input_mask")}, np.array([0, 1]),
                       verbose=0)
    with pytest.raises(ConfigError, match="XLNetClassifier: " + message):
        classifier.predict({**data, "input_mask": data["padding_mask"]}, verbose=0)
    with pytest.raises(ConfigError, match="XLNetBackbone: " + message):
        backbone({**data, "input_mask": data["padding_mask"]})
    _, dataset = stream_dataset(seed=3)
    pretrainer = XLNetPretrainer(tiny_backbone())
    renamed = dataset.take(1).map(lambda f: {("input_mask" if k == "padding_mask" else k): v for k, v in f.items()})
    with pytest.raises(ConfigError, match="XLNetPretrainer: " + message):
        pretrainer.fit(renamed, epochs=1, verbose=0)
    # The mask the error asks for gives the outputs of `padding_mask`.
    converted = {"token_ids": original["input_ids"], "segment_ids": original["segment_ids"],
                 "padding_mask": 1 - original["input_mask"]}
    np.testing.assert_allclose(to_numpy(backbone(converted)["sequence_output"]),
                               to_numpy(backbone(data)["sequence_output"]), atol=1e-6)
    assert np.abs(to_numpy(backbone({**data, "padding_mask": np.ones_like(data["padding_mask"])})["sequence_output"])
                  - to_numpy(backbone(data)["sequence_output"])).max() > 1e-3  # the mask matters


@pytest.mark.tf_only
def test_tokenizer_matches_transformers(tmp_path):
    spm = pytest.importorskip("sentencepiece")
    transformers = pytest.importorskip("transformers")
    from keras_pretrain.models.xlnet import XLNetTokenizer

    texts = ["Hello world, this is a test.", "The quick brown fox jumps over the lazy dog.",
             "Café naïve résumé ``quoted'' text", "numbers 1,000 and 9, 10,5", "  extra   spaces here "]
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(texts * 40))
    spm.SentencePieceTrainer.train(
        input=str(corpus), model_prefix=str(tmp_path / "spiece"), vocab_size=60, model_type="unigram",
        control_symbols=["<cls>", "<sep>", "<pad>", "<mask>", "<eod>", "<eop>"], unk_id=0, bos_id=1, eos_id=2,
        pad_id=-1, character_coverage=1.0, minloglevel=2)
    folder = tmp_path / "tokenizer"
    folder.mkdir()
    (folder / "spiece.model").write_bytes((tmp_path / "spiece.model").read_bytes())
    reference = transformers.XLNetTokenizer.from_pretrained(str(folder))
    ours = XLNetTokenizer(proto=str(folder / "spiece.model"))
    queries = texts + ["Unseen wörds, ÀÉÎ and 'quotes'", "hello WORLD"]
    expected = [reference(q, add_special_tokens=False)["input_ids"] for q in queries]
    ids = ours(queries)
    ids = ids.to_list() if hasattr(ids, "to_list") else ids
    assert [list(map(int, row)) for row in ids] == expected
    # convert.from_huggingface's tokenizer reader gives the same tokenizer.
    from keras_pretrain.models.xlnet.xlnet_convert import hf_tokenizer

    again = hf_tokenizer(str(folder))
    again_ids = again(queries)
    again_ids = again_ids.to_list() if hasattr(again_ids, "to_list") else again_ids
    assert [list(map(int, row)) for row in again_ids] == expected
    assert reference.convert_tokens_to_ids(["<cls>", "<sep>", "<pad>", "<mask>"]) == [
        ours.token_id(t) for t in ("<cls>", "<sep>", "<pad>", "<mask>")]
