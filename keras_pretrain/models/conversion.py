"""One Hugging Face conversion driver, driven by a per-family `HFSpec`, and the
build-and-place step the original-format (TF1) loaders share with it.

Every family converts a local Hugging Face folder the same way: read
`config.json`, map it to our backbone's arguments, open the weights
(`model.safetensors` / `pytorch_model.bin`), build the backbone (or the
pretrainer around it), place the weights with the checked `WeightLoader`,
check that nothing but the declared ignorable names stays unused
(`HF_IGNORE`; the heads' names too when only a backbone is wanted), then
build the tokenizer from its files and choose its casing
(`keras_pretrain.casing`, printed). This module does that once; each
`<family>_convert.py` writes only its spec: the config-key mapping, the
weight-name maps and placing, its heads, its tokenizer files, and anything
special to it (hooks `prepare` and `after_load`). The BERT config format,
which the ALBERT, ERNIE and RoBERTa releases extend, is read here too.
"""

import dataclasses
import importlib
import os
from typing import Callable
from typing import Optional

from keras_pretrain.casing import choose_lowercase
from keras_pretrain.checkpoints.huggingface import hf_loader
from keras_pretrain.checkpoints.huggingface import read_json
from keras_pretrain.checkpoints.huggingface import require
from keras_pretrain.errors import ConfigError
from keras_pretrain.layers.activations import translate_activation
from keras_pretrain.losses import PROBLEM_TYPES

CONFIG = "config.json"
TOKENIZER_CONFIG = "tokenizer_config.json"


BERT_CONFIG_KEYS = (
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "max_position_embeddings",
    "type_vocab_size",
)


def bert_style_config(config, source, activations):
    """A BERT-style config dict (HF or Google) -> `BertBackbone` kwargs.

    `activations`: the source's activation names (`HF_ACTIVATIONS`,
    `TF1_ACTIVATIONS`); ALBERT, ERNIE and RoBERTa add their own keys.
    """
    require(config, BERT_CONFIG_KEYS, source)
    return {
        "vocabulary_size": config["vocab_size"],
        "num_layers": config["num_hidden_layers"],
        "num_heads": config["num_attention_heads"],
        "hidden_dim": config["hidden_size"],
        "intermediate_dim": config["intermediate_size"],
        "dropout": config.get("hidden_dropout_prob", 0.1),
        "max_sequence_length": config["max_position_embeddings"],
        "num_segments": config["type_vocab_size"],
        "activation": translate_activation(
            config.get("hidden_act", "gelu"), activations, source
        ),
        "layer_norm_epsilon": config.get("layer_norm_eps", 1e-12),
        "initializer_range": config.get("initializer_range", 0.02),
    }


