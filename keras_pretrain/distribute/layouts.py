"""Model-parallel layouts (`keras.distribution.LayoutMap`) for our backbones.

Keys are regular expressions that must match the whole path of a variable
(Keras 3 uses `re.fullmatch`; hence the `(.*/)?` prefixes), for example
`transformer_layer_0/self_attention_layer/query/kernel`; values are axis
names of the device mesh, `None` meaning "replicated along this dimension".
Embeddings and dense kernels are sharded on the `"model"` axis in the
Megatron pattern: column-parallel for the query/key/value projections and the
first feed-forward dense layer (output dimension sharded), row-parallel for
the attention output and the second feed-forward dense layer (input
dimension sharded), so that each block needs one reduction per sub-layer.
Variables no key matches (biases, LayerNorm) are replicated.

Every transformer family of keras_pretrain (BERT, ALBERT, RoBERTa,
DistilBERT, ERNIE, GPT) names its variables the keras-hub way
(`token_embedding`, `transformer_layer_{i}` / ALBERT's `group_{g}_inner_{i}`
holding keras-hub `TransformerEncoder` / `TransformerDecoder` sublayers), so
one table covers them. XLNet and ELMo variables are not matched yet (they stay
replicated: correct, but not model-parallel).
"""

import keras

from keras_pretrain.errors import ConfigError

MODEL = "model"

# (regex, layout) shared by every keras-hub-style transformer backbone.
TRANSFORMER_LAYOUTS = (
    # Word embeddings [vocab, hidden]: vocabulary rows split over "model"
    # (also the tied MLM output projection).
    (r"(.*/)?token_embedding/embeddings", (MODEL, None)),
    (r"(.*/)?(position|segment|task_type)_embedding/embeddings", (None, MODEL)),
    (r"(.*/)?embeddings_projection/kernel", (None, MODEL)),
    # Attention: q/k/v kernels [hidden, heads, head_dim] and biases
    # [heads, head_dim] split by head; output kernel [heads, head_dim, hidden]
    # split by head.
    (r"(.*/)?[^/]*attention[^/]*/(query|key|value)/kernel", (None, MODEL, None)),
    (r"(.*/)?[^/]*attention[^/]*/(query|key|value)/bias", (MODEL, None)),
    (r"(.*/)?[^/]*attention[^/]*/attention_output/kernel", (MODEL, None, None)),
    # Feed-forward [hidden, inner] column-parallel, [inner, hidden] row-parallel.
    (r"(.*/)?feedforward_intermediate_dense/kernel", (None, MODEL)),
    (r"(.*/)?feedforward_output_dense/kernel", (MODEL, None)),
    # Pooler and head dense kernels [hidden, hidden].
    (r"(.*/)?(pooled_dense|intermediate_dense)/kernel", (None, MODEL)),
)


def layout_entries(backbone_class_name):
    """The `(regex, axes)` pairs for a backbone class name."""
    return TRANSFORMER_LAYOUTS


def get_layout_map(device_mesh, backbone="BertBackbone"):
    """A `keras.distribution.LayoutMap` for `backbone` on `device_mesh`.

    Args:
        device_mesh: a `keras.distribution.DeviceMesh` with a `"model"` axis
            (and a batch axis, usually `"batch"`).
        backbone: a backbone (or task) instance, class or class name.

    Example:
    ```python
    mesh = keras.distribution.DeviceMesh((2, 2), ["batch", "model"])
    layout_map = get_layout_map(mesh, BertBackbone)
    keras.distribution.set_distribution(
        keras.distribution.ModelParallel(layout_map=layout_map, batch_dim_name="batch"))
    ```
    """
    if MODEL not in device_mesh.axis_names:
        raise ConfigError(
            f"Model parallelism needs a device mesh with a {MODEL!r} axis; "
            f"found axes {list(device_mesh.axis_names)}."
        )
    name = _class_name(backbone)
    layout_map = keras.distribution.LayoutMap(device_mesh)
    for regex, axes in layout_entries(name):
        layout_map[regex] = axes
    return layout_map


def check_divisible(model, layout_map):
    """Raise a ConfigError naming each variable whose sharded dimension does
    not divide by its mesh axis (JAX cannot shard such a dimension evenly)."""
    mesh = layout_map.device_mesh
    sizes = dict(zip(mesh.axis_names, mesh.shape))
    bad = []
    for variable in model.weights:
        layout = layout_map[variable.path]
        if layout is None:
            continue
        for dim, axis in zip(variable.shape, layout.axes):
            if axis is not None and dim % sizes[axis]:
                bad.append(f"{variable.path} {tuple(variable.shape)} on axes {layout.axes}")
                break
    if bad:
        raise ConfigError(
            "These variables cannot be sharded evenly over the device mesh "
            f"{dict(sizes)}: " + "; ".join(bad)
        )


def _class_name(backbone):
    if isinstance(backbone, str):
        return backbone
    inner = getattr(backbone, "backbone", None)
    if inner is not None and not isinstance(backbone, type):
        backbone = inner
    return backbone.__name__ if isinstance(backbone, type) else type(backbone).__name__
