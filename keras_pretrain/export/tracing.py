"""What every SavedModel writer shares: the backend check, tracing helpers, TF-Hub's variable lists."""

import contextlib

import keras

from keras_pretrain.errors import ExportError  # noqa: F401 (imported from here by the exporters)


def require_tensorflow_backend():
    """The `tensorflow` module; a clear ExportError under another Keras backend."""
    if keras.config.backend() != "tensorflow":
        raise ExportError(
            "Writing a SavedModel needs the TensorFlow backend (found "
            f"KERAS_BACKEND={keras.config.backend()!r}). Run the export with "
            "KERAS_BACKEND=tensorflow, e.g. `KERAS_BACKEND=tensorflow python -m "
            "recipes.albert_to_savedmodel ...`, or use `hub_modules.export`, "
            "which does it in a subprocess; the model can be saved as .keras "
            "on any backend and reloaded there."
        )
    import tensorflow as tf

    return tf


def flat(outputs):
    """A signature's flat dict: list outputs become `name_0`, `name_1`, ..."""
    result = {}
    for key, value in outputs.items():
        if isinstance(value, (list, tuple)):
            for i, x in enumerate(value):
                result[f"{key}_{i}"] = x
        else:
            result[key] = value
    return result


def tracked(layers, attribute="weights"):
    """Unique tf.Variables of `layers` (Keras 3 variables wrap them)."""
    seen, result = set(), []
    for layer in layers:
        for weight in getattr(layer, attribute):
            value = weight.value
            if id(value) not in seen:
                seen.add(id(value))
                result.append(value)
    return result


def set_variables(obj, layers, trainable=None):
    """`variables`, `trainable_variables`, `regularization_losses` (TF-Hub reusable SavedModel)."""
    obj.variables = tracked(layers)
    if trainable is None:
        obj.trainable_variables = [v for v in obj.variables if v.trainable]
    else:
        obj.trainable_variables = tracked(trainable)
    # Dropout's seed generator states (used by the training=True traces).
    weights = {id(v) for v in obj.variables}
    obj.other_variables = [v for v in tracked(layers, "variables") if id(v) not in weights]
    obj.regularization_losses = []


def int_specs(tf, names):
    return {name: tf.TensorSpec([None, None], tf.int32, name=name) for name in names}


def tf_function(tf, fn, **kwargs):
    # No autograph: our functions and Keras layers need none (tracing is faster).
    return tf.function(fn, autograph=False, **kwargs)


def tracing_context(tf):
    """Trace as `tf.saved_model.save` will (its default `SaveOptions`).

    `tf.function` caches traces per context, and `save` runs in a save
    context: functions traced outside it are traced a second time while
    saving. Tracing inside the same context halves the export time.
    """
    try:
        # private API: TensorFlow has no public way to enter the save context (pinned 2.21); without it,
        # tracing is merely repeated.
        from tensorflow.python.saved_model import save_context
    except ImportError:  # pragma: no cover
        return contextlib.nullcontext()
    if save_context.in_save_context():
        return contextlib.nullcontext()
    return save_context.save_context(tf.saved_model.SaveOptions())


def function(tf, fn, specs, training=True):
    """A `tf.function` traced for each input structure, training=False.

    With `training`, the first structure (the contract's main one) is also
    traced with training=True (dropout on: fine-tuning through
    `tensorflow_hub.KerasLayer(..., trainable=True)`). Returns the function
    and its training=False concrete functions, one per structure, which the
    flat signatures call instead of tracing again.
    """
    traced_function = tf_function(tf, fn)
    concrete = []
    for i, spec in enumerate(specs):
        for mode in (False, True) if training and i == 0 else (False,):
            traced = traced_function.get_concrete_function(spec, training=mode)
            if not mode:
                concrete.append(traced)
    return traced_function, concrete


def signature(tf, concrete, spec):
    """A flat-output signature calling an already traced function."""
    return tf_function(
        tf, lambda inputs: flat(concrete(inputs, training=False)), input_signature=[spec]
    ).get_concrete_function()
