"""The one auto-detecting entry point (`convert.load`, `checkpoints.formats.detect`) and the recipes and
`hub_modules` reading any release through it: family and format from file and variable names, printed."""

import json
import os
import zipfile

import numpy as np
import pytest

from keras_pretrain import convert
from keras_pretrain.checkpoints.formats import detect
from keras_pretrain.errors import CheckpointFormatError
from keras_pretrain.errors import ConfigError
from tests.testing import write_tf1_checkpoint

pytestmark = pytest.mark.tf_only  # file-name and checkpoint-index reading; the converters test every backend

transformers = pytest.importorskip("transformers")


def touch(folder, *names, text=""):
    for name in names:
        path = os.path.join(folder, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
    return str(folder)


def checkpoint(prefix, names):
    return write_tf1_checkpoint({name: np.zeros((2,), "float32") for name in names}, str(prefix))


# Each published layout, reduced to the names that identify it.
LAYOUTS = {
    "huggingface": (lambda d: touch(d, "config.json", text=json.dumps({"model_type": "xlnet"})), "xlnet"),
    "openai": (lambda d: touch(d, "model/params_shapes.json", "model/params_0.npy", "model/encoder_bpe_40000.json"),
               "gpt"),
    "fairseq": (lambda d: touch(d, "roberta.base/model.pt", "roberta.base/dict.txt", "roberta.base/NOTE"),
                "roberta"),
    "bilm": (lambda d: touch(d, "elmo_2x4096_512_2048cnn_2xhighway_options.json",
                             "elmo_2x4096_512_2048cnn_2xhighway_weights.hdf5"), "elmo"),
}


@pytest.mark.parametrize("format", sorted(LAYOUTS))
def test_detects_each_layout(format, tmp_path):
    make, family = LAYOUTS[format]
    source = detect(make(tmp_path))
    assert (source.family, source.format) == (family, format)
    assert family in source.describe() and str(tmp_path) in source.describe()


def test_location_is_the_folder_of_the_identifying_file(tmp_path):
    assert detect(LAYOUTS["openai"][0](tmp_path / "a")).location == str(tmp_path / "a" / "model")
    assert detect(LAYOUTS["fairseq"][0](tmp_path / "b")).location == str(tmp_path / "b" / "roberta.base")
    assert detect(str(tmp_path / "b" / "roberta.base" / "model.pt")).format == "fairseq"


@pytest.mark.parametrize(
    "config, names, family",
    [
        ("xlnet_config.json", ["model/transformer/word_embedding/lookup_table"], "xlnet"),
        ("albert_config.json", ["bert/encoder/transformer/group_0/inner_group_0/ffn_1/intermediate/dense/bias"],
         "albert"),
        ("bert_config.json", ["bert/embeddings/word_embeddings"], "bert"),
    ],
)
def test_tf1_family_from_the_config_name_and_from_variable_names(config, names, family, tmp_path):
    folder = tmp_path / "release"
    prefix = checkpoint(folder / "model.ckpt", names + ["global_step"])
    touch(folder, config, text="{}")
    assert (detect(str(folder)).family, detect(str(folder)).format) == (family, "tf1")
    os.remove(folder / config)  # a run_pretraining.py folder: no config, the variable names decide
    assert detect(str(folder)).family == family and detect(str(folder)).reason == "variable names"
    assert detect(prefix).family == family  # an explicit prefix


def test_archive_is_read_from_its_index_without_extracting(tmp_path):
    archive = tmp_path / "xlnet_cased_L-12_H-768_A-12.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for name in ("xlnet_config.json", "xlnet_model.ckpt.index", "xlnet_model.ckpt.data-00000-of-00001",
                     "spiece.model"):
            z.writestr(f"xlnet_cased_L-12_H-768_A-12/{name}", "")
    source = detect(str(archive))
    assert (source.family, source.format, source.location) == ("xlnet", "tf1", str(archive))
    assert os.listdir(tmp_path) == [archive.name]


def test_tf1_hub_module_family_from_its_variables(tmp_path):
    module = tmp_path / "albert_base_3"
    touch(module, "saved_model.pb", "tfhub_module.pb", "assets/30k-clean.model")
    checkpoint(module / "variables" / "variables", ["module/bert/encoder/transformer/group_0/x"])
    assert (detect(str(module)).family, detect(str(module)).format) == ("albert", "tf1")
    elmo = tmp_path / "elmo_3"  # google/elmo/3: bilm's variables, no assets
    touch(elmo, "saved_model.pb", "tfhub_module.pb")
    checkpoint(elmo / "variables" / "variables", ["bilm/CNN/W_cnn_0", "aggregation/weights"])
    assert (detect(str(elmo)).family, detect(str(elmo)).format) == ("elmo", "tf1_hub")


