"""ALBERT pretraining task: masked LM + sentence order prediction (SOP)."""

import keras

from keras_pretrain.models.bert.bert_pretrainer import BertPretrainer
from keras_pretrain.models.albert.albert_backbone import AlbertBackbone


@keras.saving.register_keras_serializable(package="keras_pretrain")
class AlbertPretrainer(BertPretrainer):
    """Masked LM + sentence order prediction on top of an `AlbertBackbone`.

    The network is BERT's pretraining head on ALBERT's factorized embedding:
    keras-hub's `MaskedLMHead`, given the E-wide token embedding, gathers the
    `masked_lm_positions`, applies Dense(H->E) + activation + LayerNorm(E) and
    the transposed (tied) word embeddings plus an output bias. The SOP head is
    a 2-way dense layer on the pooled output (0 = segments in order,
    1 = swapped), named `sop`.

    `fit()` accepts datasets of the original feature dicts: `input_ids`,
    `input_mask`, `segment_ids`, `masked_lm_positions`, `masked_lm_ids`,
    `masked_lm_weights`, `next_sentence_labels` (the original ALBERT data
    writer stores the sentence-order label under that name).

    Args:
        backbone: an `AlbertBackbone`.
        preprocessor: optional keras-hub preprocessor.
        sentence_head: bool. Whether to add the SOP head.

    Outputs: dict with `mlm` logits [B, P, V] and `sop` logits [B, 2].
    """

    backbone_cls = AlbertBackbone

    sentence_output = "sop"
    sentence_label = "next_sentence_labels"
