"""Building a pretraining job from explicit settings: corpus -> tokenizer -> tf.data -> task.

One module per objective kind (`keras_pretrain.families` names each family's kind): `masked_lm` (BERT,
ALBERT, RoBERTa, DistilBERT, ERNIE), `causal_lm` (GPT), `permutation_lm` (XLNet), `bidirectional_lm` (ELMo).
`recipes.pretrain` parses its arguments into `PretrainingSettings` and calls `build_job`; the same works
from Python:

```python
from keras_pretrain.pretraining import PretrainingSettings, build_job

settings = PretrainingSettings(out="runs/albert", seq_length=64, batch_size=32)
job = build_job("albert", ["corpus/pretrain.txt"], settings)
job.model.compile(optimizer="adam")
job.model.fit(job.train.repeat(), steps_per_epoch=100, epochs=3)
```
"""

import dataclasses
import importlib
import os
import shutil

from keras_pretrain import families
from keras_pretrain.errors import ConfigError

# The longest sequence of a demo configuration; a preset brings its own positions.
MAX_SEQ_LENGTH = 512
# Positions a demo backbone has at least: the exported module takes longer sentences than the training ones.
MIN_POSITIONS = 128
HELD_OUT_EVERY = 25
METRIC_LABELS = {
    "mlm_accuracy": "masked-LM accuracy",
    "accuracy": "prediction accuracy",
    "forward_perplexity": "forward-LM perplexity",
}


@dataclasses.dataclass
class PretrainingSettings:
    """Everything a pretraining job is built from (None: the family's default).

    Attributes:
        out: the run folder (learned vocabularies are written there).
        preset: a published preset name or a preset folder (None: the family's tiny demo configuration).
        vocab: a vocabulary file (WordPiece vocab.txt; GPT: a folder or vocab.json with merges.txt beside
            it); None learns one of `vocab_size` entries from the corpus.
        objective, masking, lexicon, dynamic, dupe_factor, max_predictions: masked-LM families only (see
            `check`); `lexicon` is a file of phrases for knowledge masking.
        seq_length, batch_size, seed, eval_batches: data shape, seed of data and weights, held-out batches.
        lowercase: lower-case the text (uncased vocabulary).
        dropout: the backbone's dropout (None: the family's).
        vocabulary_multiple: pad a WordPiece vocabulary to a multiple of this (model parallelism).
        init: start from a published checkpoint (any format `keras_pretrain.convert.load` reads): its
            configuration, weights, pretraining heads where it has them, and tokenizer (`initial_model`).
    """

    out: str = None
    preset: str = None
    vocab: str = None
    vocab_size: int = 3000
    objective: str = None
    masking: str = None
    lexicon: str = None
    dynamic: bool = False
    dupe_factor: int = 2
    seq_length: int = 64
    max_predictions: int = 10
    batch_size: int = 32
    seed: int = 0
    eval_batches: int = 8
    lowercase: bool = True
    dropout: float = None
    vocabulary_multiple: int = 1
    init: str = None

    @classmethod
    def names(cls):
        return [f.name for f in dataclasses.fields(cls)]


@dataclasses.dataclass
class PretrainingJob:
    """What `build_job` returns: the tokenizer, the datasets, the task and how to read its metric.

    `objective` and `masking` are the resolved values (the family's defaults filled in); `sample` is a
    text-sampling function for language models (else None); `stats` the corpus statistics (or None).
    """

    family: str
    tokenizer: object
    train: object
    held_out: object
    model: object
    metric: str
    objective: str
    masking: str = None
    sample: object = None
    stats: object = None
    vocabulary: list = None


def check(family, settings):
    """Refuses settings the family does not use; returns the problems (empty: fine).

    A masked-LM family takes any sentence objective and masking, and a lexicon only with knowledge
    masking; GPT, XLNet and ELMo have one objective and no masking; ELMo learns its word list (no `vocab`).
    """
    family = families.get(family)
    problems = []
    if settings.objective is not None and settings.objective not in family.objectives:
        problems.append(f"--objective {settings.objective}: {family.name} takes {', '.join(family.objectives)}")
    if not family.masked_lm:
        for name, value in (("masking", settings.masking), ("lexicon", settings.lexicon),
                            ("dynamic", settings.dynamic or None)):
            if value is not None:
                problems.append(f"--{name}: {family.name} does not mask tokens (its objective is {family.objective})")
    else:
        masking = settings.masking or family.masking
        if settings.lexicon is not None and masking != "knowledge":
            problems.append(f"--lexicon: only knowledge masking reads a lexicon; {family.name} masks with "
                            f"{masking} (add --masking knowledge)")
    if family.vocabulary.characters and settings.vocab is not None:
        problems.append(f"--vocab: {family.name} learns its word list from the corpus (use --vocab-size)")
    if settings.init is not None:  # the release's dropout is kept too (`dropout` is not applied)
        for name, value in (("preset", settings.preset), ("vocab", settings.vocab)):
            if value is not None:
                problems.append(f"--{name}: --init brings its own configuration and vocabulary")
    return problems


def position_limit(family, preset=None):
    """(the longest sequence, what sets it): the preset's positions, else the demo configuration's 512."""
    if preset is None:
        return MAX_SEQ_LENGTH, "the demo configuration"
    return preset_config(family, preset).get("max_sequence_length") or MAX_SEQ_LENGTH, f"preset {preset}"


