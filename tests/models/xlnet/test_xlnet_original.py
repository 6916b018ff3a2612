"""The original TF1 XLNet release (`xlnet_cased_L-*.zip`) -> ours, against `transformers`.

The reference is `transformers`' `XLNetModel` / `XLNetLMHeadModel` with
`ff_activation="gelu_new"` (the tanh form the original computes), its weights
placed from the same TF1 arrays by the name map of transformers' historical
TF->PyTorch conversion (`build_tf_xlnet_to_pytorch_map`), written again here:
q/k/v/o/r kernels as they are, feed-forward kernels transposed for torch
`Linear`, the stacked `[L, ...]` biases and `seg_embed` sliced per layer.
transformers always keeps one set of biases per layer, so the shared biases
of an `untie_r=false` release are broadcast to every layer of the reference.
"""

import os
import shutil

import numpy as np
import pytest

from keras_pretrain import convert
from keras_pretrain.errors import CheckpointFormatError
from keras_pretrain.errors import ConfigError
from keras_pretrain.models.xlnet import XLNetBackbone
from keras_pretrain.models.xlnet import XLNetPretrainer
from keras_pretrain.models.xlnet.xlnet_convert import is_tf1_xlnet
from keras_pretrain.models.xlnet.xlnet_convert import tf1_config
from keras_pretrain.models.xlnet.xlnet_convert import tf1_lowercase
from tests.models.xlnet import make_tf1_release
from tests.testing import TOLERANCE
from tests.testing import max_abs_diff
from tests.testing import to_numpy

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

B, T, P = 2, 8, 3
P_ = "model/transformer/"


def load(path, **kwargs):
    return convert.from_tf1_checkpoint(path, family="xlnet", **kwargs)


@pytest.fixture(scope="module")
def releases(tmp_path_factory):
    """The tiny release (per-layer biases, with its .zip) and one with shared biases."""
    untied = make_tf1_release.build(str(tmp_path_factory.mktemp("untied")), seed=1, archive=True)
    tied = make_tf1_release.build(str(tmp_path_factory.mktemp("tied")), seed=2, untie_r=False)
    return {"untied": untied, "tied": tied}


@pytest.fixture(scope="module")
def backbone(releases):
    model, _ = load(releases["untied"].folder)
    return model


def reference(release, lm_head, **run_config):
    """transformers' model with the release's arrays placed by an independent map."""
    c = release.config
    config = transformers.XLNetConfig(
        vocab_size=c["n_token"], d_model=c["d_model"], n_layer=c["n_layer"], n_head=c["n_head"],
        d_inner=c["d_inner"], ff_activation="gelu_new", dropout=0.0, layer_norm_eps=1e-12, **run_config,
    )
    model = (transformers.XLNetLMHeadModel if lm_head else transformers.XLNetModel)(config)
    a = release.arrays

    def put(param, value):
        assert tuple(param.shape) == value.shape, (tuple(param.shape), value.shape)
        param.copy_(torch.from_numpy(np.ascontiguousarray(value)))

    with torch.no_grad():
        t = model.transformer if lm_head else model
        put(t.word_embedding.weight, a[P_ + "word_embedding/lookup_table"])
        put(t.mask_emb, a[P_ + "mask_emb/mask_emb"])
        for i, layer in enumerate(t.layer):
            s = f"{P_}layer_{i}/"
            for name in ("q", "k", "v", "o", "r"):
                put(getattr(layer.rel_attn, name), a[f"{s}rel_attn/{name}/kernel"])
            for name in ("r_w_bias", "r_r_bias", "r_s_bias"):
                value = a[P_ + name]
                put(getattr(layer.rel_attn, name), value[i] if value.ndim == 3 else value)
            put(layer.rel_attn.seg_embed, a[P_ + "seg_embed"][i])
            put(layer.rel_attn.layer_norm.weight, a[s + "rel_attn/LayerNorm/gamma"])
            put(layer.rel_attn.layer_norm.bias, a[s + "rel_attn/LayerNorm/beta"])
            for name in ("layer_1", "layer_2"):
                put(getattr(layer.ff, name).weight, a[f"{s}ff/{name}/kernel"].T)
                put(getattr(layer.ff, name).bias, a[f"{s}ff/{name}/bias"])
            put(layer.ff.layer_norm.weight, a[s + "ff/LayerNorm/gamma"])
            put(layer.ff.layer_norm.bias, a[s + "ff/LayerNorm/beta"])
        if lm_head:
            put(model.lm_loss.weight, a[P_ + "word_embedding/lookup_table"])  # tied
            put(model.lm_loss.bias, a["model/lm_loss/bias"])
    return model.eval()


