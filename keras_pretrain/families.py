"""The model families: the one list, and everything the rest of the library asks about a family.

Each `Family` names its classes (resolved lazily, so importing this module imports no model code), its
presets, its converters per source format, its pretraining defaults, how it packs `[CLS] A [SEP] B [SEP]`-style
inputs, and its TF-Hub contract. Recipes (`--model` choices), `keras_pretrain.convert`, `keras_pretrain.export`,
`hub_modules` and the benchmarks read this registry; nothing else lists families or inspects class names.

Adding a family: write its folder under `keras_pretrain/models/` and add one `Family(...)` to `FAMILIES` below.

```python
from keras_pretrain import families

family = families.get("albert")
backbone = family.backbone_class(**family.demo_config, vocabulary_size=3000)
families.family_of(backbone).name  # "albert"
```
"""

import dataclasses
import importlib

from keras_pretrain.errors import ConfigError

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
class Family:
    """One model family.

    Attributes:
        name: the family's name (`--model` value, folder under keras_pretrain/models/).
        backbone, pretrainer, classifier, tokenizer: class names in the family package
            (`keras_pretrain.models.<name>`), or "<family>.<Class>" for another family's class (ERNIE's
            classifier is BERT's); the `*_class` properties import them.
        contract: the TF-Hub module contract (`keras_pretrain.export.contracts`): input and output names.
        packing: how a pair of segments becomes one input: "bert" (`[CLS] A [SEP] B [SEP]`), "roberta"
            (`<s> A </s></s> B </s>`), "xlnet" (`A <sep> B <sep> <cls>`, left-padded), "gpt" (start /
            delimiter / classify tokens), "elmo" (words with a separator).
        vocabulary: the tokenizer kind a pretraining run saves: "wordpiece" (vocab.txt), "bpe" (vocab.json +
            merges.txt) or "words" (words.txt; ELMo reads characters).
        casing: whether the tokenizer has a lower-casing option (byte-level BPE has none).
        huggingface: `model_type` values of Hugging Face `config.json` that this family converts.
        converters: source format -> "module:function" ("huggingface", "tf1", ...).
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
    contract: str
    packing: str
    vocabulary: str
    kind: str
    objective: str
    objectives: tuple
    masking: str = None
    casing: bool = True
    huggingface: tuple = ()
    converters: dict = dataclasses.field(default_factory=dict)
    dynamic: bool = False
    learning_rate: float = 2e-3
    dropout: float = 0.1
    steps: int = 1000
    demo_config: dict = dataclasses.field(default_factory=dict)
    positions: bool = True
    position_offset: int = 0

    @property
    def package(self):
        return f"keras_pretrain.models.{self.name}"

    def module(self):
        """The family package (importing it registers its Keras classes)."""
        return importlib.import_module(self.package)

    def _class(self, name):
        if "." in name:  # another family's class: "bert.BertTokenizer"
            package, name = name.split(".")
            self.module()  # registers this family's classes too
            return getattr(importlib.import_module(f"keras_pretrain.models.{package}"), name)
        return getattr(self.module(), name)

    backbone_class = property(lambda self: self._class(self.backbone))
    pretrainer_class = property(lambda self: self._class(self.pretrainer))
    classifier_class = property(lambda self: self._class(self.classifier))
    tokenizer_class = property(lambda self: self._class(self.tokenizer))

    @property
    def presets(self):
        """Published configurations: name -> {"metadata", "config"}."""
        return dict(getattr(self.module(), "backbone_presets", {}))

    @property
    def masked_lm(self):
        """True for the masked-LM families (fill-mask, `--masking`, `--lexicon`)."""
        return self.kind == MASKED_LM

    def converter(self, source):
        """The importer of `source` ("huggingface", "tf1", ...): a function, imported."""
        if source not in self.converters:
            formats = sorted(self.converters) or "none"
            raise ConfigError(f"No {source} converter for family {self.name!r}; its formats: {formats}.")
        module, function = self.converters[source].split(":")
        return getattr(importlib.import_module(module), function)


def _hf(family):
    return {"huggingface": f"keras_pretrain.models.{family}.{family}_convert:convert_huggingface"}


_ENCODER = dict(contract="bert", packing="bert", vocabulary="wordpiece", kind=MASKED_LM,
                objectives=MASKED_LM_OBJECTIVES)

FAMILIES = {
    family.name: family
    for family in (
        # ALBERT v2 trains without dropout; with it (or at 2e-3) the tiny demo model stalls at unigram
        # statistics on the bundled corpus. Two shared layers take 2500 steps in the time four take 1000,
        # and leave the unigram plateau (held-out accuracy 0.158 against 0.098).
        Family("albert", "AlbertBackbone", "AlbertPretrainer", "AlbertClassifier", "AlbertTokenizer",
               objective="sop", masking="ngram", dropout=0.0, learning_rate=1e-3, steps=2500,
               demo_config={**TINY_ENCODER, "num_groups": 1, "embedding_dim": 64},
               huggingface=("albert",),
               converters={**_hf("albert"), "tf1": "keras_pretrain.models.albert.albert_convert:convert_tf1"},
               **_ENCODER),
        Family("bert", "BertBackbone", "BertPretrainer", "BertClassifier", "BertTokenizer",
               objective="nsp", masking="token", demo_config=TINY_ENCODER, huggingface=("bert",),
               converters={**_hf("bert"), "tf1": "keras_pretrain.models.bert.bert_convert:convert_tf1"},
               **_ENCODER),
        # RoBERTa: no NSP, FULL-SENTENCES packing, a new mask every epoch.
        Family("roberta", "RobertaBackbone", "RobertaPretrainer", "RobertaClassifier", "RobertaTokenizer",
               objective="full_sentences", masking="token", dynamic=True, casing=False,
               demo_config={**TINY_ENCODER, "padding_id": 0}, position_offset=2, huggingface=("roberta",),
               converters={**_hf("roberta"), "fairseq": "keras_pretrain.models.roberta.roberta_convert:convert_fairseq"},
               **{**_ENCODER, "contract": "roberta", "packing": "roberta"}),
        Family("distil_bert", "DistilBertBackbone", "DistilBertPretrainer", "DistilBertClassifier",
               "bert.BertTokenizer", objective="full_sentences", masking="token", dynamic=True,
               demo_config=TINY_ENCODER, huggingface=("distilbert",), converters=_hf("distil_bert"),
               **{**_ENCODER, "contract": "roberta"}),
        # ERNIE 1.0: knowledge masking (phrases / entities from --lexicon).
        Family("ernie", "ErnieBackbone", "ErniePretrainer", "bert.BertClassifier", "bert.BertTokenizer",
               objective="nsp", masking="knowledge", demo_config=TINY_ENCODER, huggingface=("ernie",),
               converters=_hf("ernie"), **_ENCODER),
        Family("gpt", "GPTBackbone", "GPTCausalLM", "GPTClassifier", "GPTTokenizer", contract="gpt",
               packing="gpt", vocabulary="bpe", kind=CAUSAL_LM, objective=CAUSAL_LM, objectives=(CAUSAL_LM,),
               casing=False, demo_config=TINY_ENCODER, huggingface=("openai-gpt",),
               converters={**_hf("gpt"), "openai": "keras_pretrain.models.gpt.gpt_convert:convert_openai"}),
        Family("xlnet", "XLNetBackbone", "XLNetPretrainer", "XLNetClassifier", "XLNetTokenizer",
               contract="xlnet", packing="xlnet", vocabulary="wordpiece", kind=PERMUTATION_LM,
               objective=PERMUTATION_LM, objectives=(PERMUTATION_LM,), demo_config=TINY_ENCODER, positions=False,
               huggingface=("xlnet",),
               converters={**_hf("xlnet"), "tf1": "keras_pretrain.models.xlnet.xlnet_convert:convert_tf1"}),
        Family("elmo", "ElmoBackbone", "ElmoBiLM", "ElmoClassifier", "ElmoCharacterMapper", contract="elmo",
               packing="elmo", vocabulary="words", kind=BIDIRECTIONAL_LM, objective=BIDIRECTIONAL_LM,
               objectives=(BIDIRECTIONAL_LM,), positions=False,
               demo_config={"num_layers": 2, "hidden_dim": 64, "lstm_dim": 256, "num_highway": 1,
                            "filters": [[1, 32], [2, 32], [3, 64], [4, 128]]},
               converters={"bilm": "keras_pretrain.models.elmo.elmo_convert:convert_bilm",
                           "tf1_hub": "keras_pretrain.models.elmo.elmo_convert:convert_tf1_hub"}),
    )
}


def names():
    """Every family name, in registry order."""
    return tuple(FAMILIES)


def get(name):
    """The `Family` called `name` (a ConfigError naming the known ones otherwise)."""
    if name not in FAMILIES:
        raise ConfigError(f"unknown model family {name!r}; choose one of {', '.join(FAMILIES)}")
    return FAMILIES[name]


def import_all():
    """Imports every family package, so that their Keras classes are registered for loading."""
    for family in FAMILIES.values():
        family.module()


def family_of(model):
    """The `Family` of a backbone or task (by its backbone's class, the most specific family first).

    ERNIE's backbone is a BERT backbone with task-type embeddings: an `ErnieBackbone` is "ernie", a plain
    `BertBackbone` "bert". Raises ConfigError for a model of no known family.
    """
    backbone = getattr(model, "backbone", model)
    classes = {}
    for family in FAMILIES.values():
        try:
            classes[family.backbone_class] = family
        except (ImportError, AttributeError):  # a family whose package cannot be imported here
            continue
    for cls in type(backbone).__mro__:
        if cls in classes:
            return classes[cls]
    raise ConfigError(f"{type(backbone).__name__} is not the backbone of a known family ({', '.join(FAMILIES)}).")


def from_huggingface_type(model_type, source="config.json"):
    """The family converting Hugging Face `model_type` (ConfigError naming the supported types)."""
    for family in FAMILIES.values():
        if model_type in family.huggingface:
            return family
    supported = sorted(t for f in FAMILIES.values() for t in f.huggingface)
    raise ConfigError(f"{source}: model_type {model_type!r} is not supported; supported: {supported}.")