def max_sequence_length(family, seq_length, preset=None):
    """The backbone's positions: the preset's own, else max(seq_length, 128) (+ RoBERTa's offset).

    Raises ConfigError when `seq_length` exceeds `position_limit` (the one rule recipes and `build_job` use).
    """
    limit, source = position_limit(family, preset)
    if seq_length > limit:
        raise ConfigError(f"seq_length {seq_length} exceeds the {limit} positions of {source}")
    if preset is not None:
        return preset_config(family, preset).get("max_sequence_length")
    return max(seq_length, MIN_POSITIONS) + families.get(family).position_offset


def preset_config(family, preset):
    """The backbone config of a published preset name or a preset folder (ConfigError otherwise)."""
    import json

    family = families.get(family)
    presets = family.presets
    if preset in presets:
        return presets[preset]["config"]
    if os.path.isdir(preset):
        try:
            with open(os.path.join(preset, "config.json")) as f:
                return json.load(f).get("config", {})
        except (OSError, ValueError) as e:
            raise ConfigError(f"{preset!r} is not a preset folder (config.json: {e})") from None
    raise ConfigError(f"unknown {family.name} preset {preset!r}; choose one of {sorted(presets)} "
                      "or a preset folder written by save_to_preset")


def build_backbone(family, vocabulary_size, settings, **overrides):
    """The family's backbone: the preset's (vocabulary resized, dropout set) or the tiny demo configuration."""
    family = families.get(family)
    dropout = family.dropout if settings.dropout is None else settings.dropout
    cls = family.backbone_class
    sizes = {} if vocabulary_size is None else {"vocabulary_size": vocabulary_size}
    if settings.preset:
        return cls.from_preset(settings.preset, dropout=dropout, **sizes, **overrides)
    config = {**family.demo_config, **sizes, **overrides}
    if family.positions:
        config.setdefault("max_sequence_length", max_sequence_length(family.name, settings.seq_length))
    return cls(**config, dropout=dropout)


def rebuild(backbone, **overrides):
    """A new backbone of the same class with config `overrides` (dropout, memory lengths) and the same weights."""
    config = {**backbone.get_config(), **overrides}
    config.pop("name", None)
    new = type(backbone).from_config(config)
    new.set_weights(backbone.get_weights())
    return new


def initial_model(family, settings):
    """`(pretrainer or backbone, tokenizer)` converted from `settings.init` (family and format printed).

    The release's pretraining heads are loaded when it has them (a masked-LM release with its `cls/`
    variables, GPT's tied LM head, XLNet's `lm_loss` bias); when it has none (a bare encoder), the
    backbone is returned and the job adds new heads (printed). Raises ConfigError when the release holds
    another family or fewer positions than `settings.seq_length`.
    """
    from keras_pretrain import convert
    from keras_pretrain.checkpoints.formats import detect
    from keras_pretrain.errors import CheckpointFormatError

    family = families.get(family)
    source = detect(settings.init)
    if source.family != family.name:
        raise ConfigError(f"--init {settings.init}: holds a {source.family} model ({source.format}), not "
                          f"{family.name}; pass --model {source.family}")
    try:  # ELMo's softmax is over a word list of its own: the job makes a new one
        model, tokenizer = convert.load(settings.init, pretrainer=not family.vocabulary.characters)
    except CheckpointFormatError as e:
        model, tokenizer = convert.load(settings.init, task=False)
        print(f"--init {settings.init}: no pretraining heads to load ({str(e).splitlines()[0][:160]}...); "
              "the heads start from random weights", flush=True)
    backbone = getattr(model, "backbone", model)
    positions = getattr(backbone, "max_sequence_length", None)
    if family.positions and positions and settings.seq_length + family.position_offset > positions:
        raise ConfigError(f"--seq-length {settings.seq_length} exceeds the {positions - family.position_offset} "
                          f"positions of --init {settings.init}")
    if not family.vocabulary.characters and tokenizer is None:
        raise ConfigError(f"--init {settings.init}: no vocabulary found beside the weights (the tokenizer files "
                          "of the release are needed to pretrain further)")
    return model, tokenizer


def held_out_document(index):
    """Every HELD_OUT_EVERY-th document is held out: never trained on, used for the accuracy and baseline."""
    return index % HELD_OUT_EVERY == HELD_OUT_EVERY - 1


def build_job(family, paths, settings):
    """The `PretrainingJob` of `family` on the corpus files `paths` (see the module docstring)."""
    problems = check(family, settings)
    if problems:
        raise ConfigError("; ".join(problems))
    kind = families.get(family).kind
    module = importlib.import_module(f"keras_pretrain.pretraining.{kind}")
    return module.build_job(family, paths, settings)


def unigram_baseline(job, max_batches=200):
    """(token, accuracy): always predicting the most frequent training target, on the held-out positions."""
    from keras_pretrain.data import target_counts
    from keras_pretrain.data import unigram_accuracy

    counts = target_counts(job.train, max_batches=max_batches)
    if not counts:
        return None
    token_id = counts.most_common(1)[0][0]
    return job.vocabulary[token_id], unigram_accuracy(job.held_out, token_id)


def save_preset(backbone, tokenizer, out):
    """A keras-hub preset folder in `out/preset`: the backbone, and the tokenizer or its files."""
    preset = os.path.join(out, "preset")
    backbone.save_to_preset(preset)
    if hasattr(tokenizer, "save_to_preset"):  # keras-hub tokenizers
        tokenizer.save_to_preset(preset)
    else:  # GPT's BPE files, ELMo's word list: beside the weights
        for name in ("vocab.json", "merges.txt", "words.txt"):
            if os.path.exists(os.path.join(out, name)):
                shutil.copy(os.path.join(out, name), os.path.join(preset, name))
    return preset