@dataclasses.dataclass(frozen=True)
class HFSpec:
    """What differs between families in a Hugging Face conversion.

    Attributes:
        backbone: "module:Class" of the backbone (imported when used).
        pretrainer: "module:Class" of the pretrainer (called with the
            backbone and the keyword arguments `prepare` returns).
        config: `(config_dict, config_path) -> backbone kwargs` (raises
            `ConfigError` naming the file).
        load_backbone: `(backbone, loader)`: places the backbone's weights.
        load_heads: `(pretrainer, loader)`: places the heads' weights, or None
            (the pretrainer has no weights of its own, e.g. a tied LM head).
        ignore: glob patterns of names that may stay unused (tied or derived
            copies: `HF_IGNORE`).
        heads: glob patterns of the heads' names, also unused when only the
            backbone is loaded.
        tokenizer_files: the files the tokenizer needs; no tokenizer (None)
            when one is missing.
        tokenizer: `(paths, lowercase, options) -> tokenizer`: `paths` the
            `tokenizer_files` in the folder, `lowercase` the chosen casing
            (None for families without one), `options` the folder's
            `tokenizer_config.json` ({} when absent or not read).
        casing: the family's published default casing; None: the tokenizer
            has no casing option (byte-level BPE).
        guess_casing: guess the casing from the first tokenizer file (a
            WordPiece `vocab.txt`) when nothing states it.
        tokenizer_options: read `tokenizer_config.json`.
        prepare: optional `(loader, kwargs, pretrainer) -> pretrainer kwargs`,
            called once the weights are open, before anything is built; it
            may edit the backbone `kwargs` and `loader.ignore`.
        after_load: optional `(model, loader, pretrainer)`, called before the
            loader's check.
        model_type, architecture: `config.json`'s `model_type` and the stem of
            transformers' class names ("Bert": `BertModel`, `BertForMaskedLM`).
        prefix, probe: the backbone's prefix in a task model's state dict
            ("bert.") and the name that shows it (`prefix + probe`).
        to_config: `backbone -> config.json` dict (the inverse of `config`).
        pretrainer_suffix: `pretrainer -> ` its architecture's suffix
            ("ForPreTraining", "ForMaskedLM", "LMHeadModel").
        tasks: the `HFHead`s of the fine-tuned heads this family converts.
        write_tokenizer: `tokenizer -> {file name: bytes}` of its Hugging Face
            files (vocabulary and `tokenizer_config.json`).
        left_out: `architecture -> ` glob patterns of weights an export of it
            leaves out (a `*ForMaskedLM` has no pooler).
    """

    backbone: str
    pretrainer: str
    config: Callable
    load_backbone: Callable
    load_heads: Optional[Callable] = None
    ignore: tuple = ()
    heads: tuple = ()
    tokenizer_files: tuple = ()
    tokenizer: Optional[Callable] = None
    casing: Optional[bool] = None
    guess_casing: bool = False
    tokenizer_options: bool = True
    prepare: Optional[Callable] = None
    after_load: Optional[Callable] = None
    # --- Task heads and export (`keras_pretrain.models.huggingface_export`) ---
    model_type: Optional[str] = None
    architecture: Optional[str] = None
    prefix: str = ""
    probe: str = "embeddings.word_embeddings.weight"
    to_config: Optional[Callable] = None
    pretrainer_suffix: Optional[Callable] = None
    tasks: tuple = ()
    write_tokenizer: Optional[Callable] = None
    left_out: Optional[Callable] = None

    def task_head(self, kind):
        """The `HFHead` of task `kind`, or None."""
        return next((head for head in self.tasks if head.kind == kind), None)


@dataclasses.dataclass(frozen=True)
class HFHead:
    """One fine-tuned head of a family, both ways (`config.json` `architectures` <-> our task).

    Attributes:
        kind: the task kind (a value of `ARCHITECTURE_KINDS`).
        task: "module:Class" of our task model.
        place: `(task, loader)`: places the head's weights (a `WeightLoader` imports, a `WeightWriter`
            exports: one table both ways). The backbone is placed by the family's `load_backbone`.
        names: glob patterns of the head's weights (a backbone-only load skips them, said so).
        build: `(backbone, config, source) -> task` (default: a `num_labels` sequence classifier).
        to_config: `task -> ` the `config.json` keys of the head (default: `num_labels`, `problem_type`).
        suffix: the architecture's suffix (default: the first of `kind`'s in `ARCHITECTURE_KINDS`).
        matches: `model -> bool`, whether an export of `model` is this head (default: an instance of
            `task`).
        backbone_options: backbone arguments the head fixes on import, over the folder's (RoBERTa's
            multiple-choice task holds the pooler itself: `{"use_pooler": False}`).
    """

    kind: str
    task: str
    place: Callable
    names: tuple = ()
    build: Optional[Callable] = None
    to_config: Optional[Callable] = None
    suffix: Optional[str] = None
    matches: Optional[Callable] = None
    backbone_options: dict = dataclasses.field(default_factory=dict)


BACKBONE, PRETRAINER = "backbone", "pretrainer"  # the kinds every family converts (tasks: `HFHead.kind`)
BASE_KINDS = (BACKBONE, PRETRAINER)

# transformers' class-name suffixes -> the kind of model they hold. A family converts the kinds it has
# heads for (`HFSpec.tasks`; "backbone" and "pretrainer" always); the others are named in a clear error.
ARCHITECTURE_KINDS = {
    "Model": BACKBONE,
    "ForPreTraining": PRETRAINER,
    "ForMaskedLM": PRETRAINER,
    "LMHeadModel": PRETRAINER,
    "ForSequenceClassification": "sequence_classification",
    "DoubleHeadsModel": "double_heads",
    "ForMultipleChoice": "multiple_choice",
    "ForTokenClassification": "token_classification",
    "ForQuestionAnswering": "question_answering",
    "ForQuestionAnsweringSimple": "question_answering",
    # XLNet's full head (beam, answer class); its `*Simple` is the span head of the others.
    "XLNetForQuestionAnswering": "beam_question_answering",
    "ForNextSentencePrediction": "next_sentence",
    "ForCausalLM": "causal_lm",
}


