"""Every command of README.md runs end to end, with the smallest settings (issue 23, item 2).

The code blocks are read from README.md itself: a README change that breaks a
command breaks this test. Commands that need a published checkpoint run on a
tiny fixture of the same layout and name (`albert_base_v2.tar.gz`,
`uncased_L-12_H-768_A-12/` and `.zip`, a Hugging Face folder, cached modules); sizes are
made small by the substitutions listed in SMALLEST (each must match the
README text once). Everything runs in fresh processes (as a user would), in
two groups: the Python blocks in one process, the shell commands in one bash
script.

Not run: `make demo` (= `python -m recipes.pretrain` with its defaults, run
here with tiny settings), `make test` / `make test-large` (the suite itself),
`make bench` and the benchmark commands (never part of the tests), and the
multi-device / multi-machine commands of "Training on several devices"
(tests/distribute covers them), and the `console` blocks of "Pretraining data at corpus scale" (cluster
runners and servers; tests/data/test_static_data_shards.py and test_records_dataset.py run the DirectRunner
and a localhost tf.data service).
"""

import os
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

# Fresh TensorFlow-backend processes (one run is enough); `large`: ~5 min on 2 idle cores (a dozen processes
# each importing TensorFlow, two tiny pretraining runs with their exports). tests/hub_modules/test_fill_mask.py
# keeps `python -m recipes.fill_mask` in a fresh process in `make test`.
pytestmark = [pytest.mark.tf_only, pytest.mark.large]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
README = os.path.join(ROOT, "README.md")
# Python blocks (by the heading above them) -> (README text, what runs instead).
SMALLEST = {
    "Models": [('BertBackbone.from_preset("bert_base_en_uncased")', 'BertBackbone.from_preset("bert_tiny_en_uncased")')],
    "Pretraining with `model.fit`": [
        ("seq_length=128", "seq_length=16"), ("max_predictions=20", "max_predictions=3"),
        ("batch_size=32", "batch_size=4"), ("dupe_factor=10", "dupe_factor=1"),
        ("pretrainer.fit(ds, epochs=1)", "pretrainer.fit(ds.take(1), epochs=1)"),
    ],
    "ALBERT: the published checkpoints": [('from_preset("albert_xxlarge_v2")', 'from_preset("albert_base_v2")')],
}
SHELL_SKIPPED = ("make demo", "make test")
CORPUS = """The quick brown fox jumps over the lazy dog.
It was the best of times.
It was the worst of times.
The dog sleeps in the sun and the fox runs.

Call me Ishmael.
Some years ago I thought I would sail about.
It was the age of wisdom, it was the age of foolishness.
The sun rose over the quiet sea.
"""
# Recipes given inline in the "Recipes" list: the README's text -> the command run.
RECIPES = [
    ("python -m recipes.pretrain",
     "python -m recipes.pretrain --corpus corpus/tiny.txt --out run --steps 2 --steps-per-epoch 2 --batch-size 4 "
     "--seq-length 24 --vocab-size 200 --eval-batches 1 --verbose 0"),
    ("python -m recipes.finetune --from RUN_OR_MODULE --task {classify,pair} [--data FILE.tsv]",
     "python -m recipes.finetune --from run --task classify --data classify.tsv --epochs 1 --batch-size 8 "
     "--seq-length 24 --out finetuned --verbose 0"),
    ("python -m recipes.distill",
     "python -m recipes.distill --corpus corpus/tiny.txt --vocab-size 120 --hidden-dim 16 --teacher-layers 2 "
     "--student-layers 1 --seq-length 16 --max-predictions 3 --batch-size 4 --teacher-steps 2 --distill-steps 2 "
     "--eval-batches 1"),
    ('python -m recipes.fill_mask --from RUN_OR_MODULE "It was the best of [MASK]." "子[MASK]：“学而时习之”"',
     'python -m recipes.fill_mask --from run "It was the best of [MASK]." "子[MASK]：“学而时习之”"'),
    ('python -m recipes.generate --from RUN_FOLDER --prompt "the" --sampler top_p --p 0.9',
     'python -m recipes.generate --from gpt_run --prompt "the" --sampler top_p --p 0.9 --max-length 8'),
    ("python -m recipes.albert_to_savedmodel --tarball PATH --out DIR",
     "python -m recipes.albert_to_savedmodel --tarball albert_base_v2.tar.gz --out albert_from_list"),
    ("python -m recipes.create_pretraining_data --help",
     "python -m recipes.create_pretraining_data --help > /dev/null && python -m recipes.create_pretraining_data "
     "--input_file corpus/tiny.txt --vocab_file vocab.txt --output_file train.tfrecord --max_seq_length 16 "
     "--max_predictions_per_seq 3 --dupe_factor 1 --num_examples_to_print 1"),
    ("python -m keras_pretrain.export.saved_model_cli run ...",
     "python -m keras_pretrain.export.saved_model_cli run --dir run/module/preprocessor --tag_set serve "
     "--signature_def serving_default --input_exprs 'text=[\"It was the best of times.\"]'"),
]
GPT_RUN = ("python -m recipes.pretrain --model gpt --corpus corpus/tiny.txt --out gpt_run --steps 2 --steps-per-epoch 2 "
           "--batch-size 4 --seq-length 16 --vocab-size 120 --eval-batches 1 --verbose 0")


