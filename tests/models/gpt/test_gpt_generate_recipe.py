"""recipes.generate and the causal-LM pretraining job (keras_pretrain.pretraining.causal_lm)."""

import os

import keras
import pytest

from keras_pretrain.models.gpt import GPTBackbone
from keras_pretrain.models.gpt import GPTCausalLM
from keras_pretrain.models.gpt import learn_bpe
from keras_pretrain.data.lm import lm_blocks
from keras_pretrain.pretraining import PretrainingSettings
from keras_pretrain.pretraining import build_job
from keras_pretrain.pretraining.causal_lm import load_for_generation
from recipes import generate

CORPUS = """The cat sat on the mat.
The dog sat on the log.

A bird sang in the tree.
The cat saw the bird and the dog.

The mat was red. The log was brown.
"""


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    path.write_text(CORPUS * 4)
    return str(path)


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory, corpus):
    folder = tmp_path_factory.mktemp("gpt_model")
    tokenizer = learn_bpe(CORPUS.splitlines(), vocabulary_size=80)
    tokenizer.save(str(folder))
    keras.utils.set_random_seed(0)
    backbone = GPTBackbone(vocabulary_size=tokenizer.vocabulary_size(), num_layers=1, num_heads=2,
                           hidden_dim=16, intermediate_dim=32, max_sequence_length=32)
    GPTCausalLM(backbone).save(str(folder / "pretrainer.keras"))
    return str(folder)


def test_help_and_bad_arguments(model_folder, capsys):
    with pytest.raises(SystemExit) as e:
        generate.main(["--help"])
    assert e.value.code == 0
    assert "--sampler" in capsys.readouterr().out
    bad = [
        [],
        ["--from", model_folder],
        ["--from", "/no/such/folder", "--prompt", "the"],
        ["--from", model_folder, "--prompt", "the", "--sampler", "top_p", "--p", "1.5"],
        ["--from", model_folder, "--prompt", "the", "--temperature", "0"],
        ["--from", model_folder, "--prompt", "the", "--sampler", "beam"],
        ["--from", model_folder, "--prompt", "the", "--max-length", "500"],
        ["--from", os.path.dirname(model_folder), "--prompt", "the"],
    ]
    for argv in bad:
        with pytest.raises(SystemExit) as e:
            generate.main(argv)
        assert e.value.code == 2, argv


def test_generate_from_a_saved_model(model_folder, capsys):
    texts = generate.main(["--from", model_folder, "--prompt", "the cat", "--prompt", "a bird",
                           "--max-length", "10", "--sampler", "top_k", "--k", "5", "--seed", "1"])
    assert len(texts) == 2 and texts[0].startswith("the cat") and texts[1].startswith("a bird")
    assert capsys.readouterr().out.splitlines()[-2:] == texts
    model, tokenizer = load_for_generation(model_folder)
    assert isinstance(model, GPTCausalLM) and tokenizer.vocabulary_size() == model.backbone.vocabulary_size


def test_build_gpt_pretraining(corpus, tmp_path):
    settings = PretrainingSettings(vocab=None, vocab_size=60, seq_length=8, batch_size=4, seed=0,
                                   preset=None, eval_batches=2, out=str(tmp_path))
    job = build_job("gpt", [corpus], settings)
    assert os.path.exists(tmp_path / "vocab.json") and os.path.exists(tmp_path / "merges.txt")
    batch = next(iter(job.train))
    assert batch["token_ids"].shape == (4, 8)
    # Blocks are consecutive slices of one stream over the corpus.
    blocks = lm_blocks([corpus], job.tokenizer, 8)
    stream = [job.tokenizer.tokenize(line) for line in (CORPUS * 4).splitlines() if line.strip()]
    assert blocks.reshape(-1).tolist() == sum(stream, [])[: blocks.size]
    assert isinstance(job.model, GPTCausalLM) and job.metric == "perplexity"
    assert job.model.backbone.vocabulary_size == job.tokenizer.vocabulary_size()
    text = job.sample("the cat", max_length=12)
    assert text.startswith("the cat")
