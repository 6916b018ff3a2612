"""keras-hub presets both ways, for the families keras-hub has (BERT, ALBERT, RoBERTa, DistilBERT).

`to_keras_hub_preset(backbone, folder, tokenizer)` writes a preset folder of keras-hub's OWN classes
(`keras_hub.models.BertBackbone.from_preset(folder)` and `keras_hub.models.Backbone.from_preset(folder)` load it,
without keras_pretrain), and `from_keras_hub_preset(folder)` reads one back as our backbone and tokenizer; our
backbones' `from_preset(folder)` accepts such a folder too. Each family has ONE `KerasHubMap`, used both ways:

- `shared`: config arguments both classes take, with the same meaning;
- `fixed`: our arguments keras-hub's class fixes, with the value it computes with (writing a backbone whose
  value differs raises a `ConfigError` naming the argument; reading sets it);
- `layer_pairs(ours, hub)`: (our layer, keras-hub layer) pairs that hold the same variables in the same order;
  weights are copied layer by layer in either direction, and every variable of the target must be covered.

What differs in the computation is written once in the family's map: ALBERT needs `num_layers % num_groups == 0`
(keras-hub repeats each group `num_layers // num_groups` times in a row; `group_of_layer` gives the same order);
RoBERTa's keras-hub class looks positions up at `0..T-1` and has no token-type embedding, so its position table
is ours from row `padding_id + 1` on, plus our one token-type row (outputs are equal at real tokens of
right-padded inputs; ours derives positions from `padding_mask`, keras-hub's from the index, so padded slots and
left-padded inputs differ). `initializer_range` only initialises new weights: it is not written.

Tokenizers: keras-hub's `BertTokenizer` / `DistilBertTokenizer` get our vocabulary, `lowercase` and
`strip_accents`, `RobertaTokenizer` our vocabulary and merges, `AlbertTokenizer` our SentencePiece proto. The ids
are equal on text where our tokenizers' extra normalisation changes nothing: keras-hub lower-cases with Unicode
case folding and NFKC and splits words on ASCII whitespace only (see `bert_tokenizer`), and its
`AlbertTokenizer` runs SentencePiece alone (no lower-casing, accent stripping or "9," re-split; see
`albert_tokenizer`): feed it lower-cased text, as the published keras-hub ALBERT presets.
"""

import json
import os
import shutil
import tempfile

import keras
import keras_hub
import numpy as np

from keras_pretrain.errors import ConfigError
from keras_pretrain.models.albert.albert_backbone import AlbertBackbone
from keras_pretrain.models.albert.albert_tokenizer import AlbertTokenizer
from keras_pretrain.models.backbone import PresetMixin
from keras_pretrain.models.bert.bert_backbone import BertBackbone
from keras_pretrain.models.bert.bert_tokenizer import BertTokenizer
from keras_pretrain.models.distil_bert import DistilBertTokenizer
from keras_pretrain.models.distil_bert.distil_bert_backbone import DistilBertBackbone
from keras_pretrain.models.roberta.roberta_backbone import RobertaBackbone
from keras_pretrain.models.roberta.roberta_tokenizer import RobertaTokenizer

TRANSFORMER = ("vocabulary_size", "num_layers", "num_heads", "hidden_dim", "intermediate_dim", "dropout",
               "max_sequence_length")


def _bert_layers(ours, hub, embeddings=None, skip=()):
    """BERT-like pairs: embeddings (keras-hub's, or those of its `TokenAndPositionEmbedding`), blocks, pooler.

    `skip`: our layers the family's `extra` fills instead."""
    embeddings = embeddings or hub
    pairs = [(ours.token_embedding, embeddings.token_embedding)]
    if "position_embedding" not in skip:
        pairs.append((ours.position_embedding, embeddings.position_embedding))
    for name in ("segment_embedding", "embeddings_layer_norm", "embeddings_projection", "pooled_dense"):
        if name not in skip and getattr(ours, name, None) is not None:
            pairs.append((getattr(ours, name), getattr(hub, name)))
    pairs += zip(_flat(ours.transformer_layers), _flat(hub.transformer_layers))
    return pairs


def _flat(layers):
    """ALBERT's `[group][inner]` blocks (or a flat list), in order."""
    return [x for item in layers for x in (item if isinstance(item, list) else [item])]


