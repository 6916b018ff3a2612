"""Base class of every keras_pretrain backbone."""

import os

import keras
import keras_hub

from keras_pretrain.errors import ConfigError


class Backbone(keras_hub.models.Backbone):
    """A keras-hub `Backbone` that also knows our published configurations.

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
            return super().from_preset(
                str(preset), load_weights=load_weights, **kwargs
            )
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
