"""XLNet backbone: Transformer-XL with relative positions, memories and two-stream attention."""

import keras
import keras_hub
from keras import ops

from keras_pretrain.layers.dropout import Dropout
from keras_pretrain.layers.initializers import normal_kernel_initializer
from keras_pretrain.models.backbone import SubclassedBackbone
from keras_pretrain.models.backbone import check_config_sizes
from keras_pretrain.models.backbone import constructor_config
from keras_pretrain.models.xlnet.xlnet_layers import XLNetFeedForward
from keras_pretrain.models.xlnet.xlnet_layers import XLNetRelativeAttention
from keras_pretrain.models.xlnet.xlnet_layers import XLNetSharedBiases
from keras_pretrain.models.xlnet.xlnet_layers import relative_positional_encoding


def _to_float(x):
    return None if x is None else ops.cast(x, "float32")


def refuse_input_mask(inputs, where="XLNet"):
    """Raises `ConfigError` when a dict of XLNet inputs holds `input_mask`.

    The original XLNet code (`run_classifier.py`, `modeling.py`) writes
    `input_mask` with 1 at PADDING positions; BERT and TF-Hub write 1 at real
    tokens. Reading the name one way or the other would invert the attention
    of half the users silently, so XLNet models take `padding_mask` (1 = real
    token) only. (The exported module's `input_mask` follows TF-Hub, as its
    preprocessor writes it: see `keras_pretrain.export.contracts`.)
    """
    import sys

    from keras_pretrain.errors import ConfigError

    tf = sys.modules.get("tensorflow")
    if tf is not None and isinstance(inputs, tf.data.Dataset):
        inputs = inputs.element_spec
    if isinstance(inputs, tuple) and inputs:  # (x, y, ...)
        inputs = inputs[0]
    if isinstance(inputs, dict) and "input_mask" in inputs:
        raise ConfigError(
            f"{where}: the input 'input_mask' is refused: the original XLNet features mean 1 = "
            "padding, BERT / TF-Hub features 1 = real token, and guessing would invert the "
            "attention. Pass 'padding_mask' with 1 = real token: padding_mask = 1 - input_mask "
            "for features written by the original XLNet scripts, padding_mask = input_mask for "
            "BERT-style (TF-Hub) ones."
        )


class RefusesInputMask:
    """Task mixin: `refuse_input_mask` before `fit` / `evaluate` / `predict` and
    on every batch (checked before the data reaches a `tf.data` map, where
    the error would come back wrapped in a TensorFlow `StagingError`)."""

    def preprocess_samples(self, x, y=None, sample_weight=None):
        refuse_input_mask(x, type(self).__name__)
        return super().preprocess_samples(x, y, sample_weight)

    def fit(self, x=None, y=None, *args, **kwargs):
        refuse_input_mask(x, type(self).__name__)
        return super().fit(x, y, *args, **kwargs)

    def evaluate(self, x=None, y=None, *args, **kwargs):
        refuse_input_mask(x, type(self).__name__)
        return super().evaluate(x, y, *args, **kwargs)

    def predict(self, x, *args, **kwargs):
        refuse_input_mask(x, type(self).__name__)
        return super().predict(x, *args, **kwargs)


