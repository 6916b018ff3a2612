"""ERNIE backbone: BERT's network with ERNIE's defaults and optional task-type embeddings."""

import keras

from keras_pretrain.models.bert.bert_backbone import BertBackbone


@keras.saving.register_keras_serializable(package="keras_pretrain")
class ErnieBackbone(BertBackbone):
    """The ERNIE encoder (Sun et al., 2019; ERNIE 2.0, 2020).

    ERNIE 1.0 is BERT's network (same layers and weight names as
    `BertBackbone`, so BERT's converters and heads apply) with its own
    configuration: relu feed-forward activation, a 18000-entry Chinese
    vocabulary, 513 positions. What it adds is in the data (knowledge masking,
    `keras_pretrain.data.KnowledgeMasking`). ERNIE 2.0's continual multi-task
    pretraining adds a task-type embedding to the embedding sum, fed by a
    `task_type_ids` input: `BertBackbone(num_task_types=...)`, named here as
    Hugging Face `ErnieModel` names it (`use_task_id`,
    `task_type_vocab_size`). This class writes only those differences: the
    defaults and the argument names (also those of its config).

    Args:
        vocabulary_size, num_layers, num_heads, hidden_dim, intermediate_dim,
        dropout, num_segments, layer_norm_epsilon, initializer_range, dtype:
            as `BertBackbone`.
        max_sequence_length: int. 513 in ERNIE 1.0.
        activation: str. "relu" in ERNIE 1.0 (our activation names).
        use_task_id: bool. Add task-type embeddings and the `task_type_ids`
            input.
        task_type_vocab_size: int. Number of task types (3 in the ports).

    Inputs: dict with `token_ids`, `segment_ids`, `padding_mask` (and
    `task_type_ids` with `use_task_id`), int [B, T].
    Outputs: as `BertBackbone`.

    Example:
    ```python
    backbone = ErnieBackbone.from_preset("ernie_1.0_base_zh")
    ```

    Reference: https://arxiv.org/abs/1904.09223, https://arxiv.org/abs/1907.12412
    """

    def __init__(
        self,
        *args,
        max_sequence_length=513,
        activation="relu",
        use_task_id=False,
        task_type_vocab_size=3,
        **kwargs,
    ):
        # `num_task_types` (BertBackbone's name) is accepted too.
        num_task_types = kwargs.pop("num_task_types", None)
        if num_task_types:
            use_task_id, task_type_vocab_size = True, num_task_types
        super().__init__(
            *args,
            max_sequence_length=max_sequence_length,
            activation=activation,
            num_task_types=task_type_vocab_size if use_task_id else None,
            **kwargs,
        )

        # === Config ===
        self._keep_config(use_task_id=use_task_id, task_type_vocab_size=task_type_vocab_size)

    def get_config(self):
        config = super().get_config()
        del config["num_task_types"]  # written as use_task_id / task_type_vocab_size
        return config
