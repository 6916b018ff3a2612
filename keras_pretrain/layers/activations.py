"""Activation names, mapped exactly.

The original Google TF1 code (BERT, ALBERT) calls the tanh approximation of GELU
"gelu"; the PyTorch ports call the exact erf form "gelu" and the tanh form
"gelu_new". Our configs use the unambiguous names below; importers translate the
name found in a checkpoint's config into one of them.

On TensorFlow, both GELUs run as one XLA-compiled kernel forward and one
backward inside compiled graphs (`model.fit`, `predict`, `tf.function`):
TensorFlow's own GELU is 5-8 elementwise ops, each a pass over the
`[tokens, intermediate]` tensor (17% of a BERT-base forward at batch 32 on a
2-core CPU). The fused kernels compute the same formula. Eager calls and the
graphs traced for a SavedModel (`tf.saved_model.save`'s save context, which
our exporters trace in) keep TensorFlow's ops, so exported SavedModels need no
XLA (TF Serving disables XLA on CPU by default). The kernels are in
`backend_kernels.gelu`.
"""

import keras

from keras_pretrain.errors import ConfigError
from keras_pretrain.layers.backend_kernels import gelu


@keras.saving.register_keras_serializable(package="keras_pretrain")
def gelu_approximate(x):
    """GELU with the tanh approximation (Google's TF1 "gelu", HF "gelu_new")."""
    return gelu(x, approximate=True)


@keras.saving.register_keras_serializable(package="keras_pretrain")
def gelu_exact(x):
    """GELU, the exact erf form (HF "gelu"; our name "gelu")."""
    return gelu(x, approximate=False)


# Our name -> keras callable or identifier.
_ACTIVATIONS = {
    "gelu": gelu_exact,  # exact (erf) form
    "gelu_approximate": gelu_approximate,
    "relu": "relu",
    "tanh": "tanh",
    "silu": "silu",
    "swish": "silu",
    "linear": "linear",
}

# Names used by Hugging Face configs -> our names.
HF_ACTIVATIONS = {
    "gelu": "gelu",
    "gelu_python": "gelu",
    "gelu_new": "gelu_approximate",
    "gelu_fast": "gelu_approximate",
    "gelu_pytorch_tanh": "gelu_approximate",
    "relu": "relu",
    "tanh": "tanh",
    "silu": "silu",
    "swish": "silu",
}

# Names used by the original Google TF1 configs -> our names.
TF1_ACTIVATIONS = {
    "gelu": "gelu_approximate",
    "relu": "relu",
    "tanh": "tanh",
    "swish": "silu",
    "linear": "linear",
}


def get_activation(name):
    """Returns the keras activation for one of our activation names."""
    if name not in _ACTIVATIONS:
        raise ConfigError(
            f"Unknown activation {name!r}. Expected one of "
            f"{sorted(_ACTIVATIONS)} ('gelu' is the exact erf form, "
            "'gelu_approximate' the tanh form)."
        )
    return keras.activations.get(_ACTIVATIONS[name])


def translate_activation(name, table, source):
    """Maps an activation name from a foreign config to ours, or raises."""
    if name not in table:
        raise ConfigError(
            f"{source}: unsupported activation {name!r}; supported: "
            f"{sorted(table)}."
        )
    return table[name]