# The heads' weights in transformers' task models (outside the backbone's prefix), for task=False.
HEAD_NAMES = ("classifier.*", "qa_outputs.*", "score.*", "pre_classifier.*", "sequence_summary.*",
              "logits_proj.*", "multiple_choice_head.*", "start_logits.*", "end_logits.*", "answer_class.*",
              "cls.*", "lm_head.*", "lm_loss.*", "predictions.*", "sop_classifier.*", "vocab_*")


def architecture_kind(architecture, source):
    """The kind of transformers' class `architecture` (its suffix); ConfigError for an unknown one."""
    for suffix in sorted(ARCHITECTURE_KINDS, key=len, reverse=True):
        if architecture.endswith(suffix):
            return ARCHITECTURE_KINDS[suffix]
    raise ConfigError(f"{source}: architecture {architecture!r} is not one keras_pretrain knows "
                      f"(*{', *'.join(ARCHITECTURE_KINDS)}).")


def num_labels(config, source):
    """`(num_labels, problem_type)` of a sequence-classification `config.json`."""
    labels = config.get("id2label")
    count = len(labels) if isinstance(labels, dict) and labels else config.get("num_labels", 2)
    problem = config.get("problem_type") or ("regression" if count == 1 else "single_label_classification")
    if problem not in PROBLEM_TYPES:
        raise ConfigError(f"{source}: problem_type {problem!r} is not one of {PROBLEM_TYPES}.")
    return count, problem


def build_sequence_classifier(task_class, dropout_key="classifier_dropout"):
    """The default `HFHead.build`: `task_class(backbone, num_classes, problem_type=...)` (the head's dropout
    from `dropout_key` when the config sets it)."""

    def build(backbone, config, source):
        count, problem = num_labels(config, source)
        dropout = config.get(dropout_key)
        return task_class(backbone, num_classes=count, problem_type=problem,
                          **({} if dropout is None else {"dropout": dropout}))

    return build


def sequence_classifier_config(task):
    """The default `HFHead.to_config`: `num_labels` (as `id2label`) and `problem_type`."""
    labels = {str(i): f"LABEL_{i}" for i in range(task.num_classes)}
    return {"id2label": labels, "label2id": {v: int(k) for k, v in labels.items()},
            "problem_type": task.problem_type}


def is_sequence_classifier(model):
    from keras_pretrain.tasks import SequenceClassifier

    return isinstance(model, SequenceClassifier) and not is_multiple_choice(model)


def is_multiple_choice(model):
    from keras_pretrain.tasks.multiple_choice import MultipleChoice

    return isinstance(model, MultipleChoice)


def sequence_classification(task, place, names, dropout_key="classifier_dropout"):
    """The `HFHead` of a family's `*ForSequenceClassification` (any `SequenceClassifier` exports as it)."""

    def build(backbone, config, source):
        return build_sequence_classifier(resolve(task), dropout_key)(backbone, config, source)

    return HFHead("sequence_classification", task, place, names=names, build=build, matches=is_sequence_classifier)


MULTIPLE_CHOICE = "keras_pretrain.tasks.multiple_choice:MultipleChoice"


def build_multiple_choice(dropout_key="classifier_dropout", check=None):
    """The `HFHead.build` of a `*ForMultipleChoice`: `MultipleChoice(backbone)` (its dropout from
    `dropout_key` when the config sets it; `check(config, source)` first, when given)."""

    def build(backbone, config, source):
        if check is not None:
            check(config, source)
        dropout = config.get(dropout_key)
        return resolve(MULTIPLE_CHOICE)(backbone, **({} if dropout is None else {"dropout": dropout}))

    return build


def multiple_choice(place, names, dropout_key="classifier_dropout", check=None, to_config=None,
                    backbone_options=None):
    """The `HFHead` of a family's `*ForMultipleChoice` (any `MultipleChoice` of the family exports as it).

    `to_config`: `task -> ` the head's `config.json` keys (default none: the number of choices is the
    inputs').
    """
    return HFHead("multiple_choice", MULTIPLE_CHOICE, place, names=names,
                  build=build_multiple_choice(dropout_key, check), to_config=to_config or (lambda task: {}),
                  matches=is_multiple_choice, backbone_options=dict(backbone_options or {}))


QUESTION_ANSWERING = "keras_pretrain.tasks.question_answering:SpanQuestionAnswering"


