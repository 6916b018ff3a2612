"""Base classes of every keras_pretrain backbone."""

import numbers
import os

import keras
import keras_hub
from keras import ops

from keras_pretrain.errors import ConfigError


def check_sizes(model, num_heads, hidden_dim, **sizes):
    """Raises a ConfigError unless every size is a positive integer and
    `hidden_dim` divides by `num_heads` (otherwise attention would silently
    use `hidden_dim // num_heads` per head, or divide by zero). `model`: the
    backbone being built (or its class name), named in the message."""
    name = model if isinstance(model, str) else type(model).__name__
    sizes = dict(sizes, num_heads=num_heads, hidden_dim=hidden_dim)
    bad = {k: v for k, v in sizes.items() if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1}
    if bad:
        raise ConfigError(f"{name}: sizes must be positive integers; found {bad}.")
    if hidden_dim % num_heads:
        raise ConfigError(
            f"{name}: hidden_dim {hidden_dim} is not divisible by num_heads {num_heads} "
            f"(each head gets hidden_dim / num_heads dimensions)."
        )


class PresetMixin:
    """Published configurations: `preset_configs`, `from_preset`, `_config()`.

    Subclasses set `preset_configs`, a dict `name -> {"config": {...},
    "description": str, ...}` (metadata only, no weights). `from_preset(name)`
    builds a randomly initialised model with the exact published shapes; a
    path to a keras-hub preset folder (`save_to_preset`) loads config and
    weights from disk. Nothing is ever downloaded.
    """

    preset_configs = {}

    @classmethod
    def from_preset(cls, preset, load_weights=True, **kwargs):
        if preset in cls.preset_configs:
            config = dict(cls.preset_configs[preset]["config"])
            config.update(kwargs)
            return cls(**config)
        if isinstance(preset, (str, os.PathLike)) and os.path.isdir(preset):
            parent = getattr(super(), "from_preset", None)
            if parent is not None:
                return parent(str(preset), load_weights=load_weights, **kwargs)
            return _load_preset_folder(cls, str(preset), load_weights, kwargs)
        raise ConfigError(
            f"{cls.__name__}: unknown preset {preset!r}. Known presets: "
            f"{sorted(cls.preset_configs)}; or pass a local preset folder "
            "written by `save_to_preset`. Weights are never downloaded."
        )

    @classmethod
    def preset_names(cls):
        return sorted(cls.preset_configs)

    def get_config(self):
        config = super().get_config()
        config.update(self._config())
        return config

    def _config(self):
        """The constructor arguments of the subclass (override)."""
        return {}


def _load_preset_folder(cls, preset, load_weights, kwargs):
    """keras-hub's preset loader, for backbones that are not keras-hub `Backbone`s."""
    from keras_hub.src.utils.preset_utils import get_preset_loader

    loader = get_preset_loader(preset)
    backbone_cls = loader.check_backbone_class()
    if not issubclass(backbone_cls, cls):
        raise ConfigError(f"{preset}: holds a {backbone_cls.__name__}, not a {cls.__name__}.")
    return loader.load_backbone(backbone_cls, load_weights, **kwargs)


class Backbone(PresetMixin, keras_hub.models.Backbone):
    """A keras-hub `Backbone` (functional) that knows our published configurations.

    Transformer encoders that define `_embed(inputs)` (the embedding output,
    `[B, T, H]`) and `_encoder_blocks()` (their `TransformerEncoder` calls in
    order) also get `sequence_output_at`, which pretrainers use to run the
    last block only at the masked positions.
    """

    def _encoder_blocks(self):
        return self.transformer_layers

    @property
    def supports_sequence_output_at(self):
        return hasattr(self, "_embed")

    def sequence_output_at(self, inputs, positions, pooled=False):
        """`sequence_output` gathered at `positions`, and `pooled_output`.

        Runs the embeddings and every block but the last on all `T`
        positions, and the last block only at `positions` (int `[B, P]`; its
        keys and values still come from all positions, see
        `TransformerEncoder(query_positions=...)`). The result equals
        `take_along_axis(backbone(inputs)["sequence_output"], positions)`;
        a masked-LM step with 20 of 128 positions predicted skips about 70%
        of the last block's work.

        Args:
            inputs: dict of the backbone's inputs (tensors, not symbolic).
            positions: int `[B, P]`.
            pooled: bool. Also return `pooled_output` (its position 0 is
                computed with the others).

        Returns:
            `(sequence [B, P, H], pooled [B, H] or None)`.
        """
        if not self.supports_sequence_output_at:
            raise NotImplementedError(
                f"{type(self).__name__} has no `sequence_output_at`."
            )
        padding_mask = inputs["padding_mask"]
        blocks = list(self._encoder_blocks())
        x = self._embed(inputs)
        for block in blocks[:-1]:
            x = block(x, padding_mask=padding_mask)
        if pooled:
            first = ops.zeros_like(positions[:, :1])
            positions = ops.concatenate([first, positions], axis=1)
        x = blocks[-1](x, padding_mask=padding_mask, query_positions=positions)
        if not pooled:
            return x, None
        return x[:, 1:], self.pooled_dense(x[:, 0, :])


class SubclassedBackbone(PresetMixin, keras.Model):
    """Base of backbones that cannot be functional models (XLNet's optional inputs).

    Why not keras-hub's `Backbone`: Keras rewrites the base class of a model
    class to `Functional` the first time a functional subclass of it is built
    (`inject_functional_model_class`). Once any functional backbone exists,
    every class deriving from keras-hub's `Backbone` is a `Functional`, whose
    `__init__` demands `inputs` and `outputs`. A subclassed model therefore
    derives from `keras.Model` itself; this class supplies the keras-hub
    `Backbone` conveniences it needs (config, `token_embedding`).
    """

    def __init__(self, *args, dtype=None, **kwargs):
        super().__init__(*args, **kwargs)
        if dtype is not None:
            self.dtype_policy = keras.dtype_policies.get(dtype)

    def __setattr__(self, name, value):
        # As keras-hub: plain setattr for properties on the torch backend.
        is_property = isinstance(getattr(type(self), name, None), property)
        if keras.config.backend() == "torch" and is_property:
            return object.__setattr__(self, name, value)
        return super().__setattr__(name, value)

    @property
    def token_embedding(self):
        return getattr(self, "_token_embedding", None)

    @token_embedding.setter
    def token_embedding(self, value):
        self._token_embedding = value

    def save_to_preset(self, preset_dir, max_shard_size=10):
        """A keras-hub preset folder (config.json + weights), as `Backbone.save_to_preset`."""
        from keras_hub.src.utils.preset_utils import get_preset_saver

        get_preset_saver(preset_dir).save_backbone(self, max_shard_size=max_shard_size)

    def get_config(self):
        config = {
            "name": self.name,
            "trainable": self.trainable,
            "dtype": keras.dtype_policies.serialize(self.dtype_policy),
        }
        config.update(self._config())
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("dtype"), dict):
            config["dtype"] = keras.dtype_policies.get(config["dtype"])
        return cls(**config)
