"""ERNIE 1.0 pretraining task: knowledge-masked LM (+ next sentence prediction)."""

import keras

from keras_pretrain.models.masked_lm import MaskedLMPretrainer
from keras_pretrain.models.ernie.ernie_backbone import ErnieBackbone


@keras.saving.register_keras_serializable(package="keras_pretrain")
class ErniePretrainer(MaskedLMPretrainer):
    """Masked LM + optional next-sentence head on top of an `ErnieBackbone`.

    The heads are BERT's (`MaskedLMPretrainer`: the Hugging Face
    `ErnieForPreTraining` layout, `cls.predictions` + `cls.seq_relationship`);
    the graph also feeds `task_type_ids` when the backbone uses them (missing
    from a feature dict, they default to task 0). What makes ERNIE 1.0 is the
    data: train on knowledge-masked features, where phrases and named
    entities are masked as whole units, in stages basic -> phrase -> entity:

    ```python
    masking = KnowledgeMasking(phrases=..., entities=..., vocabulary=vocab,
                               schedule=[("basic", 10000), ("phrase", 10000), ("entity", None)])
    dataset = pretraining_dataset(paths, tokenizer, objective="nsp", masking=masking)
    ErniePretrainer(backbone).fit(dataset)
    ```

    Args:
        backbone: an `ErnieBackbone`.
        preprocessor: optional keras-hub preprocessor.
        sentence_head: bool (default True). Add the next-sentence head.

    Outputs: dict with `mlm` logits [B, P, V] and `nsp` logits [B, 2].
    """

    backbone_cls = ErnieBackbone

    default_sentence_head = True
