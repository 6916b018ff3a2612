"""Hostile and broken releases given to the importers (issue 44, items 1, 4 and 5).

One case per input: a configuration that disagrees with its checkpoint (a million layers, a billion-row
vocabulary), forged `.npy` headers, a `.npz` saved as `.npy`, a deeply nested pickle, a corrupt
`spiece.model`, a `.pt` that is no checkpoint, a broken `.zip`, NaN / Inf weights. Each is refused with
one error naming the file(s), by `convert.load` (the error type) and by `python -m recipes.export --from`
(exit status 2, the message on stderr), without building the model the configuration describes (a million
layers would take hours). Notices: a release without a tokenizer and a folder holding two releases say so.
Every case runs with the working directory and the temporary folder inside `tmp_path`, and checks that
nothing was written outside the release's own folder.
"""

import argparse
import json
import os
import tempfile
import zipfile

import numpy as np
import pytest

from keras_pretrain import convert
from keras_pretrain.errors import CheckpointFormatError
from keras_pretrain.errors import ConfigError

pytestmark = pytest.mark.one_backend
torch = pytest.importorskip("torch")

MILLION = 1_000_000

# --- Tiny releases -------------------------------------------------------------------------------------------

BERT_CONFIG = {"vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 2, "num_attention_heads": 2,
               "intermediate_size": 12, "hidden_act": "gelu", "max_position_embeddings": 16,
               "type_vocab_size": 2, "initializer_range": 0.02}
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "c", "d", "e"]


def bert_arrays(c=BERT_CONFIG, layout="tf1"):
    """Random BERT weights ({name: array}) in Google's TF1 names, or (layout="hf") transformers' names."""
    rng = np.random.default_rng(0)
    V, H, I, P, T = (c[k] for k in ("vocab_size", "hidden_size", "intermediate_size", "max_position_embeddings",
                                    "type_vocab_size"))

    def w(*shape):
        return (0.1 * rng.standard_normal(shape)).astype("float32")

    if layout == "hf":
        arrays = {"embeddings.word_embeddings.weight": w(V, H), "embeddings.position_embeddings.weight": w(P, H),
                  "embeddings.token_type_embeddings.weight": w(T, H)}
        for i in range(c["num_hidden_layers"]):
            arrays[f"encoder.layer.{i}.intermediate.dense.weight"] = w(I, H)
            arrays[f"encoder.layer.{i}.output.dense.weight"] = w(H, I)
        return arrays
    arrays = {"bert/embeddings/word_embeddings": w(V, H), "bert/embeddings/position_embeddings": w(P, H),
              "bert/embeddings/token_type_embeddings": w(T, H),
              "bert/embeddings/LayerNorm/gamma": 1 + w(H), "bert/embeddings/LayerNorm/beta": w(H),
              "bert/pooler/dense/kernel": w(H, H), "bert/pooler/dense/bias": w(H)}
    dense = {"attention/self/query": (H, H), "attention/self/key": (H, H), "attention/self/value": (H, H),
             "attention/output/dense": (H, H), "intermediate/dense": (H, I), "output/dense": (I, H)}
    for i in range(c["num_hidden_layers"]):
        s = f"bert/encoder/layer_{i}/"
        for name, (a, b) in dense.items():
            arrays[s + name + "/kernel"], arrays[s + name + "/bias"] = w(a, b), w(b)
        for norm in ("attention/output/LayerNorm", "output/LayerNorm"):
            arrays[s + norm + "/gamma"], arrays[s + norm + "/beta"] = 1 + w(H), w(H)
    return arrays


def write_json(path, value):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(value, f)


def bert_tf1(folder, vocab=True, **config):
    """A Google BERT release folder (2 layers) whose `bert_config.json` says `config` over the real one."""
    from tests.testing import write_tf1_checkpoint

    os.makedirs(folder, exist_ok=True)
    write_tf1_checkpoint(bert_arrays(), os.path.join(folder, "bert_model.ckpt"))
    write_json(os.path.join(folder, "bert_config.json"), {**BERT_CONFIG, **config})
    if vocab:
        with open(os.path.join(folder, "vocab.txt"), "w") as f:
            f.write("\n".join(VOCAB) + "\n")
    return folder