def test_unknown_folder_names_what_it_holds(tmp_path):
    touch(tmp_path, "readme.md", "weights.bin")
    with pytest.raises(CheckpointFormatError) as info:
        detect(str(tmp_path))
    message = str(info.value)
    assert str(tmp_path) in message and "readme.md" in message and "params_shapes.json" in message
    with pytest.raises(CheckpointFormatError, match="no such file"):
        convert.load(str(tmp_path / "missing"))
    checkpoint(tmp_path / "other" / "model.ckpt", ["foo/bar"])
    with pytest.raises(CheckpointFormatError, match="fit no known family"):
        detect(str(tmp_path / "other"))


# --- One release through every entry point: a tiny BERT TF1 folder ------------------------------------


@pytest.fixture(scope="module")
def bert_release(tmp_path_factory):
    from tests.checkpoints.test_checkpoint_discovery import write_bert_files
    from tests.models.bert.test_bert_parity import hf_config
    from tests.models.bert.test_bert_parity import hf_to_tf1_names

    folder = tmp_path_factory.mktemp("releases") / "uncased_L-2_H-32_A-2"
    arrays = hf_to_tf1_names(transformers.BertForPreTraining(hf_config("gelu_new")).state_dict())
    write_tf1_checkpoint(arrays, str(folder / "bert_model.ckpt"))
    write_bert_files(str(folder))
    return str(folder)


def test_load_equals_the_format_entry_point_and_prints_family_and_format(bert_release, capsys):
    model, tokenizer = convert.load(bert_release, pretrainer=True)
    assert "bert, original TF1 checkpoint (bert_config.json)" in capsys.readouterr().out
    reference, _ = convert.from_tf1_checkpoint(bert_release, family="bert", pretrainer=True)
    for a, b in zip(model.weights, reference.weights):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    detected, _ = convert.from_tf1_checkpoint(bert_release)  # no family given: detected
    assert type(detected).__name__ == "BertBackbone" and tokenizer is not None


def test_finetune_from_a_release(bert_release, tmp_path, capsys):
    from recipes import finetune
    from tests.recipes.test_finetune_recipe import write_table

    data = write_table(tmp_path / "c.tsv", ["label", "text"], [("a", "the whale"), ("b", "a white whale")] * 4)
    summary = finetune.main(["--from", bert_release, "--data", data, "--epochs", "1", "--batch-size", "4",
                             "--seq-length", "8", "--out", str(tmp_path / "ft"), "--verbose", "0"])
    assert summary["family"] == "bert"
    assert "loading " + bert_release + ": bert, original TF1 checkpoint" in capsys.readouterr().out
    assert not any(n.startswith("finetune") for n in os.listdir(bert_release))


def test_pretrain_init_from_a_release(bert_release, tmp_path, capsys):
    from recipes import pretrain
    from tests.recipes.test_pretrain_recipe import CORPUS

    corpus = tmp_path / "corpus.txt"
    corpus.write_text(CORPUS * 2, encoding="utf-8")
    summary = pretrain.main(["--init", bert_release, "--corpus", str(corpus), "--out", str(tmp_path / "run"),
                             "--steps", "2", "--steps-per-epoch", "2", "--batch-size", "4", "--seq-length", "16",
                             "--max-predictions", "3", "--eval-batches", "1", "--verbose", "0", "--no-export"])
    out = capsys.readouterr().out
    assert "--init: " + bert_release + ": bert, original TF1 checkpoint" in out
    assert summary["model"] == "bert" and summary["steps"] == 2
    with pytest.raises(SystemExit) as info:  # --model disagreeing with the release
        pretrain.main(["--init", bert_release, "--model", "xlnet", "--out", str(tmp_path / "r2")])
    assert info.value.code == 2 and "holds a bert model, not xlnet" in capsys.readouterr().err


