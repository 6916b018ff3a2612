"""RoBERTa pretraining task: masked LM only (dynamic masking, FULL-SENTENCES)."""

import keras

# Importable from here as before: the base and the input helpers now live in
# keras_pretrain.models.masked_lm and keras_pretrain.models.task.
from keras_pretrain.models.masked_lm import MaskedLMPretrainer
from keras_pretrain.models.task import INPUT_ALIASES  # noqa: F401
from keras_pretrain.models.task import backbone_inputs  # noqa: F401
from keras_pretrain.optimizers import AdamW
from keras_pretrain.models.roberta.roberta_backbone import RobertaBackbone


@keras.saving.register_keras_serializable(package="keras_pretrain")
class RobertaPretrainer(MaskedLMPretrainer):
    """Masked LM on top of a `RobertaBackbone` (RoBERTa has no NSP).

    The LM head is fairseq's / Hugging Face's `lm_head`: dense + exact GELU
    (whatever the encoder's activation) + LayerNorm, then the tied word
    embeddings plus a bias, at the gathered `masked_lm_positions`.

    Train it on FULL-SENTENCES inputs with dynamic masking (a new mask every
    epoch), both from `keras_pretrain.data`:

    ```python
    dataset = pretraining_dataset(paths, tokenizer, objective="full_sentences",
                                  dynamic=True, seq_length=512)
    RobertaPretrainer(backbone).fit(dataset)
    ```

    `fit()` takes datasets of feature dicts (`input_ids`, `input_mask`,
    `masked_lm_positions`, `masked_lm_ids`, `masked_lm_weights`; other
    entries such as `segment_ids` / `next_sentence_labels` are ignored).

    Args:
        backbone: a `RobertaBackbone`.
        preprocessor: optional keras-hub preprocessor.

    Outputs: dict with `mlm` logits [B, P, V].
    """

    backbone_cls = RobertaBackbone

    sentence_head_option = False

    def mlm_activation(self, backbone):
        return "gelu"

    def default_compile_args(self):
        args = super().default_compile_args()
        # RoBERTa's Adam: beta2 0.98, eps 1e-6.
        args["optimizer"] = AdamW(
            1e-4, weight_decay=0.01, beta_2=0.98, epsilon=1e-6
        )
        return args
