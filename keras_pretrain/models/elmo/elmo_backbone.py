"""ELMo backbone: character CNN token encoder and a two-direction LSTMP biLM."""

import keras
from keras import ops

from keras_pretrain.models.backbone import Backbone
from keras_pretrain.models.backbone import constructor_config
from keras_pretrain.models.elmo.elmo_layers import LSTMP
from keras_pretrain.models.elmo.elmo_layers import ElmoCharacterEncoder

ORIGINAL_FILTERS = [[1, 32], [2, 32], [3, 64], [4, 128], [5, 256], [6, 512], [7, 1024]]


def token_mask(char_ids):
    """(B, W) bool: a token is real when any of its character ids is not 0."""
    return ops.any(ops.not_equal(char_ids, 0), axis=-1)


@keras.saving.register_keras_serializable(package="keras_pretrain")
class ElmoBackbone(Backbone):
    """The ELMo biLM network (Peters et al., 2018), as bilm-tf builds it.

    Character ids (B, W, 50) -> `ElmoCharacterEncoder` (char embedding,
    parallel convolutions, max-pool, activation, highway, projection to D)
    -> two separate stacks of `num_layers` `LSTMP` layers, one reading left
    to right (forward LM), one right to left within each sequence (backward
    LM). From the second layer on each LSTMP layer adds its input to its
    output (bilm-tf's `ResidualWrapper`, `use_skip_connections`). Dropout is
    applied to each LSTM layer's input during training (bilm-tf's
    `DropoutWrapper(input_keep_prob)`). The word softmax is not part of the
    backbone: it belongs to the pretrainer (`ElmoBiLM`), shared by both
    directions.

    Padding tokens are all-zero character rows; batches must be right-padded.

    Stateless by default: every call starts both LSTM stacks from zero
    states, so a sentence's vectors do not depend on what ran before.
    `stateful=True` reproduces bilm-tf's inference (`BidirectionalLanguageModel`),
    whose LSTMs carry their states from one batch to the next: each LSTMP
    layer of each direction keeps (h, c) for `max_batch_size` rows; a batch
    of B rows starts row b from the state that row b of the previous batch
    ended with (after its last real token in the forward LM, after its first
    token in the backward LM, which reads each row reversed) and leaves rows
    B and beyond as they were. Running the same batch twice therefore gives
    different vectors, as in bilm-tf; `reset_states()` returns to zeros. The
    states are not weights: `.keras` files and presets hold the same weights
    either way and a reloaded model starts from zeros.

    Args:
        num_layers: int. LSTM layers per direction (L).
        hidden_dim: int. Token projection and LSTM projection width D.
        lstm_dim: int. LSTM cell size C (4096 in the original).
        filters: list of `[width, count]` character convolutions.
        num_highway: int. Highway layers.
        char_embedding_dim: int. Character embedding width (16).
        num_characters: int. Character id range (262; see elmo_tokenizer).
        max_characters: int. Characters per token (50).
        activation: str. Char CNN activation, "relu" or "tanh".
        cell_clip: float or None. LSTM cell clip (3 in the original).
        proj_clip: float or None. LSTM projection clip (3).
        use_residual: bool. Residual connections from layer 2 on.
        dropout: float. Dropout on the LSTM inputs (0.1 when pretraining).
        stateful: bool. Carry LSTM states across calls, as bilm-tf (see above).
        max_batch_size: int. Rows of the carried states (stateful only; 128
            as bilm-tf).
        dtype: Keras dtype policy.

    Inputs: dict with `char_ids` int (B, W, max_characters).
    Outputs: dict with
        `encoder_outputs`: list of L+1 tensors (B, W, 2D): the token layer
            duplicated to [x; x], then each layer's [forward; backward];
        `sequence_output`: the top layer (B, W, 2D);
        `token_output`: (B, W, D); `forward_output`, `backward_output`: the
            top layer of each direction (B, W, D), what the LM softmax reads;
        `padding_mask`: (B, W) int32, 1 for real tokens.
    `layer_stack(outputs)` turns them into the (L+1, B, W, 2D) stack.

    Example:
    ```python
    backbone = ElmoBackbone.from_preset("elmo_small")
    char_ids = character_ids([["Gold", ",", "surely", "!"]])
    stack = layer_stack(backbone({"char_ids": char_ids}))  # (3, 1, 6, 256)
    ```

    Reference: https://arxiv.org/abs/1802.05365 and
    https://github.com/allenai/bilm-tf (bilm/training.py, bilm/model.py).
    """

    def __init__(
        self,
        num_layers=2,
        hidden_dim=512,
        lstm_dim=4096,
        filters=ORIGINAL_FILTERS,
        num_highway=2,
        char_embedding_dim=16,
        num_characters=262,
        max_characters=50,
        activation="relu",
        cell_clip=3.0,
        proj_clip=3.0,
        use_residual=True,
        dropout=0.0,
        stateful=False,
        max_batch_size=128,
        dtype=None,
        **kwargs,
    ):
        config = constructor_config(locals())
        # === Layers ===
        self.char_encoder = ElmoCharacterEncoder(
            num_characters=num_characters,
            embedding_dim=char_embedding_dim,
            filters=filters,
            num_highway=num_highway,
            projection_dim=hidden_dim,
            activation=activation,
            dtype=dtype,
            name="char_encoder",
        )
        self.forward_layers = []
        self.backward_layers = []
        for direction, layers in (("forward", self.forward_layers), ("backward", self.backward_layers)):
            for i in range(num_layers):
                layers.append(
                    LSTMP(
                        lstm_dim,
                        hidden_dim,
                        cell_clip=cell_clip,
                        proj_clip=proj_clip,
                        go_backwards=direction == "backward",
                        stateful=stateful,
                        max_batch_size=max_batch_size,
                        dtype=dtype,
                        name=f"{direction}_lstm_{i}",
                    )
                )
        self.lstm_dropout = keras.layers.Dropout(
            dropout, dtype=dtype, name="lstm_dropout"
        )

        # === Functional Model ===
        char_ids = keras.Input(
            shape=(None, max_characters), dtype="int32", name="char_ids"
        )
        mask = token_mask(char_ids)
        tokens = self.char_encoder(char_ids)
        tokens = tokens * ops.cast(mask, tokens.dtype)[:, :, None]
        encoder_outputs = [ops.concatenate([tokens, tokens], axis=-1)]
        forward, backward = tokens, tokens
        for i in range(num_layers):
            f = self.forward_layers[i](self.lstm_dropout(forward), mask=mask)
            b = self.backward_layers[i](self.lstm_dropout(backward), mask=mask)
            if use_residual and i > 0:
                f = f + forward
                b = b + backward
            forward, backward = f, b
            encoder_outputs.append(ops.concatenate([forward, backward], axis=-1))
        super().__init__(
            inputs={"char_ids": char_ids},
            outputs={
                "encoder_outputs": encoder_outputs,
                "sequence_output": encoder_outputs[-1],
                "token_output": tokens,
                "forward_output": forward,
                "backward_output": backward,
                "padding_mask": ops.cast(mask, "int32"),
            },
            dtype=dtype,
            **kwargs,
        )

        # === Config ===
        self._keep_config(**dict(config, filters=[[int(w), int(n)] for w, n in filters]))

    def reset_states(self):
        """Zeros the carried LSTM states of a stateful backbone (else nothing)."""
        for layer in self.forward_layers + self.backward_layers:
            layer.reset_states()


def layer_stack(outputs):
    """The (L+1, B, W, 2D) stack of an `ElmoBackbone` output dict."""
    return ops.stack(outputs["encoder_outputs"], axis=0)
