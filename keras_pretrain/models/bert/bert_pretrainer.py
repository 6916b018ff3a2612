"""BERT pretraining task: masked LM + next sentence prediction."""

import keras

from keras_pretrain.models.masked_lm import MaskedLMPretrainer
from keras_pretrain.models.task import PADDING_MASK  # noqa: F401 (importable here as before)
from keras_pretrain.models.task import SEGMENT_IDS  # noqa: F401
from keras_pretrain.models.task import TOKEN_IDS  # noqa: F401
from keras_pretrain.models.task import encoder_inputs
from keras_pretrain.models.bert.bert_backbone import BertBackbone


@keras.saving.register_keras_serializable(package="keras_pretrain")
class BertPretrainer(MaskedLMPretrainer):
    """Masked LM + next sentence prediction on top of a `BertBackbone`.

    `MaskedLMPretrainer` with the NSP head on by default: the MLM head
    (dense + activation + LayerNorm, then the transposed word embeddings plus
    a bias) at the gathered `masked_lm_positions`, and a 2-way dense layer on
    the pooled output (0 = IsNext, 1 = random next, as the original).

    `fit()` accepts datasets of the original feature dicts: `input_ids`,
    `input_mask`, `segment_ids`, `masked_lm_positions`, `masked_lm_ids`,
    `masked_lm_weights`, `next_sentence_labels` (our names `token_ids`,
    `padding_mask` work too; the three encoder inputs are required). Losses:
    masked-LM cross-entropy averaged over real predictions, NSP
    cross-entropy; metrics: `mlm_accuracy`, `nsp_accuracy`.

    Args:
        backbone: a `BertBackbone`.
        preprocessor: optional keras-hub preprocessor.
        sentence_head: bool (default True). Whether to add the NSP head.

    Outputs: dict with `mlm` logits [B, P, V] and `nsp` logits [B, 2].

    On TensorFlow, `compile()` uses XLA on CPU as well (`xla_on_cpu`; pass
    `jit_compile=False` to turn it off).
    """

    backbone_cls = BertBackbone

    default_sentence_head = True

    def backbone_features(self, features):
        return encoder_inputs(features)
