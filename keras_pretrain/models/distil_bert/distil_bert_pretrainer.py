"""DistilBERT masked-LM task (trained alone or distilled with `keras_pretrain.distill`)."""

import keras

from keras_pretrain.models.masked_lm import MaskedLMPretrainer
from keras_pretrain.models.distil_bert.distil_bert_backbone import DistilBertBackbone


@keras.saving.register_keras_serializable(package="keras_pretrain")
class DistilBertPretrainer(MaskedLMPretrainer):
    """Masked LM on top of a `DistilBertBackbone` (no sentence objective).

    The head is DistilBERT's `vocab_transform` (dense) + activation +
    `vocab_layer_norm` + `vocab_projector` (tied to the word embeddings, with
    a bias): keras-hub `MaskedLMHead` at the gathered `masked_lm_positions`.
    `fit()` takes the usual masked-LM feature dicts (`segment_ids`,
    `next_sentence_labels` are ignored). To distil from a teacher, wrap it in
    `keras_pretrain.distill.Distiller`.

    Args:
        backbone: a `DistilBertBackbone`.
        preprocessor: optional keras-hub preprocessor.

    Outputs: dict with `mlm` logits [B, P, V].
    """

    sentence_head_option = False  # no sentence objective (the student learns the teacher's MLM only)
    backbone_cls = DistilBertBackbone