def albert_tf1(folder, **config):
    """An ALBERT release folder (the variables its checks read) whose `albert_config.json` says `config`."""
    from tests.testing import write_tf1_checkpoint

    os.makedirs(folder, exist_ok=True)
    g = "bert/encoder/transformer/group_0/inner_group_0/"
    arrays = {"bert/embeddings/word_embeddings": np.zeros((10, 4), "float32"),
              "bert/encoder/embedding_hidden_mapping_in/kernel": np.zeros((4, 8), "float32"),
              g + "ffn_1/intermediate/dense/kernel": np.zeros((8, 12), "float32")}
    write_tf1_checkpoint(arrays, os.path.join(folder, "model.ckpt-1"))
    write_json(os.path.join(folder, "albert_config.json"), {**BERT_CONFIG, "embedding_size": 4, **config})
    return folder


def hf_folder(folder, model_type, config, arrays):
    from safetensors.numpy import save_file

    os.makedirs(folder, exist_ok=True)
    write_json(os.path.join(folder, "config.json"), {"model_type": model_type, **config})
    save_file(arrays, os.path.join(folder, "model.safetensors"))
    return folder


def hf_bert(folder, **config):
    return hf_folder(folder, "bert", {**BERT_CONFIG, **config}, bert_arrays(layout="hf"))


def distilbert_weights(layers=1, V=10, H=8, I=12, P=16):
    """A complete DistilBertModel state dict (`distilbert.` names), random."""
    rng = np.random.default_rng(0)

    def w(*shape):
        return (0.1 * rng.standard_normal(shape)).astype("float32")

    e = "distilbert.embeddings."
    arrays = {e + "word_embeddings.weight": w(V, H), e + "position_embeddings.weight": w(P, H),
              e + "LayerNorm.weight": 1 + w(H), e + "LayerNorm.bias": w(H)}
    for i in range(layers):
        s = f"distilbert.transformer.layer.{i}."
        for name, (rows, cols) in {"attention.q_lin": (H, H), "attention.k_lin": (H, H), "attention.v_lin": (H, H),
                                   "attention.out_lin": (H, H), "ffn.lin1": (I, H), "ffn.lin2": (H, I)}.items():
            arrays[s + name + ".weight"], arrays[s + name + ".bias"] = w(rows, cols), w(rows)
        for norm in ("sa_layer_norm", "output_layer_norm"):
            arrays[s + norm + ".weight"], arrays[s + norm + ".bias"] = 1 + w(H), w(H)
    return arrays


def hf_distilbert(folder, **config):
    rng = np.random.default_rng(0)
    arrays = {"distilbert.embeddings.word_embeddings.weight": rng.random((10, 8), "float32"),
              "distilbert.embeddings.position_embeddings.weight": rng.random((16, 8), "float32")}
    for i in range(2):
        arrays[f"distilbert.transformer.layer.{i}.ffn.lin1.weight"] = rng.random((12, 8), "float32")
    config = {"vocab_size": 10, "dim": 8, "n_layers": 2, "n_heads": 2, "hidden_dim": 12,
              "max_position_embeddings": 16, **config}
    return hf_folder(folder, "distilbert", config, arrays)


def xlnet_tf1(folder, **config):
    """The tiny original XLNet release (2 layers) of `tests.models.xlnet.make_tf1_release`, `config` over its
    `xlnet_config.json`; returns the release folder."""
    from tests.models.xlnet.make_tf1_release import build

    release = build(folder)
    path = os.path.join(release.folder, "xlnet_config.json")
    write_json(path, {**release.config, **config})
    return release.folder


def fairseq(folder, edit_state=None, **args):
    """The tiny fairseq RoBERTa release (2 layers) with `args` over its settings; returns the `model.pt`."""
    from tests.models.roberta.make_fairseq_release import build

    release = build(folder)
    if args or edit_state:
        state = torch.load(release.model_pt, weights_only=False)
        for key, value in args.items():
            setattr(state["args"], key, value)
        if edit_state:
            edit_state(state)
        torch.save(state, release.model_pt)
    return release.model_pt


