"""Causal-LM pretraining jobs (GPT-1) and text generation from what they saved.

`build_job(family, paths, settings)` gives the tokenizer, the datasets of token-id blocks
(`keras_pretrain.data.lm`), the `GPTCausalLM` and a sampling function; `sample_text` continues prompts;
`load_for_generation(folder)` reads a saved model back (`recipes.generate`).
"""

import os

from keras_pretrain import families
from keras_pretrain.errors import ConfigError
from keras_pretrain.pretraining import PretrainingJob
from keras_pretrain.pretraining import build_backbone
from keras_pretrain.pretraining import initial_model


def sample_text(causal_lm, tokenizer, prompts, max_length, sampler=None, stop_token_ids=None):
    """Continues each prompt string to `max_length` tokens; returns strings.

    Args:
        causal_lm: a `GPTCausalLM`.
        tokenizer: a `GPTTokenizer`.
        prompts: a string or a list of strings.
        max_length: int, total tokens (prompt included).
        sampler: None keeps the current sampler; else a keras-hub sampler
            (see `make_sampler`), which replaces it.
    """
    single = isinstance(prompts, str)
    prompts = [prompts] if single else list(prompts)
    if sampler is not None:
        # Swap the sampler only: re-compiling would replace the optimizer
        # (and its state) of a model still being trained or saved.
        causal_lm.sampler = sampler
        causal_lm.generate_function = None
    ids = [tokenizer.tokenize(p) or [tokenizer.token_to_id(tokenizer.unk_token)] for p in prompts]
    out = causal_lm.generate_ids(ids, max_length, stop_token_ids=stop_token_ids)
    texts = [tokenizer.detokenize(row) for row in out]
    return texts[0] if single else texts


def bpe_tokenizer(paths, settings):
    """GPT's BPE: read from `settings.vocab` (a folder, or vocab.json with merges.txt beside it), else
    learned from the corpus with `settings.vocab_size` entries; saved into `settings.out`."""
    from keras_pretrain.data import read_documents
    from keras_pretrain.models.gpt.gpt_tokenizer import GPTTokenizer
    from keras_pretrain.models.gpt.gpt_tokenizer import learn_bpe

    if settings.vocab:
        folder = settings.vocab if os.path.isdir(settings.vocab) else os.path.dirname(settings.vocab)
        tokenizer = GPTTokenizer.from_folder(folder)
    else:
        lines = (s for doc in read_documents(paths) for s in doc)
        tokenizer = learn_bpe(lines, settings.vocab_size)
    if settings.out:
        tokenizer.save(settings.out)
    return tokenizer


def build_job(family, paths, settings):
    """GPT-1: BPE, contiguous blocks of one stream over the corpus, causal LM.

    The job's `train` repeats (blocks, drop_remainder), `held_out` is `eval_batches` cached batches, the
    metric "perplexity", and `sample(prompt, max_length=32) -> str` continues a prompt (greedy).
    """
    from keras_pretrain.data import CorpusStats
    from keras_pretrain.data.lm import lm_dataset
    from keras_pretrain.models.gpt.gpt_causal_lm import make_sampler

    family = families.get(family)
    initial = None
    if settings.init:
        initial, tokenizer = initial_model(family.name, settings)
    else:
        tokenizer = bpe_tokenizer(paths, settings)
    stats = CorpusStats()
    shape = dict(seq_length=settings.seq_length, batch_size=settings.batch_size)
    train = lm_dataset(paths, tokenizer, seed=settings.seed, drop_remainder=True, stats=stats, **shape)
    held_out = lm_dataset(paths, tokenizer, seed=settings.seed + 1, **shape).take(settings.eval_batches).cache()
    if initial is None:
        model = family.pretrainer_class(build_backbone(family.name, tokenizer.vocabulary_size(), settings))
    else:  # GPT's LM head is the tied token embedding: a backbone is all it needs
        model = initial if hasattr(initial, "backbone") else family.pretrainer_class(initial)

    def sample(prompt, max_length=32, sampler="greedy", **options):
        return sample_text(model, tokenizer, prompt, max_length,
                           sampler=make_sampler(sampler, seed=settings.seed, **options))

    return PretrainingJob(family=family.name, tokenizer=tokenizer, train=train, held_out=held_out, model=model,
                          metric="perplexity", objective=family.objective, sample=sample, stats=stats)


def load_for_generation(folder):
    """`(GPTCausalLM, GPTTokenizer)` from a folder on disk.

    Accepted: a Hugging Face `openai-gpt` folder (`config.json` with
    `model_type`), a folder holding a saved `.keras` `GPTCausalLM` (or a
    `GPTBackbone` .keras / keras-hub preset folder) with `vocab.json` +
    `merges.txt` beside it (or in its parent).
    """
    import json

    import keras

    from keras_pretrain.models.gpt.gpt_backbone import GPTBackbone
    from keras_pretrain.models.gpt.gpt_causal_lm import GPTCausalLM
    from keras_pretrain.models.gpt.gpt_tokenizer import GPTTokenizer

    folder = os.fspath(folder)
    if not os.path.isdir(folder):
        raise ConfigError(f"{folder}: not a folder.")
    config_path = os.path.join(folder, "config.json")
    config = {}
    if os.path.exists(config_path):
        with open(config_path, encoding="utf-8") as f:
            config = json.load(f)
    if config.get("model_type") is not None:
        from keras_pretrain import convert

        model, tokenizer = convert.from_huggingface(folder, pretrainer=True)
        if not isinstance(model, GPTCausalLM):
            raise ConfigError(f"{folder}: model_type {config['model_type']!r} is not a GPT model.")
    else:
        kept = sorted(n for n in os.listdir(folder) if n.endswith(".keras"))
        if kept:
            model = keras.models.load_model(os.path.join(folder, kept[0]))
        elif config:
            model = GPTBackbone.from_preset(folder)
        else:
            raise ConfigError(
                f"{folder}: no model found (expected a Hugging Face config.json, "
                "a .keras file or a keras-hub preset)."
            )
        if isinstance(model, GPTBackbone):
            model = GPTCausalLM(model)
        if not isinstance(model, GPTCausalLM):
            raise ConfigError(f"{folder}: {type(model).__name__} is not a GPT language model.")
        tokenizer = None
        for place in (folder, os.path.dirname(os.path.abspath(folder))):
            if all(os.path.exists(os.path.join(place, n)) for n in ("vocab.json", "merges.txt")):
                tokenizer = GPTTokenizer.from_folder(place)
                break
    if tokenizer is None:
        raise ConfigError(f"{folder}: no vocab.json + merges.txt found for the tokenizer.")
    return model, tokenizer
