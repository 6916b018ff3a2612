"""Causal-LM data: one contiguous token stream over the corpus, cut into fixed-length blocks (GPT)."""

import numpy as np

from keras_pretrain.data.corpus import read_documents
from keras_pretrain.data.instances import create_lm_stream
from keras_pretrain.errors import ConfigError


def lm_blocks(paths, tokenizer, seq_length, separator=None, stats=None, strict=False):
    """Token-id blocks [N, seq_length] of one contiguous stream over the corpus.

    Documents are read with `read_documents`, tokenized into BPE pieces and
    joined (crossing document boundaries, with `separator` after each
    document when given) by `create_lm_stream`; the last, shorter block is
    dropped.
    """
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
