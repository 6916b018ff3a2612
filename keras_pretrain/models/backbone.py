"""Base classes of every keras_pretrain backbone."""

import numbers
import os

import keras
import keras_hub
from keras import ops

from keras_pretrain.errors import ConfigError
from keras_pretrain.layers.activations import get_activation
from keras_pretrain.layers.dropout import Dropout
from keras_pretrain.layers.transformer_encoder import TransformerEncoder


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


# The constructor arguments that are sizes (positive integers), in the order `check_config_sizes` passes them.
SIZE_ARGUMENTS = (
    "vocabulary_size", "num_layers", "num_heads", "hidden_dim", "intermediate_dim", "max_sequence_length",
    "embedding_dim", "num_groups",
)


def constructor_config(arguments):
    """A backbone's config: the arguments of its constructor, in the signature's order.

    `arguments` is `locals()` taken as the constructor's first statement (its
    arguments, nothing else yet); `self`, `dtype` and `**kwargs` (Keras' own
    config) are left out. The constructor ends with `self._keep_config(**config)`.
    """
    return {name: value for name, value in arguments.items() if name not in ("self", "dtype", "kwargs", "__class__")}


def check_config_sizes(model, config):
    """`check_sizes` on the sizes among a constructor's config (`SIZE_ARGUMENTS`); returns the config."""
    check_sizes(model, **{name: config[name] for name in SIZE_ARGUMENTS if name in config})
    return config


class PresetMixin:
    """Published configurations: `preset_configs`, `from_preset`.

    Subclasses set `preset_configs`, a dict `name -> {"config": {...},
    "description": str, ...}` (metadata only, no weights). `from_preset(name)`
    builds a randomly initialised model with the exact published shapes; a
    path to a keras-hub preset folder (`save_to_preset`) loads config and
    weights from disk, also one of keras-hub's own classes where a
    `preset_folder_readers` entry reads it (`keras_hub_presets`). Nothing is
    ever downloaded.
    """

    preset_configs = {}
    # Readers of preset folders of other libraries' classes: `reader(cls, folder, load_weights, kwargs)` returns
    # the model read from `folder`, or None when the folder is not its kind. `keras_hub_presets` adds keras-hub's.
    preset_folder_readers = []

    @classmethod
    def from_preset(cls, preset, load_weights=True, **kwargs):
        if preset in cls.preset_configs:
            config = dict(cls.preset_configs[preset]["config"])
            config.update(kwargs)
            return cls(**config)
        if isinstance(preset, (str, os.PathLike)) and os.path.isdir(preset):
            for reader in PresetMixin.preset_folder_readers:
                model = reader(cls, os.fspath(preset), load_weights, kwargs)
                if model is not None:
                    return model
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

    def _keep_config(self, **arguments):
        """Keeps constructor arguments as attributes of the same names: the config.

        Each backbone ends its `__init__` with one call under `# === Config ===` that names every
        argument its config holds (`self._keep_config(**config)`, see `constructor_config`, or
        `self._keep_config(hidden_dim=hidden_dim, ...)`); a subclass adds its own with a second call.
        `get_config` writes them, in that order.
        """
        for name, value in arguments.items():
            setattr(self, name, value)
        self._config_names = tuple(getattr(self, "_config_names", ())) + tuple(arguments)

    def _kept_config(self):
        """The arguments `_keep_config` kept, read back from their attributes."""
        return {name: getattr(self, name) for name in getattr(self, "_config_names", ())}

    def get_config(self):
        config = super().get_config()
        config.update(self._kept_config())
        return config


def _load_preset_folder(cls, preset, load_weights, kwargs):
    """keras-hub's preset loader, for backbones that are not keras-hub `Backbone`s."""
    # private API: keras-hub loads preset folders publicly only in `Backbone.from_preset`, which raises a
    # bare ValueError for a folder of another class; the loader lets us check the class first.
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


def int_inputs(*names):
    """One int32 `keras.Input` of shape `[B, T]` per name, as a dict."""
    return {name: keras.Input(shape=(None,), dtype="int32", name=name) for name in names}


def embedding(input_dim, output_dim, initializer, dtype, name):
    """A plain `keras.layers.Embedding` (segments, task types, position ids)."""
    return keras.layers.Embedding(
        input_dim=input_dim,
        output_dim=output_dim,
        embeddings_initializer=initializer(),
        dtype=dtype,
        name=name,
    )


def transformer_blocks(config, initializer, dtype, names=None, block=TransformerEncoder, **block_kwargs):
    """One transformer block per name: by default a post-LN `TransformerEncoder` (BERT's block).

    `config`: the backbone's config (`constructor_config`), read for
    `num_heads`, `intermediate_dim`, `activation` (one of our names,
    `keras_pretrain.layers.activations`), `dropout`, `layer_norm_epsilon`
    and, without `names`, `num_layers` (names `transformer_layer_{i}`);
    `initializer`: a function returning a fresh kernel initializer;
    `block`: the layer class (GPT: keras-hub's `TransformerDecoder`), built
    with these arguments and `block_kwargs`.
    """
    if names is None:
        names = [f"transformer_layer_{i}" for i in range(config["num_layers"])]
    return [
        block(
            num_heads=config["num_heads"],
            intermediate_dim=config["intermediate_dim"],
            activation=get_activation(config["activation"]),
            dropout=config["dropout"],
            layer_norm_epsilon=config["layer_norm_epsilon"],
            kernel_initializer=initializer(),
            dtype=dtype,
            name=name,
            **block_kwargs,
        )
        for name in names
    ]


def pooler(hidden_dim, initializer, dtype):
    """BERT's pooler, `tanh(Dense(sequence_output[:, 0]))` (named `pooled_dense`)."""
    return keras.layers.Dense(
        hidden_dim,
        activation="tanh",
        kernel_initializer=initializer(),
        dtype=dtype,
        name="pooled_dense",
    )