def load_hf_qa_head(task, loader):
    """`*ForQuestionAnswering`'s `qa_outputs` Linear(H, 2) on the token states (start, end)."""
    from keras_pretrain.checkpoints.names import HF
    from keras_pretrain.models.block_weights import load_dense

    load_dense(loader, task.qa_outputs, *HF.dense("", "qa_outputs"), HF.linear)


def build_question_answering(dropout_key=None):
    """The `HFHead.build` of a `*ForQuestionAnswering`: `SpanQuestionAnswering(backbone)`, its dropout from
    `dropout_key` (DistilBERT's `qa_dropout`; the other families' heads have none). ConfigError unless the
    config's `num_labels` is 2 (start and end)."""

    def build(backbone, config, source):
        labels = config.get("id2label")
        count = len(labels) if isinstance(labels, dict) and labels else config.get("num_labels", 2)
        if count != 2:
            raise ConfigError(f"{source}: a question-answering head has num_labels 2 (start, end); found {count}.")
        dropout = config.get(dropout_key, 0.1) if dropout_key else 0.0
        return resolve(QUESTION_ANSWERING)(backbone, dropout=dropout)

    return build


def is_question_answering(model):
    from keras_pretrain.tasks.question_answering import SpanQuestionAnswering

    return isinstance(model, SpanQuestionAnswering)


def question_answering(names=("qa_outputs.*",), place=load_hf_qa_head, dropout_key=None, backbone_options=None,
                       suffix="ForQuestionAnswering"):
    """The `HFHead` of a family's `*ForQuestionAnswering` (any `SpanQuestionAnswering` of the family exports as
    it): `qa_outputs` on the token states. `dropout_key`: the config key of the head's dropout (DistilBERT's
    `qa_dropout`, written back on export), None where the head has none. `suffix`: XLNet's span head is
    `XLNetForQuestionAnsweringSimple`."""

    def to_config(task):
        return {dropout_key: task.dropout} if dropout_key else {}

    return HFHead("question_answering", QUESTION_ANSWERING, place, names=names,
                  build=build_question_answering(dropout_key), to_config=to_config,
                  suffix=suffix, matches=is_question_answering,
                  backbone_options=dict(backbone_options or {}))


TOKEN_CLASSIFICATION = "keras_pretrain.tasks.token_classifier:TokenClassifier"


def load_hf_token_head(task, loader):
    """`*ForTokenClassification`'s `classifier` Linear(H, num_labels) on the token states."""
    from keras_pretrain.checkpoints.names import HF
    from keras_pretrain.models.block_weights import load_dense

    load_dense(loader, task.classifier, *HF.dense("", "classifier"), HF.linear)


def is_token_classifier(model):
    from keras_pretrain.tasks.token_classifier import TokenClassifier

    return isinstance(model, TokenClassifier)


def token_classification(dropout_keys=("classifier_dropout", "hidden_dropout_prob"), backbone_options=None):
    """The `HFHead` of a family's `*ForTokenClassification` (any `TokenClassifier` of the family exports as it):
    `classifier` on the token states, `num_labels` from `id2label`. `dropout_keys`: the config keys transformers
    reads the head's dropout from, the first set one wins (BERT, ERNIE, RoBERTa: `classifier_dropout`, else
    `hidden_dropout_prob`; ALBERT `classifier_dropout_prob`; DistilBERT `dropout`; XLNet's head has none: ())."""

    def build(backbone, config, source):
        count, _ = num_labels(config, source)
        dropout = next((config[k] for k in dropout_keys if config.get(k) is not None), 0.1 if dropout_keys else 0.0)
        return resolve(TOKEN_CLASSIFICATION)(backbone, num_classes=count, dropout=float(dropout))

    def to_config(task):
        labels = {str(i): f"LABEL_{i}" for i in range(task.num_classes)}
        config = {"id2label": labels, "label2id": {v: int(k) for k, v in labels.items()}}
        if dropout_keys and dropout_keys[0] != "dropout":  # DistilBERT's `dropout` is the backbone's too
            config[dropout_keys[0]] = task.dropout
        return config

    return HFHead("token_classification", TOKEN_CLASSIFICATION, load_hf_token_head, names=("classifier.*",),
                  build=build, to_config=to_config, matches=is_token_classifier,
                  backbone_options=dict(backbone_options or {}))


