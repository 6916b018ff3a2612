"""The model families: the registry, at the bottom of the library, and what the rest asks about a family.

Each `Family` names its classes (resolved lazily), its presets, its converters per source format, its
pretraining defaults, and holds its BEHAVIOUR OBJECTS: its packing (`keras_pretrain.data.packing`), its TF-Hub
contract (`keras_pretrain.export.contracts`, or the family's own), its vocabulary kind, its text preprocessor
(`keras_pretrain.models.text_preprocessor`, or the family's own) and how the tasks summarise a sequence
(`keras_pretrain.layers.summaries`). Recipes (`--model` choices), `keras_pretrain.convert`,
`keras_pretrain.export`, `keras_pretrain.tasks`, `hub_modules` and the benchmarks read this registry; code asks
the family's objects and never compares a family's name or kind strings.

This module imports nothing above it (errors and layers only). Each family folder registers its own `Family`
(`keras_pretrain/models/<name>/<name>_family.py`, imported by the folder's package); the families of this
library are named in `BUILTIN` and imported by `import_all()` (which `import keras_pretrain` runs).

Adding a family: write its folder (under `keras_pretrain/models/` or in a package of your own) and call
`families.register(Family(...))`; see docs/add-a-family.md.

```python
from keras_pretrain import families

family = families.get("albert")
backbone = family.backbone_class(**family.demo_config, vocabulary_size=3000)
families.family_of(backbone).name  # "albert"
```
"""

import dataclasses
import functools
import importlib

from keras_pretrain.errors import ConfigError
from keras_pretrain.layers import summaries

# Pretraining kinds: one module each in keras_pretrain/pretraining/.
MASKED_LM = "masked_lm"
CAUSAL_LM = "causal_lm"
PERMUTATION_LM = "permutation_lm"
BIDIRECTIONAL_LM = "bidirectional_lm"

# Sentence-level objectives of the masked-LM families (the instance builder's names).
MASKED_LM_OBJECTIVES = ("nsp", "sop", "full_sentences", "doc_sentences")
MASKINGS = ("token", "whole_word", "ngram", "knowledge")

# A tiny encoder that learns something in minutes on 2 cores (the recipes' demo configuration).
TINY_ENCODER = {"num_layers": 2, "num_heads": 2, "hidden_dim": 128, "intermediate_dim": 512}


@dataclasses.dataclass(frozen=True)
class Vocabulary:
    """The kind of vocabulary a family's pretraining run learns and saves.

    Attributes:
        name: "wordpiece", "bpe" or "words" (messages and run metadata only).
        files: what a run saves beside its model.
        characters: the model reads characters, not token ids (ELMo): no tokenizer ids to feed.
        from_folder: the family's tokenizer class reads the run folder itself (`from_folder`); otherwise
            the run's `vocab.txt` makes a WordPiece tokenizer.
        resizable: the vocabulary can be padded to a multiple (`--distribution` with a vocabulary multiple).
    """

    name: str
    files: tuple
    characters: bool = False
    from_folder: bool = False
    resizable: bool = True


WORDPIECE = Vocabulary("wordpiece", ("vocab.txt",))
BPE = Vocabulary("bpe", ("vocab.json", "merges.txt"), from_folder=True, resizable=False)
WORDS = Vocabulary("words", ("words.txt",), characters=True)