def test_pretrain_init_starts_from_the_release_weights(bert_release):
    from keras_pretrain.pretraining import PretrainingSettings
    from keras_pretrain.pretraining import build_job
    from tests.recipes.test_pretrain_recipe import CORPUS

    path = os.path.join(os.path.dirname(bert_release), "corpus.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write(CORPUS)
    settings = PretrainingSettings(init=bert_release, seq_length=16, batch_size=4, max_predictions=3)
    job = build_job("bert", [path], settings)
    reference, tokenizer = convert.from_tf1_checkpoint(bert_release, pretrainer=True)
    for a, b in zip(job.model.weights, reference.weights):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert job.vocabulary == tokenizer.get_vocabulary()


def test_hub_modules_command_exports_a_release(bert_release, tmp_path, capsys):
    import hub_modules
    from hub_modules.__main__ import main

    out = str(tmp_path / "module")
    assert main([bert_release, out, "--no-savedmodels"]) == 0
    assert "bert, original TF1 checkpoint" in capsys.readouterr().out
    assert hub_modules.read_metadata(out)[1]["family"] == "bert"
    assert hub_modules.load_tokenizer(out) is not None
    with pytest.raises(SystemExit) as info:
        main([str(tmp_path), str(tmp_path / "m2")])
    assert info.value.code == 2 and "no known release format" in capsys.readouterr().err


# --- The tiny releases of every format (built by each family's test script), through `convert.load` -------


# Each builder returns (the path a user passes, converter options the release does not hold).
def _xlnet(folder):
    from tests.models.xlnet.make_tf1_release import build

    return build(folder, archive=True).archive, {}


def _gpt(folder):
    from tests.models.gpt.make_openai_release import build

    build(folder)
    return folder, {"num_heads": 2}


def _roberta(folder):
    from tests.models.roberta.make_fairseq_release import build

    return os.path.join(build(folder).folder, "model.pt"), {}


def _elmo(folder):
    from tests.models.elmo.make_bilm_release import build

    paths = build(folder, softmax=True)
    return folder, {"softmax": paths["softmax"]}


# family -> (builder, format, pretrainer class)
RELEASES = {"xlnet": (_xlnet, "tf1", "XLNetPretrainer"), "gpt": (_gpt, "openai", "GPTCausalLM"),
            "roberta": (_roberta, "fairseq", "RobertaPretrainer"), "elmo": (_elmo, "bilm", "ElmoBiLM")}


@pytest.mark.parametrize("family", sorted(RELEASES))
def test_load_detects_every_release_format(family, tmp_path, capsys):
    make, format, pretrainer = RELEASES[family]
    path, options = make(str(tmp_path))
    source = detect(path)
    assert (source.family, source.format) == (family, format)
    model, tokenizer = convert.load(path, pretrainer=True, **options)
    assert type(model).__name__ == pretrainer and tokenizer is not None
    assert f"loading {path}: {family}," in capsys.readouterr().out


def test_hub_modules_load_takes_a_release(bert_release, capsys):
    import hub_modules

    layer = hub_modules.load(bert_release)
    assert "bert, original TF1 checkpoint" in capsys.readouterr().out
    backbone, _ = convert.load(bert_release)
    ids, mask = np.array([[2, 5, 6, 3, 0]], "int32"), np.array([[1, 1, 1, 1, 0]], "int32")
    outputs = layer({"input_word_ids": ids, "input_mask": mask, "input_type_ids": np.zeros_like(ids)})
    expected = backbone({"token_ids": ids, "padding_mask": mask, "segment_ids": np.zeros_like(ids)})
    np.testing.assert_allclose(np.asarray(outputs["sequence_output"]), np.asarray(expected["sequence_output"]),
                               atol=1e-6)
    with pytest.raises(CheckpointFormatError, match="metadata.json missing"):  # an interrupted export
        os.makedirs(os.path.join(os.path.dirname(bert_release), "half"), exist_ok=True)
        touch(os.path.join(os.path.dirname(bert_release), "half"), "model.keras")
        hub_modules.load(os.path.join(os.path.dirname(bert_release), "half"))


@pytest.mark.parametrize("family", ["roberta", "xlnet", "elmo"])
def test_pretraining_job_from_every_kind_of_release(family, tmp_path):
    """`--init` builds each objective's job from the release: its tokenizer feeds the data, its weights the
    model (XLNet with training memories, ELMo with a new softmax over the corpus' words), and one step runs."""
    import keras

    from keras_pretrain.pretraining import PretrainingSettings
    from keras_pretrain.pretraining import build_job
    from tests.recipes.test_pretrain_recipe import CORPUS

    make, _, _ = RELEASES[family]
    path, _ = make(str(tmp_path / "release"))
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(CORPUS * 3, encoding="utf-8")
    settings = PretrainingSettings(init=path, seq_length=12, batch_size=2, max_predictions=2, eval_batches=1,
                                   vocab_size=50)
    job = build_job(family, [str(corpus)], settings)
    reference, _ = convert.load(path)
    backbone = job.model.backbone
    for a, b in zip(backbone.trainable_weights, reference.trainable_weights):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    if family == "xlnet":
        assert backbone.mem_len == 12 and backbone.reuse_len == 6
    job.model.compile(optimizer=keras.optimizers.Adam(1e-3))
    history = job.model.fit(job.train.take(1), verbose=0)
    assert np.isfinite(history.history["loss"][-1])


def test_init_from_a_bare_encoder_adds_new_heads(tmp_path, capsys):
    """A Hugging Face `BertModel` folder has no pretraining heads: `--init` keeps its encoder, says so, and
    builds new heads."""
    from keras_pretrain.pretraining import PretrainingSettings
    from keras_pretrain.pretraining import initial_model
    from tests.models.bert.test_bert_parity import VOCAB
    from tests.models.bert.test_bert_parity import hf_config

    folder = tmp_path / "bert-base"
    transformers.BertModel(hf_config("gelu")).save_pretrained(str(folder))
    (folder / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    model, tokenizer = initial_model("bert", PretrainingSettings(init=str(folder), seq_length=8))
    out = capsys.readouterr().out
    assert "bert, Hugging Face folder" in out and "no pretraining heads to load" in out
    assert type(model).__name__ == "BertBackbone" and tokenizer is not None
    with pytest.raises(ConfigError, match="exceeds the .* positions of --init"):
        initial_model("bert", PretrainingSettings(init=str(folder), seq_length=10_000))
    with pytest.raises(ConfigError, match="holds a bert model .*, not xlnet"):
        initial_model("xlnet", PretrainingSettings(init=str(folder)))