def readme_blocks(language):
    """[(heading, code)] of README.md's fenced blocks in `language`."""
    with open(README, encoding="utf-8") as f:
        text = f.read()
    blocks, heading, fence, lines = [], None, None, []
    for line in text.splitlines():
        if fence is None and line.startswith("```"):
            fence, lines = line[3:].strip(), []
        elif fence is not None and line.startswith("```"):
            if fence == language:
                blocks.append((heading, "\n".join(lines) + "\n"))
            fence = None
        elif fence is not None:
            lines.append(line)
        elif line.startswith("#"):
            heading = line.lstrip("#").strip()
    return blocks


def smallest(heading, code):
    for old, new in SMALLEST.get(heading, []):
        assert code.count(old) == 1, f"README block {heading!r} no longer holds {old!r}: update SMALLEST"
        code = code.replace(old, new)
    return code


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """A folder holding tiny stand-ins for every file the README names."""
    import transformers

    import hub_modules
    from hub_modules.exporting import export_serving
    from keras_pretrain.models.bert import BertBackbone
    from keras_pretrain.models.bert import BertClassifier
    from keras_pretrain.models.bert import BertTokenizer
    from tests.hub_modules.fixtures import TRANSFORMER
    from tests.hub_modules.fixtures import WORDPIECE
    from tests.models.albert.fixtures import build_albert_archive
    from tests.models.bert.test_bert_parity import hf_config
    from tests.models.bert.test_bert_parity import hf_reference
    from tests.models.bert.test_bert_parity import write_google_bert
    from tests.testing import randomize_torch_module

    work = tmp_path_factory.mktemp("readme")
    os.makedirs(work / "corpus")
    (work / "corpus" / "tiny.txt").write_text(CORPUS * 3, encoding="utf-8")
    (work / "corpus" / "pretrain.txt").write_text(CORPUS * 3, encoding="utf-8")
    words = sorted(set(re.findall(r"\w+|[^\w\s]", CORPUS.lower())))
    (work / "vocab.txt").write_text("\n".join(WORDPIECE + [w for w in words if w not in WORDPIECE]) + "\n")
    lines = ["label\ttext"] + [f"{i % 2}\t{line}" for i, line in enumerate(CORPUS.splitlines()) if line] * 2
    (work / "classify.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    os.makedirs(work / "path" / "to")
    hf_reference("gelu", str(work / "path" / "to" / "bert-folder"))
    # "Fine-tuned folders": a BertForSequenceClassification folder (vocab.txt beside it).
    sst2 = randomize_torch_module(transformers.BertForSequenceClassification(hf_config("gelu_new")))
    sst2.save_pretrained(str(work / "bert-base-uncased-sst2"))
    shutil.copy(work / "path" / "to" / "bert-folder" / "vocab.txt", work / "bert-base-uncased-sst2" / "vocab.txt")
    write_google_bert(randomize_torch_module(transformers.BertForPreTraining(hf_config("gelu_new"))),
                      str(work / "uncased_L-12_H-768_A-12"))
    # Google's released zip holds that folder (its name at the top).
    shutil.make_archive(str(work / "uncased_L-12_H-768_A-12"), "zip", str(work), "uncased_L-12_H-768_A-12")
    # run_pretraining.py's output: model.ckpt-<step>.* (with the bert_config.json used for training copied in).
    shutil.copytree(work / "uncased_L-12_H-768_A-12", work / "pretraining_output")
    for name in os.listdir(work / "pretraining_output"):
        if name.startswith("bert_model.ckpt"):
            os.rename(work / "pretraining_output" / name,
                      work / "pretraining_output" / name.replace("bert_model.ckpt", "model.ckpt-1000"))
    if os.path.exists(work / "pretraining_output" / "checkpoint"):
        os.remove(work / "pretraining_output" / "checkpoint")
    write_original_releases(work, tmp_path_factory)
    tarball, _ = build_albert_archive(str(tmp_path_factory.mktemp("albert")))
    shutil.copy(tarball, work / "albert_base_v2.tar.gz")
    cache = work / "cache"
    os.makedirs(cache)
    shutil.copy(tarball, cache / "albert_base_v2.tar.gz")
    backbone = BertBackbone(vocabulary_size=len(WORDPIECE), max_sequence_length=16, **TRANSFORMER)
    hub_modules.export(backbone, str(cache / "bert_base_en_uncased"),
                       tokenizer=BertTokenizer(vocabulary=WORDPIECE, lowercase=True), savedmodels=False)
    # "Serving raw text" loads my_classifier/classifier/1, as recipes.finetune --out my_classifier writes it.
    classifier = BertClassifier(backbone, num_classes=2)
    export_serving(classifier, str(work / "my_classifier" / "classifier" / "1"),
                   tokenizer=BertTokenizer(vocabulary=WORDPIECE, lowercase=True), seq_length=16)
    # "keras-hub presets": a keras-hub BERT preset folder (backbone + tokenizer).
    import keras_hub

    preset = str(work / "path" / "to" / "keras_hub_bert_preset")
    keras_hub.models.BertBackbone(vocabulary_size=len(WORDPIECE), num_layers=1, num_heads=2, hidden_dim=16,
                                  intermediate_dim=32, max_sequence_length=16).save_to_preset(preset)
    keras_hub.models.BertTokenizer(vocabulary=WORDPIECE, lowercase=True).save_to_preset(preset)
    # "Exporting": `recipes.export --from runs/bert-... / runs/elmo-... / my_classifier/classifier.keras`.
    from keras_pretrain import convert

    classifier.save(str(work / "my_classifier" / "classifier.keras"))
    hub_modules.export(backbone, str(work / "runs" / "bert-20261201-1200"),
                       tokenizer=BertTokenizer(vocabulary=WORDPIECE, lowercase=True), savedmodels=False)
    (work / "runs" / "bert-20261201-1200" / "vocab.txt").write_text("\n".join(WORDPIECE) + "\n", encoding="utf-8")
    elmo, _ = convert.load(str(work / "elmo_2x4096_512_2048cnn_2xhighway_options.json"))
    hub_modules.export(elmo, str(work / "runs" / "elmo-20261201-1200"), savedmodels=False)
    # "Question answering" loads squad_run/qa/1, as recipes.finetune --task squad-v1.1 --out squad_run writes it.
    from hub_modules.exporting import export_qa_serving
    from keras_pretrain.tasks import SpanQuestionAnswering

    export_qa_serving(SpanQuestionAnswering(backbone), str(work / "squad_run" / "qa" / "1"),
                      BertTokenizer(vocabulary=WORDPIECE, lowercase=True), seq_length=16, doc_stride=4,
                      max_query_length=4)
    # "Named-entity recognition" loads ner_run/ner/1, as recipes.finetune --task ner --out ner_run writes it.
    from hub_modules.exporting import export_tagging_serving
    from keras_pretrain.tasks import TokenClassifier

    export_tagging_serving(TokenClassifier(backbone, 3), str(work / "ner_run" / "ner" / "1"),
                           BertTokenizer(vocabulary=WORDPIECE, lowercase=True), ["O", "B-LOC", "I-LOC"],
                           seq_length=16)
    return work


def write_original_releases(work, tmp_path_factory):
    """Tiny stand-ins of the XLNet zip, fairseq's roberta.base, OpenAI's model/ and bilm-tf's ELMo files."""
    from tests.models.elmo import make_bilm_release
    from tests.models.gpt import make_openai_release
    from tests.models.roberta import make_fairseq_release
    from tests.models.xlnet import make_tf1_release

    xlnet = make_tf1_release.build(str(tmp_path_factory.mktemp("xlnet")), archive=True)
    shutil.copy(xlnet.archive, work / "xlnet_cased_L-12_H-768_A-12.zip")
    make_fairseq_release.build(str(work))  # roberta.base/ with GPT-2's encoder.json + vocab.bpe beside model.pt
    make_openai_release.build(str(work), d=24)  # model/; 24 divides by the published 12 heads
    elmo = make_bilm_release.build(str(tmp_path_factory.mktemp("elmo")))
    for kind, ext in (("options", "json"), ("weights", "hdf5")):
        shutil.copy(elmo[kind], work / f"elmo_2x4096_512_2048cnn_2xhighway_{kind}.{ext}")


def run(args, work, timeout=2400):
    env = dict(os.environ, PYTHONPATH=ROOT, KERAS_BACKEND="tensorflow", KERAS_PRETRAIN_CACHE=str(work / "cache"),
               PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))  # `python` = this one
    result = subprocess.run(args, cwd=work, env=env, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, f"{args[-1][-400:]}\n--- stdout\n{result.stdout[-3000:]}\n--- stderr\n{result.stderr[-4000:]}"
    return result.stdout


def test_readme_shell_commands(workdir):
    with open(README, encoding="utf-8") as f:
        text = f.read()
    commands = []
    for heading, code in readme_blocks("bash"):
        for line in code.splitlines():
            line = line.split("#")[0].strip()
            if not line or line.startswith(SHELL_SKIPPED):
                continue
            commands.append(line)
    assert any("albert_to_savedmodel" in c for c in commands), commands
    for readme_text, command in RECIPES:
        assert f"`{readme_text}`" in text, f"README no longer shows `{readme_text}`: update RECIPES"
        commands.append(command)
    commands.insert(0, GPT_RUN)  # `recipes.generate` needs a GPT run
    script = "set -e\n" + "\n".join(f"echo '=== {c[:60]}'\n{c}" for c in commands) + "\necho ALL COMMANDS RAN\n"
    out = run(["bash", "-c", script], workdir)
    assert "ALL COMMANDS RAN" in out
    assert "[MASK] 1:" in out  # fill_mask printed its predictions for both sentences
    assert os.path.isfile(workdir / "albert_base" / "encoder" / "saved_model.pb")
    assert os.path.isfile(workdir / "finetuned" / "classifier" / "1" / "saved_model.pb")
    assert os.path.isfile(workdir / "train.tfrecord")
    assert "input_word_ids" in out  # saved_model_cli ran the preprocessor


def test_readme_python_blocks(workdir):
    blocks = readme_blocks("python")
    assert {h for h, _ in blocks} >= set(SMALLEST), "README sections renamed: update SMALLEST"
    script = ["import keras", "keras.utils.set_random_seed(0)"]
    for heading, code in blocks:
        script += [f"print({'=== ' + heading!r}, flush=True)", smallest(heading, code)]
    script.append("print('ALL BLOCKS RAN')")
    (workdir / "readme_blocks.py").write_text("\n".join(script), encoding="utf-8")
    out = run([sys.executable, "readme_blocks.py"], workdir)
    assert "ALL BLOCKS RAN" in out
    assert os.path.isfile(workdir / "my_module" / "metadata.json")  # hub_modules.export(...) wrote it
