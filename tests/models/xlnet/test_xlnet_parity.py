"""Parity with the independent `transformers` XLNet (random tiny weights), parameter counts."""

import types

import numpy as np
import pytest

from keras_pretrain import convert
from keras_pretrain.models.xlnet import XLNetBackbone
from keras_pretrain.models.xlnet import XLNetClassifier
from keras_pretrain.models.xlnet import XLNetPretrainer
from keras_pretrain.models.xlnet import xlnet_parameter_count
from keras_pretrain.models.xlnet.xlnet_convert import hf_config
from keras_pretrain.models.xlnet.xlnet_convert import load_hf_classifier
from tests.testing import TOLERANCE
from tests.testing import max_abs_diff
from tests.testing import randomize_torch_module

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

VOCAB = 50
B, T, P = 2, 8, 3

CONFIGS = {
    "bi": dict(mem_len=5),
    "uni_same_length_clamp": dict(attn_type="uni", same_length=True, clamp_len=3, mem_len=5),
    "bi_data_reuse_all_mems": dict(bi_data=True, reuse_len=4, mem_len=None, ff_activation="gelu_new"),
    "uni_reuse_short_mem": dict(attn_type="uni", mem_len=3, reuse_len=6, ff_activation="relu"),
}


def hf_xlnet_config(**overrides):
    config = dict(vocab_size=VOCAB, d_model=16, n_layer=2, n_head=2, d_inner=24, dropout=0.0)
    config.update(overrides)
    return transformers.XLNetConfig(**config)