class TransformerBackbone(Backbone):
    """Base of the BERT-like backbones (BERT, ERNIE, ALBERT, RoBERTa, DistilBERT) and GPT.

    What they share, written once: the embedding layers
    (`_embedding_layers`: token, position and segment embeddings summed,
    LayerNorm, dropout), the embedding sum (`_embedding_parts`, `_embed`),
    the stack of blocks with one output per layer and the optional pooler
    (`_encode`). A family's `__init__` reads its arguments as its config
    (`check_config_sizes(self, constructor_config(locals()))`),
    builds its layers from it with these helpers and `transformer_blocks`,
    calls `super().__init__(inputs=..., outputs=self._encode(inputs))`, keeps
    the config (`_keep_config(**config)`) and overrides only what differs.

    Layer and attribute names (`token_embedding`, `position_embedding`,
    `segment_embedding`, `embeddings_add`, `embeddings_layer_norm`,
    `embeddings_dropout`, `transformer_layers`, `pooled_dense`) are the
    ones checkpoints, converters and `.keras` files use.
    """

    # The keyword a block takes the padding mask by (GPT's decoder blocks
    # take `decoder_padding_mask`).
    block_mask_argument = "padding_mask"

    def _embedding_layers(
        self, config, initializer, dtype, num_segments=None, layer_norm_epsilon=None, position_ids=False
    ):
        """Creates the embedding layers as attributes.

        `token_embedding` (keras-hub `ReversibleEmbedding`), `position_embedding`
        (keras-hub `PositionEmbedding`, positions `0..T-1`; with
        `position_ids`, a plain `Embedding` looked up at computed ids),
        `segment_embedding` (with `num_segments`), `embeddings_add`,
        `embeddings_layer_norm` (with `layer_norm_epsilon`) and
        `embeddings_dropout`. Their sizes come from `config` (the
        backbone's `constructor_config`): `vocabulary_size`,
        `max_sequence_length`, `dropout` and the width, `embedding_dim` where
        the config has one (ALBERT's factorized embeddings), else `hidden_dim`.
        """
        vocabulary_size, max_sequence_length = config["vocabulary_size"], config["max_sequence_length"]
        embedding_dim = config.get("embedding_dim", config["hidden_dim"])
        self.token_embedding = keras_hub.layers.ReversibleEmbedding(
            input_dim=vocabulary_size,
            output_dim=embedding_dim,
            embeddings_initializer=initializer(),
            dtype=dtype,
            name="token_embedding",
        )
        if position_ids:
            self.position_embedding = embedding(
                max_sequence_length, embedding_dim, initializer, dtype, "position_embedding"
            )
        else:
            self.position_embedding = keras_hub.layers.PositionEmbedding(
                sequence_length=max_sequence_length,
                initializer=initializer(),
                dtype=dtype,
                name="position_embedding",
            )
        if num_segments is not None:
            self.segment_embedding = embedding(
                num_segments, embedding_dim, initializer, dtype, "segment_embedding"
            )
        self.embeddings_add = keras.layers.Add(dtype=dtype, name="embeddings_add")
        if layer_norm_epsilon is not None:
            self.embeddings_layer_norm = keras.layers.LayerNormalization(
                epsilon=layer_norm_epsilon, dtype=dtype, name="embeddings_layer_norm"
            )
        self.embeddings_dropout = Dropout(config["dropout"], dtype=dtype, name="embeddings_dropout")

    def _embedding_parts(self, inputs):
        """The embeddings summed: token, position (and segment, where there is one)."""
        tokens = self.token_embedding(inputs["token_ids"])
        parts = [tokens, self.position_embedding(tokens)]
        if getattr(self, "segment_embedding", None) is not None:
            parts.append(self.segment_embedding(inputs["segment_ids"]))
        return parts

    def _embed(self, inputs):
        """The embedding sum, LayerNorm (where there is one), dropout: `[B, T, H]`."""
        x = self.embeddings_add(self._embedding_parts(inputs))
        if getattr(self, "embeddings_layer_norm", None) is not None:
            x = self.embeddings_layer_norm(x)
        return self.embeddings_dropout(x)

    def _layer_blocks(self):
        """The blocks of each layer, in order (one block a layer unless shared)."""
        return [[block] for block in self.transformer_layers]

    def _encoder_blocks(self):
        """Every block call in order (the layers' blocks, flattened)."""
        return [block for blocks in self._layer_blocks() for block in blocks]

    def _encode(self, inputs):
        """The outputs dict: `sequence_output`, `pooled_output` (with a pooler), `encoder_outputs`."""
        mask = {self.block_mask_argument: inputs["padding_mask"]}
        x = self._embed(inputs)
        encoder_outputs = []
        for blocks in self._layer_blocks():
            for block in blocks:
                x = block(x, **mask)
            encoder_outputs.append(x)
        outputs = {"sequence_output": x}
        if getattr(self, "pooled_dense", None) is not None:
            outputs["pooled_output"] = self.pooled_dense(x[:, 0, :])
        outputs["encoder_outputs"] = encoder_outputs
        return outputs


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
        """A keras-hub preset folder (config.json + weights): keras-hub's own `Backbone.save_to_preset`,
        which needs only the config and the weights."""
        keras_hub.models.Backbone.save_to_preset(self, preset_dir, max_shard_size=max_shard_size)

    def get_config(self):
        config = {
            "name": self.name,
            "trainable": self.trainable,
            "dtype": keras.dtype_policies.serialize(self.dtype_policy),
        }
        config.update(self._kept_config())
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("dtype"), dict):
            config["dtype"] = keras.dtype_policies.get(config["dtype"])
        return cls(**config)
