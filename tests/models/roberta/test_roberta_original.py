"""RoBERTa from a fairseq release (`model.pt`, `dict.txt`, GPT-2's `encoder.json` + `vocab.bpe`).

The releases are written by `make_fairseq_release` in the published layout.
References are independent of our converter: `transformers` models given the
fairseq weights by the mapping of transformers' historical
`convert_roberta_original_pytorch_checkpoint_to_pytorch.py` (written out
below), and fairseq's `roberta.encode` (GPT-2 BPE ids from transformers'
`GPT2Tokenizer`, looked up in fairseq's dictionary order, written out below).
"""

import argparse
import io
import os
import pickle
import shutil

import numpy as np
import pytest

from keras_pretrain.checkpoints.torch_pickle import Placeholder
from keras_pretrain.checkpoints.torch_pickle import RestrictedUnpickler
from keras_pretrain.checkpoints.torch_pickle import load as load_pickle
from keras_pretrain.errors import CheckpointFormatError
from keras_pretrain.models.roberta import RobertaBackbone
from keras_pretrain.models.roberta import RobertaPretrainer
from keras_pretrain.models.roberta import RobertaTokenizer
from keras_pretrain.models.roberta.roberta_convert import convert_fairseq
from keras_pretrain.models.roberta.roberta_convert import fairseq_tokenizer
from keras_pretrain.models.roberta.roberta_convert import is_fairseq_release
from keras_pretrain.models.roberta.roberta_convert import read_fairseq_dictionary
from tests.models.roberta import make_fairseq_release as make
from tests.models.roberta.fixtures import TEXTS
from tests.testing import TOLERANCE
from tests.testing import max_abs_diff
from tests.testing import to_numpy
from tests.testing import torch_inputs

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

VARIANTS = ("args", "in_proj", "cfg")
PAD = 1


@pytest.fixture(scope="module")
def releases(tmp_path_factory):
    root = tmp_path_factory.mktemp("fairseq")
    return {v: make.build(str(root / v), variant=v, archive=v == "args") for v in VARIANTS}


# --- The independent references ----------------------------------------------


def hf_config(release):
    c = release.config
    return transformers.RobertaConfig(
        vocab_size=release.vocabulary_size, hidden_size=c["encoder_embed_dim"],
        num_hidden_layers=c["encoder_layers"], num_attention_heads=c["encoder_attention_heads"],
        intermediate_size=c["encoder_ffn_embed_dim"], max_position_embeddings=c["max_positions"] + 2,
        type_vocab_size=1, layer_norm_eps=1e-5, pad_token_id=PAD, hidden_act="gelu",
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
    )


def historical_mapping(weights, num_layers, masked_lm):
    """transformers' names <- fairseq's, as `convert_roberta_original_pytorch_checkpoint_to_pytorch.py`."""
    s, h = "decoder.sentence_encoder.", "decoder.lm_head."
    r = "roberta." if masked_lm else ""
    embedding = weights[s + "embed_tokens.weight"]
    state = {
        r + "embeddings.word_embeddings.weight": embedding,
        r + "embeddings.position_embeddings.weight": weights[s + "embed_positions.weight"],
        r + "embeddings.token_type_embeddings.weight": np.zeros((1, embedding.shape[1]), "float32"),
        r + "embeddings.LayerNorm.weight": weights[s + "emb_layer_norm.weight"],
        r + "embeddings.LayerNorm.bias": weights[s + "emb_layer_norm.bias"],
    }
    block = {
        "attention.self.query": "self_attn.q_proj", "attention.self.key": "self_attn.k_proj",
        "attention.self.value": "self_attn.v_proj", "attention.output.dense": "self_attn.out_proj",
        "attention.output.LayerNorm": "self_attn_layer_norm", "intermediate.dense": "fc1",
        "output.dense": "fc2", "output.LayerNorm": "final_layer_norm",
    }
    for i in range(num_layers):
        for theirs, fairseq in block.items():
            for kind in ("weight", "bias"):
                state[f"{r}encoder.layer.{i}.{theirs}.{kind}"] = weights[f"{s}layers.{i}.{fairseq}.{kind}"]
    if masked_lm:
        for part in ("dense", "layer_norm"):
            for kind in ("weight", "bias"):
                state[f"lm_head.{part}.{kind}"] = weights[f"{h}{part}.{kind}"]
        state["lm_head.decoder.weight"] = embedding  # tied, as fairseq's
        state["lm_head.bias"] = state["lm_head.decoder.bias"] = weights[h + "bias"]
    return {name: torch.tensor(value) for name, value in state.items()}


