"""Weight placing for blocks several families share (keras-hub layers).

The checkpoint readers (`keras_pretrain.checkpoints`) return arrays by name;
these functions put them onto the layers' variables.

Each function takes a `WeightLoader`, the Keras layer and a dict of
checkpoint names for the canonical parts of the block, plus `linear`, the
transform of dense kernels (`torch_linear` for PyTorch layouts, None for TF1
layouts that are already [in, out]).
"""

BLOCK_KEYS = (
    "query", "query_bias", "key", "key_bias", "value", "value_bias",
    "attention_output", "attention_output_bias",
    "attention_norm", "attention_norm_bias",
    "intermediate", "intermediate_bias", "output", "output_bias",
    "output_norm", "output_norm_bias",
)


def load_dense(loader, dense, kernel, bias, linear=None):
    loader.assign(dense.kernel, kernel, linear)
    loader.assign(dense.bias, bias)


def load_layer_norm(loader, norm, gamma, beta):
    loader.assign(norm.gamma, gamma)
    loader.assign(norm.beta, beta)


def load_attention(loader, attention, names, linear=None):
    """keras `MultiHeadAttention` (per-head einsum kernels) from dense ones."""
    for part, layer in (
        ("query", attention._query_dense),
        ("key", attention._key_dense),
        ("value", attention._value_dense),
    ):
        loader.assign(layer.kernel, names[part], linear, reshape=True)
        loader.assign(layer.bias, names[part + "_bias"], reshape=True)
    out = attention._output_dense
    loader.assign(out.kernel, names["attention_output"], linear, reshape=True)
    loader.assign(out.bias, names["attention_output_bias"])


def load_transformer_encoder(loader, layer, names, linear=None):
    """keras-hub `TransformerEncoder` (post-LN or pre-LN) from a name map."""
    load_attention(loader, layer._self_attention_layer, names, linear)
    load_layer_norm(
        loader,
        layer._self_attention_layer_norm,
        names["attention_norm"],
        names["attention_norm_bias"],
    )
    load_dense(
        loader,
        layer._feedforward_intermediate_dense,
        names["intermediate"],
        names["intermediate_bias"],
        linear,
    )
    load_dense(
        loader,
        layer._feedforward_output_dense,
        names["output"],
        names["output_bias"],
        linear,
    )
    load_layer_norm(
        loader,
        layer._feedforward_layer_norm,
        names["output_norm"],
        names["output_norm_bias"],
    )


def load_masked_lm_head(loader, head, dense, dense_bias, gamma, beta, bias, linear=None):
    """keras-hub `MaskedLMHead` (tied output embedding)."""
    load_dense(loader, head._intermediate_dense, dense, dense_bias, linear)
    load_layer_norm(loader, head._intermediate_layer_norm, gamma, beta)
    loader.assign(head._bias, bias)