@keras.saving.register_keras_serializable(package="keras_pretrain")
class XLNetBackbone(SubclassedBackbone):
    """The XLNet network (Yang et al., 2019) with Transformer-XL recurrence.

    Token embeddings feed `num_layers` blocks of two-stream relative attention
    plus feed-forward. The content stream `h` starts from the token
    embeddings; the query stream `g` (only when `target_mapping` is given)
    starts from a learned `mask_emb` for each of the `P` predictions and
    never sees the content of its own position. Attention uses sinusoidal
    relative position encodings and the content / position / segment biases
    (`r_w_bias`, `r_r_bias`, `r_s_bias` with `seg_embed`); segments enter
    only as "same segment or not" (relative segment encoding).

    Memories (Transformer-XL): `mems` is a list of one `(B, M, H)` tensor per
    layer, the states that entered that layer for the previous segment; keys
    and values are `concat(mems, h)`, and every memory slot may be attended
    to (unless `memory_mask` says otherwise). The output `mems` holds, per
    layer, `concat(mems, h[:, :reuse_len])[:, -mem_len:]` (all of it when
    `mem_len` is None or 0), with `stop_gradient`: no gradient flows into old
    or new memories.

    Why a subclassed model, not a functional one: the inputs `perm_mask`,
    `target_mapping`, `mems` and `memory_mask` are optional and change the
    structure of the outputs (the query stream exists only with targets, the
    memories have a length that grows with each call until `mem_len`); a
    Keras functional model has one fixed input and output structure. Calling
    the backbone on symbolic `token_ids/segment_ids/padding_mask` still works,
    so the classifier is a functional model around it.

    Args:
        vocabulary_size: int.
        num_layers: int.
        num_heads: int.
        hidden_dim: int (`d_model`).
        intermediate_dim: int (`d_inner`).
        dropout: float, on embeddings, attention, feed-forward and outputs.
        activation: str, feed-forward activation. "gelu" is the exact erf
            form (`transformers`' XLNet "gelu", hence the default, for parity
            with the Hugging Face ports); the original XLNet TF code computes
            the tanh approximation ("gelu_approximate" here), as Google's BERT
            and OpenAI's GPT code do.
        layer_norm_epsilon: float (1e-12 in XLNet).
        initializer_range: float, stddev of the normal initializers.
        attn_type: "bi" (bidirectional, XLNet) or "uni" (causal, Transformer-XL).
        mem_len: int or None, number of states kept in the returned memories.
        reuse_len: int or None, only the first `reuse_len` states of the
            current segment are cached.
        clamp_len: int, clip relative distances to `[-clamp_len, clamp_len]`
            (-1: no clipping).
        same_length: bool, with `attn_type="uni"` every token attends to the
            same number of keys.
        bi_data: bool, the second half of the batch uses backward relative
            positions (the batch size must be even).
        untie_r: bool, one set of relative biases per layer (True, the
            published models) or one shared set.
        dtype: Keras dtype policy.

    Inputs: dict with `token_ids`, `segment_ids`, `padding_mask` (int
    `(B, T)`, padding_mask 1 = real token; a dict holding `input_mask`, 1 =
    padding in the original XLNet features, is refused with a `ConfigError`:
    see `refuse_input_mask`) and optionally `perm_mask`
    (`(B, T, T)`, 1 = token i cannot attend to token j), `target_mapping`
    (`(B, P, T)`, 1 = the k-th prediction is at position i), `mems` (list of
    `(B, M, H)`) and `memory_mask` (`(B, M)`, 1 = the slot may be attended to;
    an extension of the reference, which always attends to every slot).

    Outputs: dict with `sequence_output` (content stream, `(B, T, H)`),
    `query_output` (query stream `(B, P, H)`, only with `target_mapping`) and
    `mems` (list of one `(B, M', H)` per layer). Calling with
    `sequence_output=False` (and a `target_mapping`) leaves `sequence_output`
    out and skips the last layer's content stream, which only it needs (the
    permutation-LM loss reads the query stream).

    Note: `transformers` without `token_type_ids` skips the segment term; here
    segment ids are always given (all zeros is one segment, not "none").

    Example:
    ```python
    backbone = XLNetBackbone(vocabulary_size=100, num_layers=2, num_heads=2,
                             hidden_dim=16, intermediate_dim=32, mem_len=8)
    data = {"token_ids": np.ones((2, 6), "int32"), "segment_ids": np.zeros((2, 6), "int32"),
            "padding_mask": np.ones((2, 6), "int32")}
    out = backbone(data)
    out2 = backbone({**data, "mems": out["mems"]})  # next segment
    ```

    Reference: https://arxiv.org/abs/1906.08237
    """

    def __init__(
        self, vocabulary_size, num_layers, num_heads, hidden_dim, intermediate_dim, dropout=0.1,
        activation="gelu", layer_norm_epsilon=1e-12, initializer_range=0.02, attn_type="bi", mem_len=None,
        reuse_len=None, clamp_len=-1, same_length=False, bi_data=False, untie_r=True, dtype=None, **kwargs,
    ):
        config = check_config_sizes(self, constructor_config(locals()))
        if attn_type not in ("bi", "uni"):
            raise ValueError(f"attn_type must be 'bi' or 'uni', got {attn_type!r}.")
        # Subclassed model: initialise first so the layers below are tracked
        # on every backend (keras-hub routes early setattr around torch).
        super().__init__(dtype=dtype, **kwargs)

        # === Config ===
        self._keep_config(**config)
        head_dim = hidden_dim // num_heads

        # === Layers ===
        init = lambda: normal_kernel_initializer(initializer_range)  # noqa: E731
        self.token_embedding = keras_hub.layers.ReversibleEmbedding(
            input_dim=vocabulary_size,
            output_dim=hidden_dim,
            embeddings_initializer=init(),
            dtype=self.dtype_policy,
            name="token_embedding",
        )
        self.embeddings_dropout = Dropout(dropout, dtype=self.dtype_policy, name="embeddings_dropout")
        self.shared_biases = None
        if not untie_r:
            self.shared_biases = XLNetSharedBiases(
                num_heads, head_dim, kernel_initializer=init(), dtype=self.dtype_policy, name="shared_biases"
            )
        shared = dict(dropout=dropout, layer_norm_epsilon=layer_norm_epsilon, dtype=self.dtype_policy)
        self.attention_layers = [
            XLNetRelativeAttention(num_heads, head_dim, own_biases=untie_r, kernel_initializer=init(),
                                   name=f"attention_layer_{i}", **shared)
            for i in range(num_layers)
        ]
        self.feedforward_layers = [
            XLNetFeedForward(intermediate_dim, activation=activation, kernel_initializer=init(),
                             name=f"feedforward_layer_{i}", **shared)
            for i in range(num_layers)
        ]
        self.output_dropout = Dropout(dropout, dtype=self.dtype_policy, name="output_dropout")
        self.build()

    def build(self, input_shape=None):
        if self.built and getattr(self, "mask_emb", None) is not None:
            return
        self.token_embedding.build((None, None))
        self.mask_emb = self.add_weight(
            shape=(1, 1, self.hidden_dim),
            initializer=normal_kernel_initializer(self.initializer_range),
            name="mask_emb",
        )
        if self.shared_biases is not None:
            self.shared_biases.build()
        for attention, feedforward in zip(self.attention_layers, self.feedforward_layers):
            attention.build((None, None, self.hidden_dim))
            feedforward.build((None, None, self.hidden_dim))
        self.built = True

    # --- helpers (reference: XLNetModel.create_mask / forward / cache_mem) ---

    def _masks(self, padding_mask, perm_mask, memory_mask, qlen, mlen, batch, has_mems):
        """Attention masks `(B, T, K)` (1 = cannot attend) of the two streams."""
        klen = qlen + mlen
        data = 1.0 - ops.cast(padding_mask, "float32")[:, None, :]  # (B, 1, T)
        data = ops.broadcast_to(data, (batch, qlen, qlen))
        if perm_mask is not None:
            data = data + ops.cast(perm_mask, "float32")
        if has_mems:
            if memory_mask is None:
                mem = ops.zeros((batch, qlen, mlen), "float32")
            else:
                mem = ops.broadcast_to(
                    1.0 - ops.cast(memory_mask, "float32")[:, None, :], (batch, qlen, mlen)
                )
            data = ops.concatenate([mem, data], axis=2)
        i = ops.arange(qlen)[:, None]
        j = ops.arange(klen)[None, :]
        if self.attn_type == "uni":
            causal = j > i + mlen
            if self.same_length:
                causal = ops.logical_or(causal, ops.logical_and(j < qlen, j < i))
            data = data + ops.cast(causal, "float32")[None]
        query_mask = ops.cast(data > 0, "float32")
        # The content stream always sees its own token.
        own = ops.cast(ops.equal(j, i + mlen), "float32")
        content_mask = ops.cast(query_mask - own[None] > 0, "float32")
        return content_mask, query_mask

    def _cache(self, current, previous):
        if self.reuse_len is not None and self.reuse_len > 0:
            current = current[:, : self.reuse_len]
        new = current if previous is None else ops.concatenate([previous, current], axis=1)
        if self.mem_len is not None and self.mem_len > 0:
            new = new[:, -self.mem_len :]
        return ops.stop_gradient(new)

    def call(self, inputs, training=None, sequence_output=True):
        refuse_input_mask(inputs, type(self).__name__)
        token_ids = inputs["token_ids"]
        segment_ids = inputs["segment_ids"]
        padding_mask = inputs["padding_mask"]
        perm_mask = inputs.get("perm_mask")
        target_mapping = inputs.get("target_mapping")
        mems = inputs.get("mems")
        memory_mask = inputs.get("memory_mask")
        if mems is not None and not isinstance(mems, (list, tuple)):
            # A stacked `(B, num_layers, M, H)` tensor.
            mems = [mems[:, i] for i in range(self.num_layers)]
        if mems is not None and len(mems) == 0:
            mems = None
        if mems is not None and len(mems) != self.num_layers:
            raise ValueError(f"mems: expected {self.num_layers} tensors (one per layer), got {len(mems)}.")
        if not sequence_output and target_mapping is None:
            raise ValueError("sequence_output=False needs a `target_mapping` (the query stream is the only output).")
        compute_dtype = self.compute_dtype

        batch, qlen = ops.shape(token_ids)[0], ops.shape(token_ids)[1]
        mlen = 0 if mems is None else ops.shape(mems[0])[1]
        klen = qlen + mlen
        content_mask, query_mask = self._masks(
            padding_mask, perm_mask, memory_mask, qlen, mlen, batch, mems is not None
        )
        content_mask = ops.cast(content_mask, compute_dtype)
        query_mask = ops.cast(query_mask, compute_dtype)

        h = self.embeddings_dropout(self.token_embedding(token_ids), training=training)
        g = None
        if target_mapping is not None:
            target_mapping = ops.cast(target_mapping, compute_dtype)
            num_predict = ops.shape(target_mapping)[1]
            g = ops.broadcast_to(ops.cast(self.mask_emb, compute_dtype), (batch, num_predict, self.hidden_dim))
            g = self.embeddings_dropout(g, training=training)

        # Relative segment encoding: 1 where query and key segments differ
        # (memory slots count as segment 0).
        segment_ids = ops.cast(segment_ids, "int32")
        cat_ids = segment_ids
        if mems is not None:
            cat_ids = ops.concatenate([ops.zeros((batch, mlen), "int32"), segment_ids], axis=1)
        different = ops.cast(ops.not_equal(segment_ids[:, :, None], cat_ids[:, None, :]), "int32")
        segment_matrix = ops.one_hot(different, 2, dtype=compute_dtype)  # (B, T, K, 2)

        position_encoding = relative_positional_encoding(
            qlen, klen, self.hidden_dim, batch, self.attn_type, self.bi_data, self.clamp_len
        )
        position_encoding = self.embeddings_dropout(ops.cast(position_encoding, compute_dtype), training=training)

        biases = None
        if self.shared_biases is not None:
            biases = tuple(
                ops.convert_to_tensor(b)
                for b in (self.shared_biases.r_w_bias, self.shared_biases.r_r_bias, self.shared_biases.r_s_bias)
            )
        new_mems = []
        for i in range(self.num_layers):
            memory = None
            if mems is not None:
                memory = ops.stop_gradient(ops.cast(mems[i], compute_dtype))
            new_mems.append(self._cache(h, memory))
            h, g = self.attention_layers[i](
                h,
                query=g,
                content_mask=content_mask,
                query_mask=query_mask,
                position_encoding=position_encoding,
                segment_matrix=segment_matrix,
                memory=memory,
                target_mapping=target_mapping,
                biases=biases,
                training=training,
                content_output=sequence_output or i < self.num_layers - 1,
            )
            if h is not None:
                h = self.feedforward_layers[i](h, training=training)
            if g is not None:
                g = self.feedforward_layers[i](g, training=training)

        outputs = {"mems": new_mems}
        if h is not None:
            outputs["sequence_output"] = self.output_dropout(h, training=training)
        if g is not None:
            outputs["query_output"] = self.output_dropout(g, training=training)
        return outputs

    def compute_output_spec(self, inputs, training=None, sequence_output=True):
        token_ids = inputs["token_ids"]
        batch, qlen = token_ids.shape[0], token_ids.shape[1]
        dtype = self.compute_dtype
        mems = inputs.get("mems")
        mlen = 0 if not mems else (mems[0].shape[1] if isinstance(mems, (list, tuple)) else mems.shape[2])
        if mems and (mlen is None or qlen is None):
            mem_out = None
        elif self.reuse_len:
            mem_out = (mlen or 0) + min(self.reuse_len, qlen) if qlen is not None else None
        else:
            mem_out = None if qlen is None else (mlen or 0) + qlen
        if mem_out is not None and self.mem_len:
            mem_out = min(mem_out, self.mem_len)
        out = {
            "sequence_output": keras.KerasTensor((batch, qlen, self.hidden_dim), dtype),
            "mems": [keras.KerasTensor((batch, mem_out, self.hidden_dim), dtype) for _ in range(self.num_layers)],
        }
        if not sequence_output:
            del out["sequence_output"]
        if inputs.get("target_mapping") is not None:
            num_predict = inputs["target_mapping"].shape[1]
            out["query_output"] = keras.KerasTensor((batch, num_predict, self.hidden_dim), dtype)
        return out
