"""GPT pretraining glue: corpus -> token-id blocks, model, text sampling.

`recipes.pretrain --model gpt` needs three things, all here:
`build_gpt_pretraining(params, paths)` (tokenizer, datasets, model and a
sampling function in one call), or the pieces `lm_dataset`, `GPTCausalLM`
and `sample_text`. `load_for_generation(folder)` reads what was saved back
(used by `recipes.generate`).
"""

import os
import types

import numpy as np

from keras_pretrain.errors import ConfigError

# A tiny configuration that learns something in minutes on 2 cores.
DEMO_CONFIG = {
    "num_layers": 2,
    "num_heads": 2,
    "hidden_dim": 128,
    "intermediate_dim": 512,
    "dropout": 0.1,
}


def lm_blocks(paths, tokenizer, seq_length, separator=None, stats=None, strict=False):
    """Token-id blocks [N, seq_length] of one contiguous stream over the corpus.

    Documents are read with `read_documents`, tokenized into BPE pieces and
    joined (crossing document boundaries, with `separator` after each
    document when given) by `create_lm_stream`; the last, shorter block is
    dropped.
    """
    from keras_pretrain.data import create_lm_stream
    from keras_pretrain.data import read_documents

    documents = [
        [tokenizer.tokenize_to_pieces(s) for s in doc]
        for doc in read_documents(paths, strict=strict, stats=stats)
    ]
    instances = create_lm_stream(documents, seq_length, separator=separator)
    if not instances:
        raise ConfigError(
            f"The corpus {paths!r} holds fewer than seq_length={seq_length} tokens."
        )
    return np.array(
        [[tokenizer.token_to_id(t) for t in inst.tokens] for inst in instances], "int32"
    )


def lm_dataset(paths, tokenizer, seq_length, batch_size, seed=0, shuffle=True,
               drop_remainder=False, separator=None, stats=None, strict=False):
    """A batched `tf.data.Dataset` of `{"token_ids", "padding_mask"}` blocks.

    `GPTCausalLM.fit` derives the next-token labels from `token_ids`.
    """
    import tensorflow as tf

    ids = lm_blocks(paths, tokenizer, seq_length, separator, stats, strict)
    dataset = tf.data.Dataset.from_tensor_slices(
        {"token_ids": ids, "padding_mask": np.ones_like(ids)}
    )
    if shuffle:
        dataset = dataset.shuffle(len(ids), seed=seed, reshuffle_each_iteration=True)
    return dataset.batch(batch_size, drop_remainder=drop_remainder).prefetch(tf.data.AUTOTUNE)


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


def _tokenizer(params, paths, out):
    from keras_pretrain.data import read_documents
    from keras_pretrain.models.gpt.gpt_tokenizer import GPTTokenizer
    from keras_pretrain.models.gpt.gpt_tokenizer import learn_bpe

    vocab = getattr(params, "vocab", None)
    if vocab:
        folder = vocab if os.path.isdir(vocab) else os.path.dirname(vocab)
        tokenizer = GPTTokenizer.from_folder(folder)
    else:
        lines = (s for doc in read_documents(paths) for s in doc)
        tokenizer = learn_bpe(lines, getattr(params, "vocab_size", 8000))
    if out:
        tokenizer.save(out)
    return tokenizer


def build_gpt_pretraining(params, paths):
    """Everything `recipes.pretrain --model gpt` needs, in one call.

    Args:
        params: argparse-like object. Read: `vocab` (a folder or `vocab.json`
            path with `merges.txt` beside it; None learns BPE from the corpus
            with `vocab_size` entries), `vocab_size`, `seq_length`,
            `batch_size`, `seed`, `preset` (None: `DEMO_CONFIG`),
            `eval_batches`, `out` (the tokenizer is saved there as
            `vocab.json` + `merges.txt`).
        paths: corpus files.

    Returns:
        A namespace: `tokenizer`, `train` (repeatable dataset of blocks,
        drop_remainder), `held_out` (cached `eval_batches` batches), `model`
        (`GPTCausalLM`, compiled with its defaults), `metric` ("perplexity")
        and `sample(prompt, max_length=32) -> str` (greedy).
    """
    from keras_pretrain.data import CorpusStats
    from keras_pretrain.models.gpt.gpt_backbone import GPTBackbone
    from keras_pretrain.models.gpt.gpt_causal_lm import GPTCausalLM
    from keras_pretrain.models.gpt.gpt_causal_lm import make_sampler

    out = getattr(params, "out", None)
    seed = getattr(params, "seed", 0)
    tokenizer = _tokenizer(params, paths, out)
    stats = CorpusStats()
    common = dict(seq_length=params.seq_length, batch_size=params.batch_size)
    train = lm_dataset(paths, tokenizer, seed=seed, drop_remainder=True, stats=stats, **common)
    held_out = lm_dataset(paths, tokenizer, seed=seed + 1, **common)
    held_out = held_out.take(getattr(params, "eval_batches", 8)).cache()
    preset = getattr(params, "preset", None)
    if preset:
        backbone = GPTBackbone.from_preset(
            preset, vocabulary_size=tokenizer.vocabulary_size(),
            max_sequence_length=max(params.seq_length, 512),
        )
    else:
        backbone = GPTBackbone(
            vocabulary_size=tokenizer.vocabulary_size(),
            max_sequence_length=max(params.seq_length, 64), **DEMO_CONFIG,
        )
    model = GPTCausalLM(backbone)

    def sample(prompt, max_length=32, sampler="greedy", **options):
        return sample_text(model, tokenizer, prompt, max_length,
                           sampler=make_sampler(sampler, seed=seed, **options))

    return types.SimpleNamespace(
        tokenizer=tokenizer, train=train, held_out=held_out, model=model,
        metric="perplexity", sample=sample, stats=stats,
    )


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