class KerasHubMap:
    """One family's map between our backbone / tokenizer and keras-hub's (see the module docstring)."""

    ours = hub = our_tokenizer = hub_tokenizer = None
    shared = TRANSFORMER
    fixed = {}

    def layer_pairs(self, ours, hub):
        return _bert_layers(ours, hub)

    def hub_config(self, config):
        """keras-hub's config for ours, or a `ConfigError` naming what keras-hub's class cannot take."""
        for name, value in self.fixed.items():
            if config.get(name) != value:
                raise ConfigError(
                    f"{self.hub.__name__} cannot represent {self.ours.__name__}({name}={config.get(name)!r}): "
                    f"keras-hub's class fixes {name}={value!r}."
                )
        return {name: config[name] for name in self.shared}

    def our_config(self, config):
        return {**{name: config[name] for name in self.shared}, **self.fixed}

    def extra(self, ours, hub, to_hub):
        """Copies what is not a plain layer pair; returns the target layers it filled."""
        return []

    def hub_tokenizer_args(self, tokenizer):
        return {"vocabulary": tokenizer.get_vocabulary(), "lowercase": tokenizer.bert_lowercase,
                "strip_accents": tokenizer.strip_accents}

    def our_tokenizer_args(self, tokenizer):
        return {"vocabulary": tokenizer.get_vocabulary(), "lowercase": tokenizer.lowercase,
                "strip_accents": tokenizer.strip_accents}


class BertMap(KerasHubMap):
    ours, hub = BertBackbone, keras_hub.models.BertBackbone
    our_tokenizer, hub_tokenizer = BertTokenizer, keras_hub.models.BertTokenizer
    shared = TRANSFORMER + ("num_segments",)
    fixed = {"activation": "gelu_approximate", "layer_norm_epsilon": 1e-12, "num_task_types": None}


class DistilBertMap(KerasHubMap):
    ours, hub = DistilBertBackbone, keras_hub.models.DistilBertBackbone
    our_tokenizer, hub_tokenizer = DistilBertTokenizer, keras_hub.models.DistilBertTokenizer
    fixed = {"activation": "gelu", "layer_norm_epsilon": 1e-12}

    def layer_pairs(self, ours, hub):
        return _bert_layers(ours, hub, embeddings=hub.embeddings)


class AlbertMap(KerasHubMap):
    ours, hub = AlbertBackbone, keras_hub.models.AlbertBackbone
    our_tokenizer, hub_tokenizer = AlbertTokenizer, keras_hub.models.AlbertTokenizer
    shared = TRANSFORMER + ("num_segments", "embedding_dim", "num_groups", "num_inner_repetitions")
    fixed = {"activation": "gelu_approximate", "layer_norm_epsilon": 1e-12}

    def hub_config(self, config):
        if config["num_layers"] % config["num_groups"]:
            raise ConfigError(
                f"AlbertBackbone(num_groups={config['num_groups']}) cannot be written for keras-hub: its "
                f"AlbertBackbone needs num_layers ({config['num_layers']}) divisible by num_groups."
            )
        return super().hub_config(config)

    def hub_tokenizer_args(self, tokenizer):
        return {"proto": tokenizer.proto}

    def our_tokenizer_args(self, tokenizer):
        return {"proto": tokenizer.proto}


