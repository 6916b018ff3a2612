"""ERNIE backbone: BERT's network, ERNIE's config, optional task-type embeddings."""

import keras
import keras_hub

from keras_pretrain.layers.activations import get_activation
from keras_pretrain.layers.dropout import Dropout
from keras_pretrain.layers.transformer_encoder import TransformerEncoder
from keras_pretrain.models.backbone import Backbone
from keras_pretrain.models.backbone import check_sizes
from keras_pretrain.models.bert.bert_backbone import BertBackbone
from keras_pretrain.models.bert.bert_backbone import bert_kernel_initializer


@keras.saving.register_keras_serializable(package="keras_pretrain")
class ErnieBackbone(BertBackbone):
    """The ERNIE encoder (Sun et al., 2019; ERNIE 2.0, 2020).

    ERNIE 1.0 is BERT's network (same layers and weight names as
    `BertBackbone`, so BERT's converters and heads apply) with its own
    configuration: relu feed-forward activation, a 18000-entry Chinese
    vocabulary, 513 positions. What it adds is in the data (knowledge masking,
    `keras_pretrain.data.KnowledgeMasking`). ERNIE 2.0's continual multi-task
    pretraining adds a task-type embedding to the embedding sum
    (`use_task_id=True`, `task_type_vocab_size` tasks, as Hugging Face
    `ErnieModel`), fed by a `task_type_ids` input. BERT's graph has no slot
    for that input, so this class builds its own (same layers, plus one
    embedding) instead of calling `BertBackbone.__init__`.

    Args:
        vocabulary_size, num_layers, num_heads, hidden_dim, intermediate_dim,
        dropout, max_sequence_length, num_segments, layer_norm_epsilon,
        initializer_range: as `BertBackbone`.
        activation: str. "relu" in ERNIE 1.0 (our activation names).
        use_task_id: bool. Add task-type embeddings and the `task_type_ids`
            input.
        task_type_vocab_size: int. Number of task types (3 in the ports).
        dtype: Keras dtype policy.

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
        vocabulary_size,
        num_layers,
        num_heads,
        hidden_dim,
        intermediate_dim,
        dropout=0.1,
        max_sequence_length=513,
        num_segments=2,
        activation="relu",
        layer_norm_epsilon=1e-12,
        initializer_range=0.02,
        use_task_id=False,
        task_type_vocab_size=3,
        dtype=None,
        **kwargs,
    ):
        check_sizes(self, vocabulary_size=vocabulary_size, num_layers=num_layers, num_heads=num_heads,
                    hidden_dim=hidden_dim, intermediate_dim=intermediate_dim, max_sequence_length=max_sequence_length)
        # === Layers ===
        init = lambda: bert_kernel_initializer(initializer_range)  # noqa: E731
        self.token_embedding = keras_hub.layers.ReversibleEmbedding(
            input_dim=vocabulary_size,
            output_dim=hidden_dim,
            embeddings_initializer=init(),
            dtype=dtype,
            name="token_embedding",
        )
        self.position_embedding = keras_hub.layers.PositionEmbedding(
            sequence_length=max_sequence_length,
            initializer=init(),
            dtype=dtype,
            name="position_embedding",
        )
        self.segment_embedding = keras.layers.Embedding(
            input_dim=num_segments,
            output_dim=hidden_dim,
            embeddings_initializer=init(),
            dtype=dtype,
            name="segment_embedding",
        )
        self.task_type_embedding = None
        if use_task_id:
            self.task_type_embedding = keras.layers.Embedding(
                input_dim=task_type_vocab_size,
                output_dim=hidden_dim,
                embeddings_initializer=init(),
                dtype=dtype,
                name="task_type_embedding",
            )
        self.embeddings_add = keras.layers.Add(dtype=dtype, name="embeddings_add")
        self.embeddings_layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, dtype=dtype, name="embeddings_layer_norm"
        )
        self.embeddings_dropout = Dropout(
            dropout, dtype=dtype, name="embeddings_dropout"
        )
        self.transformer_layers = [
            TransformerEncoder(
                num_heads=num_heads,
                intermediate_dim=intermediate_dim,
                activation=get_activation(activation),
                dropout=dropout,
                layer_norm_epsilon=layer_norm_epsilon,
                kernel_initializer=init(),
                dtype=dtype,
                name=f"transformer_layer_{i}",
            )
            for i in range(num_layers)
        ]
        self.pooled_dense = keras.layers.Dense(
            hidden_dim,
            activation="tanh",
            kernel_initializer=init(),
            dtype=dtype,
            name="pooled_dense",
        )

        # === Functional Model ===
        inputs = {
            name: keras.Input(shape=(None,), dtype="int32", name=name)
            for name in ("token_ids", "segment_ids", "padding_mask")
        }
        if use_task_id:
            inputs["task_type_ids"] = keras.Input(
                shape=(None,), dtype="int32", name="task_type_ids"
            )
        x = self._embed(inputs)
        encoder_outputs = []
        for layer in self.transformer_layers:
            x = layer(x, padding_mask=inputs["padding_mask"])
            encoder_outputs.append(x)
        pooled = self.pooled_dense(x[:, 0, :])
        Backbone.__init__(
            self,
            inputs=inputs,
            outputs={
                "sequence_output": x,
                "pooled_output": pooled,
                "encoder_outputs": encoder_outputs,
            },
            dtype=dtype,
            **kwargs,
        )

        # === Config ===
        self.vocabulary_size = vocabulary_size
        self.num_layers = num_layers
        self.num_heads = num_heads
        self.hidden_dim = hidden_dim
        self.intermediate_dim = intermediate_dim
        self.dropout = dropout
        self.max_sequence_length = max_sequence_length
        self.num_segments = num_segments
        self.activation = activation
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range
        self.use_task_id = use_task_id
        self.task_type_vocab_size = task_type_vocab_size

    def _embedding_parts(self, inputs):
        """BERT's embeddings, plus task-type embeddings with `use_task_id`."""
        parts = super()._embedding_parts(inputs)
        if "task_type_ids" in inputs:
            parts.append(self.task_type_embedding(inputs["task_type_ids"]))
        return parts

    def _config(self):
        config = super()._config()
        config.update(
            {
                "use_task_id": self.use_task_id,
                "task_type_vocab_size": self.task_type_vocab_size,
            }
        )
        return config