def gpt_release(folder):
    """The tiny OpenAI GPT-1 release (width 24: the default 12 heads divide it); returns its `model/`."""
    from tests.models.gpt.make_openai_release import build

    build(folder, d=24)
    return os.path.join(folder, "model")


def elmo_release(folder, **lstm):
    from tests.models.elmo.make_bilm_release import build

    paths = build(folder)
    with open(paths["options"]) as f:
        options = json.load(f)
    options["lstm"].update(lstm)
    write_json(paths["options"], options)
    return folder


# --- The hostile inputs --------------------------------------------------------------------------------------


def forged_npy(path, shape):
    """A `.npy` whose header claims `shape` (float32) over 64 bytes of data."""
    with open(path, "wb") as f:
        np.lib.format.write_array_header_1_0(f, {"descr": "<f4", "fortran_order": False, "shape": shape})
        f.write(b"\0" * 64)


def deep_pickle_pt(path, depth=100_000):
    """`model.pt` (torch's zip layout) whose pickle is `{"args": {"a": {"a": ... depth ...}}, "model": {}}`."""
    torch.save({"args": None, "model": {}}, path)
    with zipfile.ZipFile(path) as archive:
        entries = {info.filename: archive.read(info) for info in archive.infolist()}
    pickled = (b"\x80\x02}" + b"X\x04\x00\x00\x00args" + (b"}X\x01\x00\x00\x00a" * depth) + b"}" + b"s" * depth
               + b"s" + b"X\x05\x00\x00\x00model}s.")
    name = next(n for n in entries if n.endswith("/data.pkl"))
    entries[name] = pickled
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        for entry, data in entries.items():
            archive.writestr(entry, data)


def case_roberta_million_layers(tmp):
    model_pt = fairseq(tmp, encoder_layers=MILLION)
    return model_pt, (ConfigError, CheckpointFormatError), ["model.pt", "encoder_layers is 1000000"], {}


def case_xlnet_million_layers(tmp):
    folder = xlnet_tf1(tmp, n_layer=MILLION)
    return folder, (ConfigError, CheckpointFormatError), ["xlnet_config.json", "xlnet_model.ckpt",
                                                          "n_layer is 1000000"], {}


def case_bert_tf1_million_layers(tmp):
    folder = bert_tf1(os.path.join(tmp, "bert"), num_hidden_layers=MILLION)
    return folder, ConfigError, ["bert_config.json", "bert_model.ckpt", "num_hidden_layers is 1000000"], {}


def case_bert_tf1_billion_vocabulary(tmp):
    folder = bert_tf1(os.path.join(tmp, "bert"), vocab_size=10**9)
    return folder, ConfigError, ["bert_config.json", "bert_model.ckpt", "vocab_size is 1000000000"], {}


def case_albert_tf1_million_shared_layers(tmp):
    folder = albert_tf1(os.path.join(tmp, "albert"), num_hidden_layers=MILLION)
    return folder, ConfigError, ["albert_config.json", "model.ckpt-1", "num_hidden_layers is 1000000"], {}


def case_albert_tf1_groups_disagree(tmp):
    folder = albert_tf1(os.path.join(tmp, "albert"), num_hidden_groups=3, num_hidden_layers=3)
    return folder, ConfigError, ["albert_config.json", "model.ckpt-1", "num_hidden_groups is 3"], {}


def case_hf_bert_million_layers(tmp):
    folder = hf_bert(os.path.join(tmp, "hf"), num_hidden_layers=MILLION)
    return folder, ConfigError, ["config.json", "model.safetensors", "num_hidden_layers is 1000000"], {}


def case_hf_distilbert_million_layers(tmp):
    folder = hf_distilbert(os.path.join(tmp, "hf"), n_layers=MILLION)
    return folder, ConfigError, ["config.json", "model.safetensors", "n_layers is 1000000"], {}


