"""RoBERTa's byte-level BPE tokenizer (keras-hub's, named for our data pipeline)."""

import keras
import keras_hub
import numpy as np


@keras.saving.register_keras_serializable(package="keras_pretrain")
class RobertaTokenizer(keras_hub.models.RobertaTokenizer):
    """Byte-level BPE from a `vocab.json` and a `merges.txt` (GPT-2 / RoBERTa).

    keras-hub's `RobertaTokenizer` (its `BytePairTokenizer` reproduces the
    GPT-2 byte-to-unicode mapping, pre-tokenization regex and merges), plus
    the BERT-style special-token names our data pipeline looks up:
    `cls_token` = `<s>`, `sep_token` = `</s>` (also the document separator of
    FULL-SENTENCES), `pad_token` = `<pad>`, `mask_token` = `<mask>`,
    `unk_token` = `<unk>`.

    Text is tokenized as text: a literal `<s>`, `</s>`, `<pad>` or `<mask>` in a string becomes its bytes' BPE
    pieces, as GPT-2's encoder and fairseq read it (keras-hub's default makes them special ids, so a user's
    text could inject separators and masks). `special_tokens_in_strings=True` turns that parsing on.

    Args:
        vocabulary: dict token -> id, or the path of `vocab.json`.
        merges: list of merge rules, or the path of `merges.txt`.
        special_tokens_in_strings: bool, read the special tokens written in the text as their ids.

    Example:
    ```python
    tokenizer = RobertaTokenizer("vocab.json", "merges.txt")
    tokenizer(["Hello world"])
    ```
    """

    cls_token = "<s>"
    sep_token = "</s>"
    unk_token = "<unk>"

    def __init__(self, vocabulary=None, merges=None, special_tokens_in_strings=False, **kwargs):
        self.special_tokens_in_strings = special_tokens_in_strings
        if not special_tokens_in_strings:
            kwargs["unsplittable_tokens"] = []
        else:
            kwargs.pop("unsplittable_tokens", None)
        super().__init__(vocabulary=vocabulary, merges=merges, **kwargs)

    def get_config(self):
        config = super().get_config()
        config.pop("unsplittable_tokens", None)
        return {**config, "special_tokens_in_strings": self.special_tokens_in_strings}


@keras.saving.register_keras_serializable(package="keras_pretrain")
class FairseqRobertaTokenizer(RobertaTokenizer):
    """`RobertaTokenizer` for a fairseq dictionary that lacks some GPT-2 tokens.

    fairseq encodes a BPE token whose GPT-2 id is not in `dict.txt` as
    `<unk>` (3). keras-hub's lookup tables need one id per token, so such
    tokens get ids from `num_ids` on in `vocabulary`, and `tokenize` turns
    those into the `<unk>` id. The published RoBERTa dictionaries hold every
    GPT-2 id and get a plain `RobertaTokenizer`.

    Args:
        vocabulary: dict token -> id (ids >= `num_ids` stand for `<unk>`).
        merges: list of merge rules, or the path of `vocab.bpe`.
        num_ids: int. The size of the fairseq dictionary (the model's
            vocabulary size).
    """

    def __init__(self, vocabulary=None, merges=None, num_ids=None, **kwargs):
        self.num_ids = num_ids
        super().__init__(vocabulary=vocabulary, merges=merges, **kwargs)

    def vocabulary_size(self):
        return self.num_ids

    def tokenize(self, inputs, *args, **kwargs):
        ids = super().tokenize(inputs, *args, **kwargs)
        if "int" not in str(self.compute_dtype):
            return ids
        return _unknown_to_unk(ids, self.num_ids, self.vocabulary["<unk>"])

    def get_config(self):
        return {**super().get_config(), "num_ids": self.num_ids}


def _unknown_to_unk(ids, num_ids, unk):
    """Ids >= `num_ids` -> `unk`, in whatever `tokenize` returned."""
    if isinstance(ids, list):
        return [_unknown_to_unk(x, num_ids, unk) for x in ids]
    if isinstance(ids, int):
        return unk if ids >= num_ids else ids
    if isinstance(ids, np.ndarray):
        return np.where(ids >= num_ids, unk, ids).astype(ids.dtype)
    module = type(ids).__module__
    if module.startswith("tensorflow"):
        import tensorflow as tf

        def replace(x):
            return tf.where(x >= num_ids, tf.cast(unk, x.dtype), x)

        return tf.ragged.map_flat_values(replace, ids) if isinstance(ids, tf.RaggedTensor) else replace(ids)
    return keras.ops.where(ids >= num_ids, unk, ids)  # a backend tensor