def make_data(seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(1, VOCAB, (B, T)).astype("int32")
    seg = np.zeros((B, T), "int32")
    seg[:, 5:] = 1
    pad = np.ones((B, T), "int32")
    pad[0, 6:] = 0  # padding in row 0
    perm = (rng.random((B, T, T)) < 0.3).astype("float32")
    mapping = np.zeros((B, P, T), "float32")
    for b in range(B):
        for k, p in enumerate(rng.choice(T, P, replace=False)):
            mapping[b, k, p] = 1.0
    return ids, seg, pad, perm, mapping


def hf_run(model, rows, **kwargs):
    """Runs `model` per row group (transformers' "uni" masks break for batch > 1) and concatenates."""

    def t(a, dtype=torch.long):
        return torch.tensor(np.ascontiguousarray(a), dtype=dtype)

    outs = []
    with torch.no_grad():
        for r in rows:
            args = {}
            for key, value in kwargs.items():
                if key == "mems":
                    args[key] = [m[:, r] for m in value]
                elif key in ("perm_mask", "target_mapping", "attention_mask"):
                    args[key] = t(value[r], torch.float)
                else:
                    args[key] = t(value[r])
            outs.append(model(**args, use_mems=True, output_hidden_states=True))
    return types.SimpleNamespace(
        hidden_states=[torch.cat([o.hidden_states[i] for o in outs]) for i in range(len(outs[0].hidden_states))],
        mems=[torch.cat([o.mems[i] for o in outs], 1) for i in range(len(outs[0].mems))],
        logits=torch.cat([o.logits for o in outs]),
    )


@pytest.fixture(scope="module", params=sorted(CONFIGS))
def converted(request, tmp_path_factory):
    config = hf_xlnet_config(**CONFIGS[request.param])
    model = randomize_torch_module(transformers.XLNetLMHeadModel(config), seed=1)
    folder = str(tmp_path_factory.mktemp("hf_xlnet"))
    model.save_pretrained(folder)
    pretrainer, _ = convert.from_huggingface(folder, pretrainer=True)
    return request.param, config, model, pretrainer, folder


def test_huggingface_parity_with_mems_perm_mask_targets(converted):
    name, config, model, pretrainer, _ = converted
    assert isinstance(pretrainer, XLNetPretrainer)
    ids, seg, pad, perm, mapping = make_data()
    rows = [slice(b, b + 1) for b in range(B)] if config.attn_type == "uni" else [slice(0, B)]
    # Segment 1: no memory, no targets. Segment 2: the memories of segment 1,
    # a permutation mask and targets (the query stream).
    ref1 = hf_run(model, rows, input_ids=ids, token_type_ids=seg, attention_mask=pad)
    ids2 = ids[:, ::-1]
    ref2 = hf_run(model, rows, input_ids=ids2, token_type_ids=seg, attention_mask=pad, mems=ref1.mems,
                  perm_mask=perm, target_mapping=mapping)
    backbone = pretrainer.backbone
    out1 = backbone({"token_ids": ids, "segment_ids": seg, "padding_mask": pad})
    x2 = {"token_ids": ids2, "segment_ids": seg, "padding_mask": pad, "mems": out1["mems"],
          "perm_mask": perm, "target_mapping": mapping}
    out2 = backbone(x2)
    diffs = {
        "sequence_output": max_abs_diff(out1["sequence_output"], ref1.hidden_states[-1]),
        "mems": max(max_abs_diff(a, b.permute(1, 0, 2)) for a, b in zip(out1["mems"], ref1.mems)),
        "content_with_mems": max_abs_diff(out2["sequence_output"], ref2.hidden_states[-2]),
        "query_with_mems": max_abs_diff(out2["query_output"], ref2.hidden_states[-1]),
        "logits_with_mems": max_abs_diff(pretrainer.lm_head(out2["query_output"]), ref2.logits),
        "new_mems": max(max_abs_diff(a, b.permute(1, 0, 2)) for a, b in zip(out2["mems"], ref2.mems)),
    }
    print(name, "max abs diff", diffs)
    assert [tuple(m.shape) for m in out2["mems"]] == [tuple(m.permute(1, 0, 2).shape) for m in ref2.mems]
    for key, diff in diffs.items():
        assert diff <= TOLERANCE, f"{name} {key}: {diff}"


def test_pretrainer_logits_parity(converted):
    name, config, model, pretrainer, _ = converted
    ids, seg, pad, perm, mapping = make_data(seed=3)
    rows = [slice(b, b + 1) for b in range(B)] if config.attn_type == "uni" else [slice(0, B)]
    ref = hf_run(model, rows, input_ids=ids, token_type_ids=seg, attention_mask=pad, perm_mask=perm,
                 target_mapping=mapping)
    ours = pretrainer({"token_ids": ids, "segment_ids": seg, "padding_mask": pad, "perm_mask": perm,
                       "target_mapping": mapping})
    assert max_abs_diff(ours["plm"], ref.logits) <= TOLERANCE


def test_backbone_conversion_and_parameter_count(converted):
    name, config, model, pretrainer, folder = converted
    backbone, tokenizer = convert.from_huggingface(folder)
    assert isinstance(backbone, XLNetBackbone) and tokenizer is None  # no spiece.model in the folder
    hf_count = sum(p.numel() for p in model.transformer.parameters())
    assert backbone.count_params() == hf_count
    assert hf_count == xlnet_parameter_count(VOCAB, 2, 16, 24)


def test_classifier_parity(tmp_path):
    config = hf_xlnet_config(num_labels=3)
    model = randomize_torch_module(transformers.XLNetForSequenceClassification(config), seed=2)
    folder = str(tmp_path)
    model.save_pretrained(folder)
    from keras_pretrain.checkpoints.huggingface import hf_loader

    classifier = XLNetClassifier(XLNetBackbone(**hf_config(folder)), num_classes=3, dropout=0.0)
    loader = hf_loader(folder)
    load_hf_classifier(classifier, loader)
    loader.finish()
    ids, seg, pad, _, _ = make_data()
    pad = pad[:, ::-1].copy()  # XLNet pads on the left
    with torch.no_grad():
        ref = model(input_ids=torch.tensor(ids, dtype=torch.long), token_type_ids=torch.tensor(seg, dtype=torch.long),
                    attention_mask=torch.tensor(pad, dtype=torch.float)).logits
    ours = classifier({"token_ids": ids, "segment_ids": seg, "padding_mask": pad})
    assert max_abs_diff(ours, ref) <= TOLERANCE


def test_preset_parameter_counts_formula():
    for preset in ("xlnet_base_cased", "xlnet_large_cased"):
        entry = XLNetBackbone.preset_configs[preset]
        c = entry["config"]
        count = xlnet_parameter_count(c["vocabulary_size"], c["num_layers"], c["hidden_dim"], c["intermediate_dim"])
        assert count == entry["params"]
    # Spec: XLNet base is "about 116.7M".
    assert round(XLNetBackbone.preset_configs["xlnet_base_cased"]["params"] / 1e6, 1) == 116.7


@pytest.mark.large
def test_base_preset_matches_reference_port():
    reference = transformers.XLNetModel(transformers.XLNetConfig(
        vocab_size=32000, d_model=768, n_layer=12, n_head=12, d_inner=3072))
    hf_count = sum(p.numel() for p in reference.parameters())
    del reference
    backbone = XLNetBackbone.from_preset("xlnet_base_cased")
    assert backbone.count_params() == hf_count == XLNetBackbone.preset_configs["xlnet_base_cased"]["params"]