@dataclasses.dataclass(frozen=True)
class Family:
    """One model family.

    Attributes:
        name: the family's name (`--model` value, folder under keras_pretrain/models/).
        backbone, pretrainer, classifier, tokenizer: class names in the family package
            (`keras_pretrain.models.<name>`), or "<family>.<Class>" for another family's class (ERNIE's
            classifier is BERT's); the `*_class` properties import them.
        contract: the TF-Hub module contract object (`keras_pretrain.export.contracts.Contract`): input and
            output names, `to_backbone` inputs, the encoder SavedModel's endpoints.
        packing: the packing object (`keras_pretrain.data.packing.Packing`): special tokens, pair layout,
            left / right padding: BERT (`[CLS] A [SEP] B [SEP]`), ROBERTA (`<s> A </s></s> B </s>`), XLNET
            (`A <sep> B <sep> <cls>`, left-padded), GPT (start / delimiter / classify tokens), ELMO (words with
            a separator).
        vocabulary: the `Vocabulary` a pretraining run saves: WORDPIECE (vocab.txt), BPE (vocab.json +
            merges.txt) or WORDS (words.txt; ELMo reads characters).
        preprocessor: "module:Class" of the family's text preprocessor (tokenizer + packing:
            `keras_pretrain.models.text_preprocessor`), used by `recipes.finetune`, serving and TF-Hub export.
        keras_preprocessor: the keras-hub preprocessor layer class name in the family package (strings ->
            inputs inside `model.fit`), or None where the family has none yet.
        summary: how the sentence-level tasks summarise a sequence (`keras_pretrain.layers.summaries`).
        choice_summary: how multiple choice summarises each (context, ending) sequence where it differs from
            `summary` (None: `summary`): RoBERTa's `RobertaForMultipleChoice` reads the pooler, not the
            sequence-classification head (`multiple_choice_summary` is the one to use).
        multiple_choice: "module:Class" (or a class name in the family package) of the family's multiple-choice
            task (`keras_pretrain.tasks.multiple_choice.for_backbone`), None where it has none (ELMo).
        multiple_choice_options: the keyword arguments that make that class a multiple-choice task (GPT-1:
            `GPTClassifier(task="multiple_choice")`, its double-heads model).
        token_states: where the tasks read one vector per token (`keras_pretrain.layers.summaries`).
        fine_tuning_optimizer: the classifiers' default optimizer (a callable returning a new one).
        package: the family's package (default `keras_pretrain.models.<name>`).
        casing: whether the tokenizer has a lower-casing option (byte-level BPE has none).
        huggingface: `model_type` values of Hugging Face `config.json` that this family converts.
        converters: source format -> "module:function" ("huggingface", "tf1", ...).
        exporters: target format -> "module:function" (`keras_pretrain.convert.to_huggingface`; ELMo's
            "bilm", the hdf5 of bilm-tf).
        kind: the pretraining objective kind (MASKED_LM, CAUSAL_LM, PERMUTATION_LM, BIDIRECTIONAL_LM).
        objective: the default sentence objective (masked-LM families) or the kind's own name.
        objectives: the objectives `--objective` may take for this family.
        masking: the default masking strategy (masked-LM families; None otherwise).
        dynamic: a new mask every epoch by default (RoBERTa).
        learning_rate, dropout, steps: defaults of the demo pretraining run.
        demo_config: the backbone arguments of the tiny demo configuration (vocabulary size excluded).
        positions: whether the backbone has learned positions (`max_sequence_length`); XLNet's are
            relative, ELMo has none.
        position_offset: positions the backbone needs beyond the sequence (RoBERTa's start past padding).
    """

    name: str
    backbone: str
    pretrainer: str
    classifier: str
    tokenizer: str
    contract: object
    packing: object
    vocabulary: Vocabulary
    kind: str
    objective: str
    objectives: tuple
    summary: summaries.SequenceSummary = summaries.POOLED
    token_states: summaries.TokenStates = summaries.SEQUENCE_OUTPUT
    choice_summary: summaries.SequenceSummary = None
    multiple_choice: str = "keras_pretrain.tasks.multiple_choice:MultipleChoice"
    multiple_choice_options: dict = dataclasses.field(default_factory=dict)
    preprocessor: str = "keras_pretrain.models.text_preprocessor:TextPreprocessor"
    keras_preprocessor: str = None
    fine_tuning_optimizer: object = None
    package_name: str = None
    masking: str = None
    casing: bool = True
    huggingface: tuple = ()
    converters: dict = dataclasses.field(default_factory=dict)
    exporters: dict = dataclasses.field(default_factory=dict)
    dynamic: bool = False
    learning_rate: float = 2e-3
    dropout: float = 0.1
    steps: int = 1000
    demo_config: dict = dataclasses.field(default_factory=dict)
    positions: bool = True
    position_offset: int = 0

    @property
    def package(self):
        return self.package_name or f"keras_pretrain.models.{self.name}"

    def module(self):
        """The family package (importing it registers its Keras classes)."""
        return importlib.import_module(self.package)

    def _class(self, name):
        if name is None:
            return None
        if ":" in name:  # "module:Class"
            module, name = name.split(":")
            self.module()  # registers this family's classes too
            return getattr(importlib.import_module(module), name)
        if "." in name:  # another family's class: "bert.BertTokenizer"
            package, name = name.split(".")
            self.module()  # registers this family's classes too
            return getattr(importlib.import_module(f"keras_pretrain.models.{package}"), name)
        return getattr(self.module(), name)

    backbone_class = property(lambda self: self._class(self.backbone))
    pretrainer_class = property(lambda self: self._class(self.pretrainer))
    classifier_class = property(lambda self: self._class(self.classifier))
    tokenizer_class = property(lambda self: self._class(self.tokenizer))
    preprocessor_class = property(lambda self: self._class(self.preprocessor))
    keras_preprocessor_class = property(lambda self: self._class(self.keras_preprocessor))
    multiple_choice_class = property(lambda self: self._class(self.multiple_choice))

    @property
    def multiple_choice_summary(self):
        """The summary multiple choice reads each choice with (`choice_summary`, else `summary`)."""
        return self.summary if self.choice_summary is None else self.choice_summary

    def default_fine_tuning_optimizer(self):
        """A new instance of the family's default fine-tuning optimizer."""
        from keras_pretrain.optimizers import AdamW

        if self.fine_tuning_optimizer is None:
            return AdamW(5e-5, weight_decay=0.01)
        return self.fine_tuning_optimizer()

    @property
    def presets(self):
        """Published configurations: name -> {"metadata", "config"}."""
        return dict(getattr(self.module(), "backbone_presets", {}))

    @property
    def masked_lm(self):
        """True for the masked-LM families (fill-mask, `--masking`, `--lexicon`)."""
        return self.masking is not None

    def converter(self, source):
        """The importer of `source` ("huggingface", "tf1", ...): a function, imported."""
        return self._function(self.converters, source, "converter", "formats")

    def exporter(self, target):
        """The exporter to `target` ("huggingface", "bilm"): a function, imported."""
        return self._function(self.exporters, target, "export", "export formats")

    def _function(self, table, key, what, kinds):
        if key not in table:
            raise ConfigError(f"No {key} {what} for family {self.name!r}; its {kinds}: {sorted(table) or 'none'}.")
        module, function = table[key].split(":")
        return getattr(importlib.import_module(module), function)