def make_inputs(vocabulary_size, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(9, vocabulary_size, (B, T)).astype("int32")
    seg = np.zeros((B, T), "int32")
    seg[:, 5:] = 1
    pad = np.ones((B, T), "int32")
    pad[0, :2] = 0  # XLNet pads on the left
    perm = (rng.random((B, T, T)) < 0.3).astype("float32")
    mapping = np.zeros((B, P, T), "float32")
    for b in range(B):
        mapping[b, np.arange(P), rng.choice(T, P, replace=False)] = 1.0
    return ids, seg, pad, perm, mapping


def run_reference(model, ids, seg, pad, mems=None, **extra):
    with torch.no_grad():
        return model(
            input_ids=torch.tensor(ids, dtype=torch.long), token_type_ids=torch.tensor(seg, dtype=torch.long),
            attention_mask=torch.tensor(pad, dtype=torch.float), mems=mems, use_mems=True,
            **{k: torch.tensor(v) for k, v in extra.items()},
        )


def test_backbone_parity(releases, backbone):
    release = releases["untied"]
    assert isinstance(backbone, XLNetBackbone)
    assert backbone.activation == "gelu_approximate" and backbone.untie_r
    assert (backbone.mem_len, backbone.reuse_len, backbone.bi_data, backbone.clamp_len,
            backbone.same_length, backbone.attn_type) == (None, None, False, -1, False, "bi")
    ids, seg, pad, _, _ = make_inputs(release.config["n_token"])
    ref = run_reference(reference(release, lm_head=False), ids, seg, pad)
    ours = backbone({"token_ids": ids, "segment_ids": seg, "padding_mask": pad})
    diff = max_abs_diff(ours["sequence_output"], ref.last_hidden_state)
    print(f"tf1 xlnet backbone: max abs diff {diff:.3g}")
    assert diff <= TOLERANCE


def test_backbone_parity_with_run_config_and_memories(releases):
    release = releases["untied"]
    run_config = dict(mem_len=4, clamp_len=3, bi_data=True)
    model, _ = load(release.folder, **run_config)
    assert (model.mem_len, model.clamp_len, model.bi_data) == (4, 3, True)
    hf = reference(release, lm_head=False, **run_config)
    ids, seg, pad, _, _ = make_inputs(release.config["n_token"], seed=1)
    ids2 = ids[:, ::-1].copy()
    ref1 = run_reference(hf, ids, seg, pad)
    ref2 = run_reference(hf, ids2, seg, pad, mems=ref1.mems)
    out1 = model({"token_ids": ids, "segment_ids": seg, "padding_mask": pad})
    out2 = model({"token_ids": ids2, "segment_ids": seg, "padding_mask": pad, "mems": out1["mems"]})
    diffs = {
        "segment_1": max_abs_diff(out1["sequence_output"], ref1.last_hidden_state),
        "mems": max(max_abs_diff(a, b.permute(1, 0, 2)) for a, b in zip(out1["mems"], ref1.mems)),
        "segment_2_with_mems": max_abs_diff(out2["sequence_output"], ref2.last_hidden_state),
    }
    print("tf1 xlnet backbone, mem_len=4 clamp_len=3 bi_data: max abs diff", diffs)
    assert [tuple(m.shape) for m in out1["mems"]] == [(B, 4, release.config["d_model"])] * 2
    assert max(diffs.values()) <= TOLERANCE, diffs


@pytest.mark.parametrize("kind", ["untied", "tied"])
def test_pretrainer_parity(releases, kind):
    release = releases[kind]
    pretrainer, _ = load(release.folder, pretrainer=True)
    assert isinstance(pretrainer, XLNetPretrainer)
    assert (pretrainer.backbone.shared_biases is None) == (kind == "untied")
    ids, seg, pad, perm, mapping = make_inputs(release.config["n_token"], seed=2)
    ref = run_reference(reference(release, lm_head=True), ids, seg, pad, perm_mask=perm, target_mapping=mapping)
    ours = pretrainer({"token_ids": ids, "segment_ids": seg, "padding_mask": pad, "perm_mask": perm,
                       "target_mapping": mapping})
    diff = max_abs_diff(ours["plm"], ref.logits)
    print(f"tf1 xlnet pretrainer ({kind} r biases): max abs diff of the LM logits {diff:.3g}")
    assert float(np.abs(to_numpy(ours["plm"])).max()) > 1.0  # the comparison means something
    assert diff <= TOLERANCE


def test_archive_equals_folder_and_tokenizer(releases, backbone):
    release = releases["untied"]
    assert os.path.basename(release.archive) == "xlnet_cased_L-2_H-16_A-2.zip"
    from_archive, tokenizer = load(release.archive)
    assert len(from_archive.weights) == len(backbone.weights)
    for a, b in zip(from_archive.weights, backbone.weights):
        same_place = a.path.split("/", 1)[1] == b.path.split("/", 1)[1]  # the models' own names differ
        assert same_place and np.array_equal(to_numpy(a), to_numpy(b)), a.path
    assert not tokenizer.lowercase  # cased by default (release name, and the published default)
    ids = [to_numpy(tokenizer(text)).tolist() for text in ("Hello World", "hello world")]
    assert ids[0] != ids[1]
    assert tokenizer.token_id("<cls>") == 3 and tokenizer.token_id("<mask>") == 6
    _, lowered = load(release.archive, lowercase=True)
    assert lowered.lowercase


def test_finetuned_checkpoint_loads_as_backbone(releases, tmp_path, capsys):
    """Classifier heads are skipped (printed); a fine-tuned checkpoint has no `mask_emb`."""
    release = releases["untied"]
    folder = str(tmp_path / "xlnet_cased_finetuned")
    shutil.copytree(release.folder, folder, ignore=shutil.ignore_patterns("xlnet_model.ckpt*"))
    arrays = {k: v for k, v in release.arrays.items()
              if k not in ("model/lm_loss/bias", P_ + "mask_emb/mask_emb")}
    d = release.config["d_model"]
    arrays.update({
        "model/sequnece_summary/summary/kernel": np.ones((d, d), "float32"),
        "model/sequnece_summary/summary/bias": np.ones((d,), "float32"),
        "model/classification_sts-b/logit/kernel": np.ones((d, 1), "float32"),
        "model/classification_sts-b/logit/bias": np.ones((1,), "float32"),
    })
    make_tf1_release.write_checkpoint(arrays, os.path.join(folder, "xlnet_model.ckpt"))
    model, _ = load(folder)
    printed = capsys.readouterr().out
    assert "model/classification_sts-b/logit/kernel" in printed and "mask_emb" in printed
    word = release.arrays[P_ + "word_embedding/lookup_table"]
    assert np.array_equal(to_numpy(model.token_embedding.embeddings), word)
    with pytest.raises(CheckpointFormatError, match="mask_emb"):
        load(folder, pretrainer=True)


def test_missing_and_misshaped_variables_are_listed_together(releases, tmp_path):
    release = releases["untied"]
    missing = P_ + "layer_1/rel_attn/q/kernel"
    misshaped = P_ + "layer_0/ff/layer_2/bias"
    arrays = {k: v for k, v in release.arrays.items() if k != missing}
    arrays[misshaped] = np.zeros((3,), "float32")
    folder = str(tmp_path / "xlnet_cased_L-2_H-16_A-2")
    shutil.copytree(release.folder, folder, ignore=shutil.ignore_patterns("xlnet_model.ckpt*"))
    prefix = make_tf1_release.write_checkpoint(arrays, os.path.join(folder, "xlnet_model.ckpt"))
    with pytest.raises(CheckpointFormatError) as error:
        load(folder, pretrainer=True)
    message = str(error.value)
    assert prefix in message and missing in message and misshaped in message
    assert "missing variable" in message and "shape mismatch" in message


def test_shared_biases_against_untied_config(releases, tmp_path):
    """A `[N, Dh]` bias under `untie_r: true` is reported as such."""
    release = releases["tied"]
    folder = str(tmp_path / "xlnet_cased_L-2_H-16_A-2")
    shutil.copytree(release.folder, folder)
    make_tf1_release.write_config({**release.config, "untie_r": True}, os.path.join(folder, "xlnet_config.json"))
    with pytest.raises(CheckpointFormatError, match="r_w_bias.*untie_r=false"):
        load(folder)


def test_bad_config_names_the_file(releases, tmp_path):
    release = releases["untied"]
    folder = str(tmp_path / "xlnet_cased_L-2_H-16_A-2")
    shutil.copytree(release.folder, folder)
    config_path = os.path.join(folder, "xlnet_config.json")
    make_tf1_release.write_config({**release.config, "d_head": 5}, config_path)
    with pytest.raises(ConfigError, match="d_head 5 \\* n_head 2 != d_model 16") as error:
        load(folder)
    assert config_path in str(error.value)


def test_config_mapping_and_detection():
    config = dict(make_tf1_release.CONFIG, n_token=32000, untie_r=True)
    kwargs = tf1_config(config, "xlnet_config.json", clamp_len=3)
    assert kwargs["activation"] == "gelu_approximate" and kwargs["clamp_len"] == 3
    assert kwargs["vocabulary_size"] == 32000 and kwargs["layer_norm_epsilon"] == 1e-12
    assert tf1_config({**config, "ff_activation": "relu"}, "x")["activation"] == "relu"
    with pytest.raises(ConfigError, match="somewhere/xlnet_config.json.*'swish'"):
        tf1_config({**config, "ff_activation": "swish"}, "somewhere/xlnet_config.json")
    with pytest.raises(ConfigError, match="n_token"):
        tf1_config({k: v for k, v in config.items() if k != "n_token"}, "xlnet_config.json")
    assert is_tf1_xlnet(["global_step", P_ + "seg_embed"])
    assert not is_tf1_xlnet(["global_step", "bert/embeddings/word_embeddings"])


def test_casing_from_release_name():
    """Only `cased` / `uncased` in the name count; else cased (Chinese XLNet included)."""
    assert tf1_lowercase("spiece.model", None, ("/x/xlnet_cased_L-12_H-768_A-12",)) is False
    assert tf1_lowercase("spiece.model", None, ("/x/xlnet_uncased_L-2_H-16_A-2.zip",)) is True
    assert tf1_lowercase("spiece.model", None, ("/x/chinese_xlnet_base_L-12_H-768_A-12", "/x/my_run")) is False
    assert tf1_lowercase("spiece.model", True, ("/x/xlnet_cased_L-12_H-768_A-12",)) is True


# run_squad.py's head under the authors' names (function_builder.get_qa_outputs: tf.layers.dense "dense",
# "dense_0" / "dense_1", contrib layer_norm "LayerNorm"), kernels [in, out].
def squad_head_arrays(d, seed=3):
    rng = np.random.default_rng(seed)

    def normal(*shape):
        return (0.3 * rng.standard_normal(shape)).astype("float32")

    return {
        "start_logits/dense/kernel": normal(d, 1), "start_logits/dense/bias": normal(1),
        "end_logits/dense_0/kernel": normal(2 * d, d), "end_logits/dense_0/bias": normal(d),
        "end_logits/LayerNorm/gamma": 1 + normal(d), "end_logits/LayerNorm/beta": normal(d),
        "end_logits/dense_1/kernel": normal(d, 1), "end_logits/dense_1/bias": normal(1),
        "answer_class/dense_0/kernel": normal(2 * d, d), "answer_class/dense_0/bias": normal(d),
        "answer_class/dense_1/kernel": normal(d, 1),
    }


def test_squad_checkpoint_loads_its_answer_class_head(releases, tmp_path, capsys):
    """A run_squad.py checkpoint is `BeamQuestionAnswering` with its head: equal to transformers'
    `XLNetForQuestionAnswering` holding the same arrays (placed by the map below); `task=False` the backbone."""
    from keras_pretrain.tasks import BeamQuestionAnswering

    release = releases["untied"]
    folder = str(tmp_path / "xlnet_cased_squad")
    shutil.copytree(release.folder, folder, ignore=shutil.ignore_patterns("xlnet_model.ckpt*"))
    head = squad_head_arrays(release.config["d_model"])
    arrays = {k: v for k, v in release.arrays.items() if k not in ("model/lm_loss/bias", P_ + "mask_emb/mask_emb")}
    make_tf1_release.write_checkpoint({**arrays, **head}, os.path.join(folder, "xlnet_model.ckpt"))
    model, _ = convert.load(folder, start_n_top=3, end_n_top=2)
    assert "BeamQuestionAnswering" in capsys.readouterr().out
    assert isinstance(model, BeamQuestionAnswering) and (model.start_n_top, model.end_n_top) == (3, 2)

    c = release.config
    config = transformers.XLNetConfig(
        vocab_size=c["n_token"], d_model=c["d_model"], n_layer=c["n_layer"], n_head=c["n_head"],
        d_inner=c["d_inner"], ff_activation="gelu_new", dropout=0.0, layer_norm_eps=1e-12,
        start_n_top=3, end_n_top=2)
    hf = transformers.XLNetForQuestionAnswering(config).eval()
    base = reference(release, lm_head=False)
    hf.transformer.load_state_dict(base.state_dict())
    with torch.no_grad():
        for module, name in ((hf.start_logits.dense, "start_logits/dense"),
                             (hf.end_logits.dense_0, "end_logits/dense_0"),
                             (hf.end_logits.dense_1, "end_logits/dense_1"),
                             (hf.answer_class.dense_0, "answer_class/dense_0")):
            module.weight.copy_(torch.from_numpy(head[name + "/kernel"].T.copy()))
            module.bias.copy_(torch.from_numpy(head[name + "/bias"]))
        hf.end_logits.LayerNorm.weight.copy_(torch.from_numpy(head["end_logits/LayerNorm/gamma"]))
        hf.end_logits.LayerNorm.bias.copy_(torch.from_numpy(head["end_logits/LayerNorm/beta"]))
        hf.answer_class.dense_1.weight.copy_(torch.from_numpy(head["answer_class/dense_1/kernel"].T.copy()))
    ids, seg, pad, _, _ = make_inputs(c["n_token"])
    p_mask = np.zeros((B, T), "float32")
    p_mask[:, -2:] = 1.0
    cls_index = np.array([T - 1, T - 1], "int32")
    with torch.no_grad():
        theirs = hf(input_ids=torch.tensor(ids, dtype=torch.long), token_type_ids=torch.tensor(seg, dtype=torch.long),
                    attention_mask=torch.tensor(pad, dtype=torch.float), p_mask=torch.tensor(p_mask),
                    cls_index=torch.tensor(cls_index, dtype=torch.long))
    ours = model({"token_ids": ids, "segment_ids": seg, "padding_mask": pad, "p_mask": p_mask, "cls_index": cls_index})
    assert np.array_equal(to_numpy(ours["start_top_index"]), theirs.start_top_index.numpy())
    their_end = theirs.end_top_log_probs.numpy().reshape(B, 2, 3).transpose(0, 2, 1).reshape(B, 6)
    diff = max(max_abs_diff(np.exp(to_numpy(ours["start_top_log_probs"])), theirs.start_top_log_probs.numpy()),
               max_abs_diff(np.exp(to_numpy(ours["end_top_log_probs"])), their_end),
               max_abs_diff(ours["cls_logits"], theirs.cls_logits.numpy()))
    print(f"tf1 xlnet squad head: max abs diff {diff:.3g}")
    assert diff <= TOLERANCE

    backbone, _ = convert.load(folder, task=False)
    assert isinstance(backbone, XLNetBackbone)
    assert "answer_class/dense_0/kernel" in capsys.readouterr().out  # skipped, said so