class RobertaMap(KerasHubMap):
    ours, hub = RobertaBackbone, keras_hub.models.RobertaBackbone
    our_tokenizer, hub_tokenizer = RobertaTokenizer, keras_hub.models.RobertaTokenizer
    fixed = {"activation": "gelu", "layer_norm_epsilon": 1e-5, "num_segments": 1, "use_pooler": False}
    padding_id = 1  # of the byte-level BPE vocabularies; what a keras-hub RoBERTa is read with

    def layer_pairs(self, ours, hub):
        return _bert_layers(ours, hub, embeddings=hub.embeddings, skip=("position_embedding", "segment_embedding"))

    def hub_config(self, config):
        config = super().hub_config(config)
        offset = self._offset(config)
        if config["max_sequence_length"] <= offset:
            raise ConfigError(f"RobertaBackbone(max_sequence_length={config['max_sequence_length']}) holds no "
                              f"position past the padding_id offset ({offset}).")
        return {**config, "max_sequence_length": config["max_sequence_length"] - offset}

    def _offset(self, config):
        return config.get("padding_id", self.padding_id) + 1

    def our_config(self, config):
        config = {**super().our_config(config), "padding_id": self.padding_id}
        return {**config, "max_sequence_length": config["max_sequence_length"] + self._offset(config)}

    def extra(self, ours, hub, to_hub):
        """keras-hub's position `t` = our row `t + padding_id + 1` plus our (one) token-type row."""
        offset = ours.padding_id + 1
        theirs = hub.embeddings.position_embedding
        if to_hub:
            positions, segments = ours.position_embedding.get_weights()[0], ours.segment_embedding.get_weights()[0]
            theirs.set_weights([positions[offset:] + segments[:1]])
            return [theirs]
        positions = theirs.get_weights()[0]
        ours.position_embedding.set_weights([np.concatenate([np.zeros_like(positions[:offset]), positions])])
        ours.segment_embedding.set_weights([np.zeros_like(ours.segment_embedding.get_weights()[0])])
        return [ours.position_embedding, ours.segment_embedding]

    def hub_tokenizer_args(self, tokenizer):
        if getattr(tokenizer, "num_ids", None) is not None:  # FairseqRobertaTokenizer: ids past num_ids are <unk>
            raise ConfigError(
                f"FairseqRobertaTokenizer(num_ids={tokenizer.num_ids}) cannot be written for keras-hub: its "
                "RobertaTokenizer has no num_ids (ids past it would not become <unk>)."
            )
        return {"vocabulary": tokenizer.vocabulary, "merges": tokenizer.merges}

    our_tokenizer_args = hub_tokenizer_args


MAPS = [BertMap(), AlbertMap(), RobertaMap(), DistilBertMap()]


def _map_for(backbone_class, side):
    """The map whose `side` ("ours" or "hub") is exactly `backbone_class` (subclasses are other families)."""
    for family in MAPS:
        if getattr(family, side) is backbone_class:
            return family
    return None


def copy_weights(family, ours, hub, to_hub):
    """Copies every variable of the target (`hub` when `to_hub`, else `ours`) from the other, by the map."""
    filled = family.extra(ours, hub, to_hub)
    for our_layer, hub_layer in family.layer_pairs(ours, hub):
        source, target = (our_layer, hub_layer) if to_hub else (hub_layer, our_layer)
        arrays = source.get_weights()
        shapes = [tuple(v.shape) for v in target.weights]
        if [a.shape for a in arrays] != shapes:
            raise ConfigError(f"{source.name} -> {target.name}: shapes {[a.shape for a in arrays]} != {shapes}.")
        target.set_weights(arrays)
        filled.append(target)
    target_model = hub if to_hub else ours
    covered = {id(v) for layer in filled for v in layer.weights}
    missing = [v.path for v in target_model.weights if id(v) not in covered]
    if missing:
        raise ConfigError(f"{type(target_model).__name__}: the keras-hub map leaves {missing} unset.")


def _check_inside(folder):
    """Refuses a symlinked folder, or a symlink in it that leads out of it."""
    if os.path.islink(folder):
        raise ConfigError(f"{folder}: is a symlink; give the folder itself.")
    root = os.path.realpath(folder)
    for parent, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = os.path.join(parent, name)
            if os.path.islink(path) and os.path.commonpath([root, os.path.realpath(path)]) != root:
                raise ConfigError(f"{path}: a symlink out of the preset folder {folder}.")