BEAM_QUESTION_ANSWERING = "keras_pretrain.tasks.question_answering:BeamQuestionAnswering"


def load_beam_qa_head(task, loader, layout=None):
    """The answer-class head (`BeamQuestionAnswering`) under transformers' names (`start_logits.dense`,
    `end_logits.dense_0` / `LayerNorm` / `dense_1`, `answer_class.dense_0` / `dense_1` without bias) or, with
    `layout=TF1`, the authors' (`start_logits/dense/kernel`, ..., `end_logits/LayerNorm/gamma`)."""
    from keras_pretrain.checkpoints.names import HF
    from keras_pretrain.models.block_weights import load_dense
    from keras_pretrain.models.block_weights import load_layer_norm

    layout = layout or HF
    load_dense(loader, task.start_dense, *layout.dense("", "start_logits/dense"), layout.linear)
    load_dense(loader, task.end_dense_0, *layout.dense("", "end_logits/dense_0"), layout.linear)
    load_layer_norm(loader, task.end_layer_norm, *layout.norm(loader, "", "end_logits/LayerNorm"))
    load_dense(loader, task.end_dense_1, *layout.dense("", "end_logits/dense_1"), layout.linear)
    load_dense(loader, task.answer_dense_0, *layout.dense("", "answer_class/dense_0"), layout.linear)
    loader.assign(task.answer_dense_1.kernel, layout.dense("", "answer_class/dense_1")[0], layout.linear)


def is_beam_question_answering(model):
    from keras_pretrain.tasks.question_answering import BeamQuestionAnswering

    return isinstance(model, BeamQuestionAnswering)


def beam_question_answering(suffix="ForQuestionAnswering", dropout_key="dropout"):
    """The `HFHead` of XLNet's `XLNetForQuestionAnswering` (`BeamQuestionAnswering`: `start_n_top`,
    `end_n_top` from the config; the answer class's dropout from `dropout_key`)."""

    def build(backbone, config, source):
        return resolve(BEAM_QUESTION_ANSWERING)(
            backbone, start_n_top=int(config.get("start_n_top", 5)), end_n_top=int(config.get("end_n_top", 5)),
            dropout=float(config.get(dropout_key, 0.1)))

    def to_config(task):
        return {"start_n_top": task.start_n_top, "end_n_top": task.end_n_top}

    return HFHead("beam_question_answering", BEAM_QUESTION_ANSWERING, load_beam_qa_head,
                  names=("start_logits.*", "end_logits.*", "answer_class.*"), build=build, to_config=to_config,
                  suffix=suffix, matches=is_beam_question_answering)


def bert_style_hf_config(backbone, activation):
    """The inverse of `bert_style_config`: `config.json` keys of a BERT-style backbone.

    `activation`: `name -> ` transformers' name (`keras_pretrain.models.huggingface_export.hf_activation`).
    """
    return {
        "vocab_size": backbone.vocabulary_size,
        "hidden_size": backbone.hidden_dim,
        "num_hidden_layers": backbone.num_layers,
        "num_attention_heads": backbone.num_heads,
        "intermediate_size": backbone.intermediate_dim,
        "hidden_dropout_prob": backbone.dropout,
        "attention_probs_dropout_prob": backbone.dropout,
        "max_position_embeddings": backbone.max_sequence_length,
        "type_vocab_size": backbone.num_segments,
        "hidden_act": activation(backbone.activation),
        "layer_norm_eps": backbone.layer_norm_epsilon,
        "initializer_range": backbone.initializer_range,
    }


def resolve(name):
    """The object "module:attribute" names."""
    module, attribute = name.split(":")
    return getattr(importlib.import_module(module), attribute)


def hf_config(spec, folder):
    """The backbone kwargs from `folder/config.json`."""
    path = os.path.join(folder, CONFIG)
    return spec.config(read_json(path), path)


def tokenizer_options(folder):
    """`tokenizer_config.json` of `folder` ({} when absent) and its path."""
    path = os.path.join(folder, TOKENIZER_CONFIG)
    return (read_json(path) if os.path.exists(path) else {}), path