def reference_model(release, masked_lm):
    config = hf_config(release)
    if masked_lm:
        model = transformers.RobertaForMaskedLM(config)
    else:
        model = transformers.RobertaModel(config, add_pooling_layer=False)
    model.load_state_dict(historical_mapping(release.weights, config.num_hidden_layers, masked_lm), strict=True)
    return model.eval()


def gpt2_tokenizer(release, folder):
    """transformers' GPT-2 tokenizer from the release's encoder.json + vocab.bpe (GPT-2's
    vocab.json + merges.txt under their original names)."""
    os.makedirs(folder, exist_ok=True)
    shutil.copy(release.encoder_json, os.path.join(folder, "vocab.json"))
    shutil.copy(release.vocab_bpe, os.path.join(folder, "merges.txt"))
    return transformers.GPT2Tokenizer.from_pretrained(folder)


def fairseq_encode(text, gpt2, dict_txt):
    """fairseq's `roberta.encode(text)`: `<s>`, GPT-2 BPE ids through the fairseq
    dictionary (`<s> <pad> </s> <unk>`, dict.txt lines, `<mask>`; absent -> `<unk>`), `</s>`."""
    with open(dict_txt, encoding="utf-8") as f:
        symbols = ["<s>", "<pad>", "</s>", "<unk>"] + [line.rsplit(" ", 1)[0] for line in f.read().splitlines()]
    index = {symbol: i for i, symbol in enumerate(symbols + ["<mask>"])}
    return [index["<s>"]] + [index.get(str(i), index["<unk>"]) for i in gpt2.encode(text)] + [index["</s>"]]


def inputs(vocabulary_size, batch=2, length=12, pad_from=8, seed=0):
    rng = np.random.default_rng(seed)
    token_ids = rng.integers(4, vocabulary_size, (batch, length)).astype("int32")
    token_ids[:, 0] = 0
    padding_mask = np.ones((batch, length), "int32")
    padding_mask[0, pad_from:] = 0
    token_ids[0, pad_from:] = PAD
    return {"token_ids": token_ids, "padding_mask": padding_mask}


# --- (a) parity ----------------------------------------------------------------


@pytest.mark.parametrize("variant", VARIANTS)
def test_pretrainer_parity(releases, variant):
    release = releases[variant]
    pretrainer, tokenizer = convert_fairseq(release.folder, pretrainer=True)
    assert isinstance(pretrainer, RobertaPretrainer) and tokenizer is not None
    data = inputs(release.vocabulary_size)
    positions = np.array([[1, 3, 7], [0, 6, 11]], "int32")
    with torch.no_grad():
        out = reference_model(release, masked_lm=True)(**torch_inputs(data), output_hidden_states=True)
    logits = np.take_along_axis(out.logits.numpy(), positions[..., None], axis=1)
    ours = pretrainer({**data, "masked_lm_positions": positions})["mlm"]
    hidden = pretrainer.backbone(data)["sequence_output"]
    real = data["padding_mask"].astype(bool)
    diff_hidden = max_abs_diff(to_numpy(hidden)[real], out.hidden_states[-1].numpy()[real])
    diff_mlm = max_abs_diff(ours, logits)
    print(f"{variant}: max abs diff hidden {diff_hidden:.2e}, MLM logits {diff_mlm:.2e}")
    assert diff_hidden <= TOLERANCE and diff_mlm <= TOLERANCE


def test_backbone_parity(releases):
    release = releases["args"]
    backbone, _ = convert_fairseq(release.model_pt)  # model.pt itself, dict.txt beside it
    assert isinstance(backbone, RobertaBackbone) and not backbone.use_pooler
    assert backbone.max_sequence_length == release.config["max_positions"] + 2
    data = inputs(release.vocabulary_size, seed=1)
    with torch.no_grad():
        out = reference_model(release, masked_lm=False)(**torch_inputs(data), output_hidden_states=True)
    ours = backbone(data)
    real = data["padding_mask"].astype(bool)
    diff = max(max_abs_diff(to_numpy(a)[real], b.numpy()[real])
               for a, b in zip(ours["encoder_outputs"], out.hidden_states[1:]))
    print(f"backbone: max abs diff over the blocks' outputs {diff:.2e}")
    assert diff <= TOLERANCE