def to_keras_hub_preset(backbone, folder, tokenizer=None):
    """Writes `backbone` (and `tokenizer`) as a preset folder of keras-hub's own classes.

    Args:
        backbone: our `BertBackbone`, `AlbertBackbone`, `RobertaBackbone` or `DistilBertBackbone`.
        folder: a new (or empty) folder: config.json, model.weights.h5, metadata.json (keras-hub's
            `save_to_preset`) and, with a tokenizer, tokenizer.json and assets/.
        tokenizer: our tokenizer of that family, or None.

    Returns:
        The keras-hub backbone that was written.

    Raises:
        ConfigError: `folder` exists and is not empty (or is a symlink), or keras-hub's class cannot represent
            an argument of the backbone or tokenizer (the message names it).
    """
    folder = os.fspath(folder)
    family = _map_for(type(backbone), "ours")
    if family is None:
        raise ConfigError(f"{type(backbone).__name__}: keras-hub has no class of this family "
                          f"(maps exist for {[m.ours.__name__ for m in MAPS]}).")
    if os.path.islink(folder) or (os.path.lexists(folder) and not os.path.isdir(folder)):
        raise ConfigError(f"{folder}: exists and is not a folder (symlinks are not followed).")
    if os.path.isdir(folder) and os.listdir(folder):
        raise ConfigError(f"{folder}: exists and is not empty; give a new or empty folder.")
    if tokenizer is not None and not isinstance(tokenizer, family.our_tokenizer):
        raise ConfigError(f"{type(tokenizer).__name__} cannot be written as keras-hub's "
                          f"{family.hub_tokenizer.__name__} (expected our {family.our_tokenizer.__name__}).")
    config = backbone.get_config()
    hub = family.hub(**family.hub_config(config), dtype=backbone.dtype_policy)
    copy_weights(family, backbone, hub, to_hub=True)
    hub_tokenizer = None if tokenizer is None else family.hub_tokenizer(**family.hub_tokenizer_args(tokenizer))

    # Written next to `folder`, then renamed: nothing lands in `folder` unless all of it was written.
    parent = os.path.dirname(os.path.abspath(folder))
    os.makedirs(parent, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=".keras_hub_preset_", dir=parent)
    try:
        hub.save_to_preset(staging)
        if hub_tokenizer is not None:
            hub_tokenizer.save_to_preset(staging)
        if os.path.isdir(folder):
            os.rmdir(folder)  # empty (checked above); fails rather than overwrites if something appeared
        os.rename(staging, folder)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return hub


def _hub_class(folder):
    """The class named in a preset folder's config.json (None if it names no registered class)."""
    path = os.path.join(folder, "config.json")
    if not os.path.isfile(path) or os.path.islink(path):  # a linked config.json is never read to decide
        return None
    with open(path, encoding="utf-8") as f:
        config = json.load(f)
    name = config.get("registered_name") if isinstance(config, dict) else None
    return keras.saving.get_registered_object(name) if name else None


def from_keras_hub_preset(folder, load_weights=True, **kwargs):
    """Reads a keras-hub preset folder (keras-hub's BERT, ALBERT, RoBERTa or DistilBERT) as ours.

    Args:
        folder: a keras-hub preset folder (`save_to_preset`).
        load_weights: bool. False: our backbone with the folder's config, randomly initialised.
        **kwargs: our backbone's arguments that override the folder's (e.g. `dtype`, `dropout`).

    Returns:
        `(backbone, tokenizer)`: our backbone and tokenizer (None when the folder has no tokenizer.json).
    """
    folder = os.fspath(folder)
    _check_inside(folder)
    family = _map_for(_hub_class(folder), "hub")
    if family is None:
        raise ConfigError(f"{folder}: holds no keras-hub backbone of {[m.hub.__name__ for m in MAPS]}.")
    hub_kwargs = {"dtype": kwargs["dtype"]} if "dtype" in kwargs else {}
    hub = family.hub.from_preset(folder, load_weights=load_weights, **hub_kwargs)
    backbone = family.ours(**{**family.our_config(hub.get_config()), **kwargs})
    if load_weights:
        copy_weights(family, backbone, hub, to_hub=False)
    tokenizer = None
    if os.path.isfile(os.path.join(folder, "tokenizer.json")):
        hub_tokenizer = family.hub_tokenizer.from_preset(folder)
        tokenizer = family.our_tokenizer(**family.our_tokenizer_args(hub_tokenizer))
    return backbone, tokenizer


def _read_for_from_preset(cls, folder, load_weights, kwargs):
    """`OurBackbone.from_preset(keras_hub_folder)`: ours read from keras-hub's folder; None for other folders."""
    family = _map_for(_hub_class(folder), "hub")
    if family is None:
        return None
    if not issubclass(family.ours, cls):
        raise ConfigError(f"{folder}: holds keras-hub's {family.hub.__name__}, read as our "
                          f"{family.ours.__name__}, not a {cls.__name__}.")
    return from_keras_hub_preset(folder, load_weights, **kwargs)[0]


PresetMixin.preset_folder_readers.append(_read_for_from_preset)
