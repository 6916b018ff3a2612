"""RoBERTa's byte-level BPE tokenizer (keras-hub's, named for our data pipeline)."""

import keras
import keras_hub


@keras.saving.register_keras_serializable(package="keras_pretrain")
class RobertaTokenizer(keras_hub.models.RobertaTokenizer):
    """Byte-level BPE from a `vocab.json` and a `merges.txt` (GPT-2 / RoBERTa).

    keras-hub's `RobertaTokenizer` (its `BytePairTokenizer` reproduces the
    GPT-2 byte-to-unicode mapping, pre-tokenization regex and merges), plus
    the BERT-style special-token names our data pipeline looks up:
    `cls_token` = `<s>`, `sep_token` = `</s>` (also the document separator of
    FULL-SENTENCES), `pad_token` = `<pad>`, `mask_token` = `<mask>`,
    `unk_token` = `<unk>`.

    Args:
        vocabulary: dict token -> id, or the path of `vocab.json`.
        merges: list of merge rules, or the path of `merges.txt`.

    Example:
    ```python
    tokenizer = RobertaTokenizer("vocab.json", "merges.txt")
    tokenizer(["Hello world"])
    ```
    """

    cls_token = "<s>"
    sep_token = "</s>"
    unk_token = "<unk>"