# --- (b) tokenizer ids == fairseq's ----------------------------------------------


TOKENIZER_TEXTS = TEXTS + ["the quick fox", " fox"]


@pytest.fixture(scope="module")
def expected_ids(releases, tmp_path_factory):
    """fairseq's ids of TOKENIZER_TEXTS for the "args" release."""
    release = releases["args"]
    gpt2 = gpt2_tokenizer(release, str(tmp_path_factory.mktemp("gpt2")))
    expected = [fairseq_encode(text, gpt2, release.dict_txt) for text in TOKENIZER_TEXTS]
    # make.ABSENT ("Ġfox") has a GPT-2 id that dict.txt lacks: fairseq gives <unk> (3).
    assert gpt2.tokenize(" fox") == [make.ABSENT] and expected[-1] == [0, 3, 2]
    assert all(len(ids) > 3 for ids in expected[:-1])
    return expected


def test_tokenizer_ids_are_fairseq_ids(releases, expected_ids):
    release = releases["args"]
    _, tokenizer = convert_fairseq(release.folder)
    assert [[0] + list(to_numpy(ids)) + [2] for ids in tokenizer(TOKENIZER_TEXTS)] == expected_ids
    assert tokenizer.vocabulary_size() == release.vocabulary_size
    assert tokenizer.token_to_id("<mask>") == release.vocabulary_size - 1
    assert [tokenizer.token_to_id(t) for t in ("<s>", "<pad>", "</s>", "<unk>")] == [0, 1, 2, 3]


@pytest.mark.tf_only  # the tokenizer's TensorFlow path: the same on every backend
def test_tokenizer_ids_in_tf_data(releases, expected_ids):
    import tensorflow as tf

    _, tokenizer = convert_fairseq(releases["args"].folder)
    dataset = tf.data.Dataset.from_tensor_slices(TOKENIZER_TEXTS).map(tokenizer)
    assert [[0] + list(ids.numpy()) + [2] for ids in dataset] == expected_ids


def test_complete_dictionary_gives_plain_tokenizer(releases, tmp_path):
    """The published dict.txt files hold every GPT-2 id: a plain RobertaTokenizer, fairseq's ids."""
    release = releases["args"]
    dict_txt = tmp_path / "dict.txt"
    absent_id = make.gpt2_encoder()[make.ABSENT]
    dict_txt.write_text("\n".join([f"{absent_id} 7"] + make.dictionary_lines()) + "\n", encoding="utf-8")
    indices, size = read_fairseq_dictionary(str(dict_txt))
    tokenizer = fairseq_tokenizer(indices, size, release.encoder_json, release.vocab_bpe, str(dict_txt))
    assert type(tokenizer) is RobertaTokenizer and tokenizer.vocabulary_size() == size
    gpt2 = gpt2_tokenizer(release, str(tmp_path / "gpt2"))
    expected = [fairseq_encode(text, gpt2, str(dict_txt)) for text in TOKENIZER_TEXTS]
    assert expected[-1] == [0, 4, 2]
    assert [[0] + list(to_numpy(ids)) + [2] for ids in tokenizer(TOKENIZER_TEXTS)] == expected


def test_dictionary_reading(tmp_path):
    good = tmp_path / "dict.txt"
    good.write_text("13 100\n262 90\n13 5 #fairseq:overwrite\nmadeupword0000 0\n", encoding="utf-8")
    indices, size = read_fairseq_dictionary(str(good))
    # fairseq: the overwrite re-adds '13' at a new id (6); <mask> comes last.
    assert indices == {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3, "13": 6, "262": 5,
                       "madeupword0000": 7, "<mask>": 8} and size == 9
    for text, what in (("13 100\nhello 5\n", "line 2"), ("13 100\n262\n", "line 2"), ("13 1\n13 2\n", "duplicate")):
        good.write_text(text, encoding="utf-8")
        with pytest.raises(CheckpointFormatError, match=what) as error:
            read_fairseq_dictionary(str(good))
        assert str(good) in str(error.value)


# --- (c) safety: pickled code never runs --------------------------------------------