def load_tokenizer(spec, folder, lowercase=None):
    """The family's tokenizer from `folder`, or None when a file is missing."""
    if spec.tokenizer is None:
        return None
    paths = [os.path.join(folder, name) for name in spec.tokenizer_files]
    if not all(os.path.exists(p) for p in paths):
        return None
    options, options_path = tokenizer_options(folder) if spec.tokenizer_options else ({}, None)
    if spec.casing is not None:
        lowercase = choose_lowercase(
            paths[0], lowercase, stated=options.get("do_lower_case"), stated_by=options_path,
            names=(folder,), vocab=paths[0] if spec.guess_casing else None, default=spec.casing,
        )
    return spec.tokenizer(paths, lowercase, options)


def build_and_load(backbone_cls, pretrainer_cls, kwargs, loader, pretrainer, load_backbone,
                   load_heads=None, task_kwargs=None):
    """The backbone (or the pretrainer around it) with the checkpoint's weights placed.

    Used by the Hugging Face driver and by the original-format (TF1) loaders;
    the caller runs `loader.finish()`.
    """
    backbone = backbone_cls(**kwargs)
    if not pretrainer:
        load_backbone(backbone, loader)
        return backbone
    model = pretrainer_cls(backbone, **(task_kwargs or {}))
    load_backbone(backbone, loader)
    if load_heads is not None:
        load_heads(model, loader)
    return model


def convert_huggingface(spec, folder, pretrainer=False, lowercase=None, task=False):
    """A local Hugging Face folder -> `(model, tokenizer)` for the family `spec`.

    Args:
        spec: the family's `HFSpec`.
        folder: `config.json`, `model.safetensors` / `pytorch_model.bin`,
            and the tokenizer files.
        pretrainer: build the family's pretrainer (with its heads' weights)
            instead of the bare backbone.
        lowercase: the tokenizer's casing; None: chosen by
            `keras_pretrain.casing` (printed).
        task: follow `config.json`'s `architectures`: the task model with its
            fine-tuned head (`HFHead`), the pretrainer for a pretraining one;
            an architecture with no task here is a ConfigError naming it.
            False: the backbone, printing which head is skipped.
    """
    path = os.path.join(folder, CONFIG)
    config = read_json(path)
    kwargs = spec.config(config, path)
    head, skipped = None, None
    if not pretrainer:
        kind, architecture = folder_kind(spec, config, path)
        if kind == PRETRAINER and task:
            pretrainer = True
        elif kind not in BASE_KINDS:
            head = spec.task_head(kind)
            if task and head is None:
                raise ConfigError(
                    f"{path}: architecture {architecture!r} ({kind.replace('_', ' ')}) has no keras_pretrain "
                    f"task for this family yet; convert.load(..., task=False) loads the backbone alone."
                )
            if not task:
                skipped, head = architecture, None
        elif kind == PRETRAINER:
            skipped = architecture
    if head is not None:  # the head's own weights must all be used
        ignore = spec.ignore + tuple(p for p in spec.heads if p not in head.names)
    else:
        ignore = spec.ignore if pretrainer else spec.ignore + spec.heads
    loader = hf_loader(folder, ignore=ignore)
    if skipped:  # a backbone from a task folder: its head's weights stay unused (anything else is reported)
        loader.ignore += spec.heads + tuple(p for h in spec.tasks for p in h.names) + HEAD_NAMES
    task_kwargs = spec.prepare(loader, kwargs, pretrainer) if spec.prepare else None
    if head is not None:
        backbone = resolve(spec.backbone)(**{**kwargs, **head.backbone_options})
        build = head.build or build_sequence_classifier(resolve(head.task))
        model = build(backbone, config, path)
        spec.load_backbone(backbone, loader)
        head.place(model, loader)
    else:
        model = build_and_load(
            resolve(spec.backbone), resolve(spec.pretrainer) if pretrainer else None, kwargs, loader,
            pretrainer, spec.load_backbone, spec.load_heads, task_kwargs,
        )
    if spec.after_load is not None:
        spec.after_load(model, loader, pretrainer)
    loader.finish()
    if skipped:
        print(f"{path}: {skipped}: loaded the backbone; its head is skipped (task=False)", flush=True)
    return model, load_tokenizer(spec, folder, lowercase)


def folder_kind(spec, config, path):
    """`(kind, architecture)` of a folder from `config.json`'s `architectures` ("backbone" when absent)."""
    architectures = config.get("architectures") or []
    if not isinstance(architectures, list) or not all(isinstance(a, str) for a in architectures):
        raise ConfigError(f"{path}: architectures must be a list of class names; found {architectures!r}.")
    if not architectures:
        return BACKBONE, None
    architecture = architectures[0]
    return architecture_kind(architecture, path), architecture