def case_elmo_million_layers(tmp):
    folder = elmo_release(os.path.join(tmp, "elmo"), n_layers=MILLION)
    return folder, ConfigError, ["options.json", "weights.hdf5", "lstm.n_layers is 1000000"], {}


def case_gpt_npy_header_claims_terabytes(tmp):
    model = gpt_release(tmp)
    forged_npy(os.path.join(model, "params_3.npy"), (10**12,))
    return model, CheckpointFormatError, ["params_3.npy", "header claims 1,000,000,000,000 values",
                                          "nothing was read"], {}


def case_gpt_npy_more_than_shapes_list(tmp):
    model = gpt_release(tmp)
    path = os.path.join(model, "params_0.npy")
    np.save(path, np.concatenate([np.load(path), np.zeros(10**5, "float32")]))  # a real file, too many values
    return model, CheckpointFormatError, ["params_0.npy", "params_shapes.json", "nothing was read"], {}


def case_gpt_npz_saved_as_npy(tmp):
    model = gpt_release(tmp)
    path = os.path.join(model, "params_0.npy")
    with open(path, "wb") as f:
        np.savez(f, arr_0=np.load(os.path.join(model, "params_1.npy")))
    return model, CheckpointFormatError, ["params_0.npy", ".npz"], {}


def case_roberta_deeply_nested_pickle(tmp):
    model_pt = fairseq(tmp)
    deep_pickle_pt(model_pt)
    return model_pt, CheckpointFormatError, ["model.pt", "nest"], {}


def case_xlnet_corrupt_spiece(tmp):
    folder = xlnet_tf1(tmp)
    with open(os.path.join(folder, "spiece.model"), "wb") as f:
        f.write(b"\n\x05hello, not a SentencePiece model \xff\xfe" * 4)
    return folder, CheckpointFormatError, ["spiece.model", "SentencePiece"], {}


def case_pt_that_is_not_a_checkpoint(tmp):
    folder = os.path.join(tmp, "release")
    os.makedirs(folder)
    with open(os.path.join(folder, "model.pt"), "w") as f:
        f.write("these are my notes, not a checkpoint\n")
    return os.path.join(folder, "model.pt"), CheckpointFormatError, ["model.pt", "not a readable PyTorch"], {}