class Payload:
    """Unpickled by a plain `pickle.load`, this would run `touch marker`."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_pickled_code_never_runs(tmp_path):
    marker = tmp_path / "marker"
    # A payload beside the weights: the release loads, the payload stays an inert placeholder.
    release = make.build(str(tmp_path / "a"), extra={"extra_state": {"meters": Payload(marker)}})
    assert any("system" in g for g in torch.serialization.get_unsafe_globals_in_checkpoint(release.model_pt))
    state = load_pickle(release.model_pt)
    assert isinstance(state["extra_state"]["meters"], Placeholder) and not marker.exists()
    backbone, _ = convert_fairseq(release.folder)
    assert isinstance(backbone, RobertaBackbone) and not marker.exists()
    # A payload in place of a weight: refused, naming the file.
    name = "decoder.sentence_encoder.layers.0.fc1.bias"
    bad = make.build(str(tmp_path / "b"), edit=lambda state: state.__setitem__(name, Payload(marker)))
    with pytest.raises(CheckpointFormatError, match="not tensors") as error:
        convert_fairseq(bad.folder)
    assert bad.model_pt in str(error.value) and name in str(error.value) and not marker.exists()
    # Setting state on a class (here argparse.Namespace.__eq__ = os.system) is refused.
    patch = b"\x80\x02cargparse\nNamespace\n}X\x06\x00\x00\x00__eq__cposix\nsystem\nsb."
    equal = argparse.Namespace.__eq__
    with pytest.raises(pickle.UnpicklingError, match="refusing"):
        RestrictedUnpickler(io.BytesIO(patch)).load()
    assert argparse.Namespace.__eq__ is equal


def test_unreadable_model_pt(tmp_path):
    release = make.build(str(tmp_path))
    data = open(release.model_pt, "rb").read()
    for content in (b"not a torch file", data[: len(data) // 2]):
        with open(release.model_pt, "wb") as f:
            f.write(content)
        with pytest.raises(CheckpointFormatError, match="not a readable PyTorch checkpoint") as error:
            convert_fairseq(release.folder)
        assert release.model_pt in str(error.value)
    os.remove(release.dict_txt)
    with pytest.raises(CheckpointFormatError, match="dict.txt not found") as error:
        convert_fairseq(release.folder)
    assert release.dict_txt in str(error.value)


# --- (d) every problem at once --------------------------------------------------------


def test_missing_and_misshaped_listed_together(tmp_path):
    missing = "decoder.sentence_encoder.layers.1.fc2.bias"
    misshaped = "decoder.sentence_encoder.layers.0.fc1.weight"

    def damage(state):
        del state[missing]
        state[misshaped] = state[misshaped].T.contiguous()

    release = make.build(str(tmp_path), edit=damage)
    with pytest.raises(CheckpointFormatError) as error:
        convert_fairseq(release.folder, pretrainer=True)
    message = str(error.value)
    print(message)
    assert release.model_pt in message and missing in message and misshaped in message
    assert "2 problem(s)" in message


# --- (e) the archive is the folder ------------------------------------------------------


def test_archive_equals_folder(releases, tmp_path):
    release = releases["args"]
    assert is_fairseq_release(release.folder) and is_fairseq_release(release.model_pt)
    assert is_fairseq_release(release.archive) and is_fairseq_release(os.path.dirname(release.folder))
    assert not is_fairseq_release(release.encoder_json) and not is_fairseq_release(str(tmp_path))
    from_folder, folder_tokenizer = convert_fairseq(release.folder, pretrainer=True)
    from_archive, archive_tokenizer = convert_fairseq(
        release.archive, pretrainer=True, encoder_json=release.encoder_json, vocab_bpe=release.vocab_bpe,
        extract_to=str(tmp_path / "extracted"),
    )
    assert sorted(os.listdir(tmp_path / "extracted" / "roberta.base")) == ["NOTE", "dict.txt", "model.pt"]
    assert len(from_folder.weights) == len(from_archive.weights)
    for a, b in zip(from_folder.weights, from_archive.weights):
        assert a.path == b.path and np.array_equal(to_numpy(a), to_numpy(b))
    assert [list(to_numpy(x)) for x in archive_tokenizer(TEXTS)] == [list(to_numpy(x)) for x in folder_tokenizer(TEXTS)]
    # The archive holds no GPT-2 files: no tokenizer unless they are given.
    _, tokenizer = convert_fairseq(release.archive)
    assert tokenizer is None