def huggingface_converter(family):
    """converters entry: the family's `<family>_convert.convert_huggingface`."""
    return {"huggingface": f"keras_pretrain.models.{family}.{family}_convert:convert_huggingface"}


def huggingface_exporter(family):
    """exporters entry: the family's `<family>_convert.export_huggingface`."""
    return {"huggingface": f"keras_pretrain.models.{family}.{family}_convert:export_huggingface"}


def adamw(learning_rate, **kwargs):
    """A fine-tuning optimizer factory: `keras_pretrain.optimizers.AdamW(learning_rate, **kwargs)`."""

    def make():
        from keras_pretrain.optimizers import AdamW

        return AdamW(learning_rate, **kwargs)

    return make


def adam(learning_rate):
    """A fine-tuning optimizer factory: `keras.optimizers.Adam(learning_rate)`."""

    def make():
        import keras

        return keras.optimizers.Adam(learning_rate)

    return make


# The families of this library, in registry order: each folder `keras_pretrain/models/<name>/` registers its own
# `Family` when imported (`<name>_family.py`).
BUILTIN = ("albert", "bert", "roberta", "distil_bert", "ernie", "gpt", "xlnet", "elmo")

FAMILIES = {}


def register(family):
    """Adds `family` to the registry (from anywhere: a family may live outside `keras_pretrain/models/`).

    Its package (`Family.package_name`, default `keras_pretrain.models.<name>`) is imported when its classes
    are first asked for; importing it registers its Keras classes. Re-registering a name replaces the entry.
    Returns `family`.
    """
    if not isinstance(family, Family):
        raise ConfigError(f"families.register takes a Family; got {type(family).__name__}.")
    FAMILIES[family.name] = family
    _backbone_classes.cache_clear()
    return family


def unregister(name):
    """Removes the family `name` (tests that register a toy family clean up with it)."""
    FAMILIES.pop(name, None)
    _backbone_classes.cache_clear()


def names():
    """Every family name, in registry order (the built-in ones without importing them)."""
    return tuple(dict.fromkeys(BUILTIN + tuple(FAMILIES)))


def get(name):
    """The `Family` called `name` (a ConfigError naming the known ones otherwise)."""
    if name not in FAMILIES and name in BUILTIN:
        importlib.import_module(f"keras_pretrain.models.{name}")
    if name not in FAMILIES:
        raise ConfigError(f"unknown model family {name!r}; choose one of {', '.join(FAMILIES)}")
    return FAMILIES[name]


def import_all():
    """Imports every family package (each registers its `Family` and its Keras classes for loading); the
    registry keeps `BUILTIN`'s order, then the families registered from elsewhere."""
    for name in BUILTIN:
        importlib.import_module(f"keras_pretrain.models.{name}")
    for family in list(FAMILIES.values()):
        family.module()
    ordered = {name: FAMILIES[name] for name in BUILTIN if name in FAMILIES}
    ordered.update((name, family) for name, family in FAMILIES.items() if name not in ordered)
    FAMILIES.clear()
    FAMILIES.update(ordered)


def family_of(model):
    """The `Family` of a backbone or task (by its backbone's class, the most specific family first).

    ERNIE's backbone is a BERT backbone with task-type embeddings: an `ErnieBackbone` is "ernie", a plain
    `BertBackbone` "bert". Raises ConfigError for a model of no known family.
    """
    backbone = getattr(model, "backbone", model)
    classes = _backbone_classes()
    for cls in type(backbone).__mro__:
        if cls in classes:
            return classes[cls]
    raise ConfigError(f"{type(backbone).__name__} is not the backbone of a known family ({', '.join(FAMILIES)}).")


@functools.lru_cache(maxsize=1)
def _backbone_classes():
    """backbone class -> family (cleared by `register`)."""
    classes = {}
    for family in FAMILIES.values():
        try:
            classes[family.backbone_class] = family
        except (ImportError, AttributeError):  # a family whose package cannot be imported here
            continue
    return classes


def from_huggingface_type(model_type, source="config.json"):
    """The family converting Hugging Face `model_type` (ConfigError naming the supported types)."""
    for family in FAMILIES.values():
        if model_type in family.huggingface:
            return family
    supported = sorted(t for f in FAMILIES.values() for t in f.huggingface)
    raise ConfigError(f"{source}: model_type {model_type!r} is not supported; supported: {supported}.")