def case_broken_zip(tmp):
    from tests.models.xlnet.make_tf1_release import build

    archive = build(tmp, archive=True).archive
    with open(archive, "r+b") as f:
        f.truncate(os.path.getsize(archive) // 2)
    return archive, CheckpointFormatError, [os.path.basename(archive), "unreadable zip archive"], {}


def _nan_in_embedding(value):
    def edit(state):
        name = "decoder.sentence_encoder.embed_positions.weight"
        state["model"][name] = torch.full_like(state["model"][name], value)

    return edit


def case_roberta_nan_weights(tmp):
    model_pt = fairseq(tmp, edit_state=_nan_in_embedding(float("nan")))
    return model_pt, CheckpointFormatError, ["model.pt", "embed_positions.weight", "NaN", "(all)"], {}


def case_roberta_inf_weights(tmp):
    model_pt = fairseq(tmp, edit_state=_nan_in_embedding(float("inf")))
    return model_pt, CheckpointFormatError, ["model.pt", "embed_positions.weight", "Inf"], {}


ERRORS = {name[len("case_"):]: case for name, case in sorted(globals().items()) if name.startswith("case_")}


# --- Running them --------------------------------------------------------------------------------------------


def snapshot(folder):
    found = {}
    for root, _, files in os.walk(folder):
        for name in files:
            path = os.path.join(root, name)
            found[path] = os.path.getsize(path)
    return found


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    """`(release folder, check)`: the working directory and the temporary folder are empty folders of
    `tmp_path`; `check()` asserts that nothing was left in them and that the release is unchanged."""
    release, cwd, tmp = (tmp_path / n for n in ("release", "cwd", "tmp"))
    for folder in (release, cwd, tmp):
        folder.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    state = {}

    def freeze():
        state["release"] = snapshot(release)

    def check():
        assert os.listdir(cwd) == [] and os.listdir(tmp) == []
        assert snapshot(release) == state["release"]

    return str(release), freeze, check


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_hostile_release_is_refused_naming_the_file(case, sandbox, capsys):
    release, freeze, check = sandbox
    path, error, named, options = ERRORS[case](release)
    freeze()
    with pytest.raises(error) as info:
        convert.load(path, **options)
    message = str(info.value)
    for part in named:
        assert part in message, f"{part!r} not in {message!r}"
    check()
    capsys.readouterr()

    from recipes import export

    out = os.path.join(os.path.dirname(release), "out")
    with pytest.raises(SystemExit) as exit_info:
        export.main(["--from", path, "--to", "huggingface", "--out", out])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err  # notices (the casing chosen) may come first; a weights error lists problems
    err = err[err.index("recipes.export: error: --from "):]
    assert all(part in err for part in named), err
    assert "Traceback" not in err and not os.path.exists(out)
    check()


# --- Notices: what a release lacks, what a folder holding two releases chose -----------------------------


def test_release_without_a_tokenizer_says_so(sandbox, capsys):
    release, freeze, check = sandbox
    xlnet = xlnet_tf1(os.path.join(release, "xlnet"))
    os.remove(os.path.join(xlnet, "spiece.model"))
    bert = bert_tf1(os.path.join(release, "bert"), vocab=False)
    hf = hf_folder(os.path.join(release, "hf"), "distilbert",
                   {"vocab_size": 10, "dim": 8, "n_layers": 1, "n_heads": 2, "hidden_dim": 12,
                    "max_position_embeddings": 16}, distilbert_weights())
    freeze()
    for path, looked_for in ((xlnet, "spiece.model"), (bert, "vocab.txt"), (hf, "vocab.txt")):
        capsys.readouterr()
        _, tokenizer = convert.load(path)
        out = capsys.readouterr().out
        assert tokenizer is None
        assert f"{path}: no tokenizer in this release (looked for {looked_for}" in out, out
    check()


def test_folder_holding_two_releases_says_which_it_chose(sandbox, capsys):
    from keras_pretrain.checkpoints.formats import detect

    release, freeze, check = sandbox
    bert_tf1(release)
    gpt_release(release)
    freeze()
    source = detect(release)
    out = capsys.readouterr().out
    assert (source.family, source.format) == ("gpt", "openai")
    assert "holds more than one release" in out and "bert_model.ckpt.index" in out
    assert "params_shapes.json" in out and "tried in the order" in out
    check()


def test_npy_header_is_read_without_reading_the_data(tmp_path):
    from keras_pretrain.checkpoints.checks import npy_header

    good = str(tmp_path / "good.npy")
    np.save(good, np.arange(6, dtype="float32").reshape(2, 3))
    shape, dtype, offset = npy_header(good)
    assert shape == (2, 3) and dtype == np.float32 and offset in (128, 64)
    forged = str(tmp_path / "forged.npy")
    forged_npy(forged, (2**40,))
    with pytest.raises(CheckpointFormatError, match=r"forged\.npy: truncated or forged: its header claims"):
        npy_header(forged)
    not_npy = str(tmp_path / "text.npy")
    with open(not_npy, "w") as f:
        f.write("hello")
    with pytest.raises(CheckpointFormatError, match=r"text\.npy: not a NumPy \.npy array"):
        npy_header(not_npy)


def test_deep_nesting_is_found_without_recursion():
    from keras_pretrain.checkpoints.checks import check_nesting

    deep = current = {}
    for _ in range(10_000):
        current["a"] = {}
        current = current["a"]
    with pytest.raises(CheckpointFormatError, match="state.pt: its objects nest more than 100 levels"):
        check_nesting(deep, "state.pt")
    check_nesting({"args": argparse.Namespace(a=[1, (2, {"b": 3})]), "model": {"w": np.zeros(2)}}, "ok.pt")
