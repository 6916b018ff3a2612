"""Importing published checkpoints into keras_pretrain models, and exporting ours to Hugging Face folders.

`load(path)` takes any release on disk, finds its family and format from file and variable names
(`keras_pretrain.checkpoints.formats.detect`), prints them, and converts it:

```python
from keras_pretrain import convert

model, tokenizer = convert.load("xlnet_cased_L-12_H-768_A-12.zip")   # XLNet, original TF1 checkpoint
model, tokenizer = convert.load("roberta.base", pretrainer=True)      # RoBERTa, fairseq model.pt
```

One entry point per format as well: `from_huggingface(folder)` (a local Hugging Face folder, dispatched on
its `config.json` `model_type`), `from_tf1_checkpoint(path)` (Google's TF1 releases of BERT, ALBERT and
XLNet; the family from the config file and variable names), `from_bilm(options, weights)` (ELMo, bilm-tf /
AllenNLP), `from_openai_gpt(folder)` (GPT-1, openai/finetune-transformer-lm), `from_fairseq(path)` (RoBERTa,
fairseq). The converters of each family are named in its `keras_pretrain.families.Family` (`converters` per
source format). Nothing is downloaded: the files must be on disk.

A Hugging Face folder's `config.json` `architectures` chooses what `load` returns: the backbone
(`BertModel`), the pretrainer (`BertForPreTraining`, `*ForMaskedLM`, `*LMHeadModel`) or the fine-tuned task
with its head (`*ForSequenceClassification`, with `problem_type` regression / multi-label;
`*ForMultipleChoice` as `keras_pretrain.tasks.MultipleChoice`; `*ForQuestionAnswering` of BERT, ALBERT,
RoBERTa, DistilBERT and ERNIE and `XLNetForQuestionAnsweringSimple` as
`keras_pretrain.tasks.SpanQuestionAnswering`; `XLNetForQuestionAnswering`, the beam and answer class, as
`keras_pretrain.tasks.BeamQuestionAnswering`; `*ForTokenClassification` of BERT, ALBERT, RoBERTa, DistilBERT,
ERNIE and XLNet as `keras_pretrain.tasks.TokenClassifier`); `task=False` loads the backbone alone and says which
head it skipped. An architecture with no task here (`BertForNextSentencePrediction`, `*ForCausalLM`) is a clear
error.

The other way, `to_huggingface(model, folder, tokenizer=...)` writes `config.json`, `model.safetensors` and
the tokenizer files that `transformers.AutoModel*.from_pretrained(folder)` and `AutoTokenizer` read: the
importers' weight placers run backwards (`keras_pretrain.models.huggingface_export`). ELMo has no
transformers class: `to_bilm(model, folder)` writes bilm-tf's `options.json` + `weights.hdf5`, which `load`
reads back. keras-hub presets: `to_keras_hub_preset(backbone, folder, tokenizer=...)` writes a folder that
keras-hub's own `BertBackbone.from_preset` (ALBERT, RoBERTa, DistilBERT alike) reads; `from_keras_hub_preset(folder)`
reads keras-hub's folders into ours.

Where each piece lives (this module is the front; the rest are its internals):
- finding a release's family and format: `keras_pretrain/checkpoints/formats.py` (`detect`), file names and
  variable names in `checkpoints/names.py`, readers of TF1 checkpoints, PyTorch pickles and safetensors in
  `checkpoints/tf1.py`, `torch_pickle.py`, `weights.py`, and the checks with their error messages in
  `checkpoints/checks.py`;
- per family, the importers and Hugging Face exporters: `keras_pretrain/models/<family>/<family>_convert.py`
  (ELMo's bilm-tf writer: `models/elmo/elmo_export.py`), registered in the family's `Family.converters` /
  `exporters`;
- what the Hugging Face importers and exporters share (the config mapping, weight placers, heads):
  `keras_pretrain/models/conversion.py` (import) and `models/huggingface_export.py` (export);
- keras-hub presets: `keras_pretrain/models/keras_hub_presets.py`.
"""

import os

from keras_pretrain import families
from keras_pretrain.checkpoints.huggingface import read_json
from keras_pretrain.errors import CheckpointFormatError
from keras_pretrain.errors import ConfigError
from keras_pretrain.errors import ExportError


def from_huggingface(path, pretrainer=False, lowercase=None, task=False):
    """Loads a local Hugging Face folder into our model and tokenizer.

    Args:
        path: folder with `config.json`, `model.safetensors` or
            `pytorch_model.bin`, and tokenizer files (`vocab.txt`, ...).
        pretrainer: bool. Also load the pretraining heads and return the
            family's pretrainer task instead of the bare backbone.
        lowercase: the tokenizer's casing (WordPiece and SentencePiece
            families); None: `do_lower_case` of `tokenizer_config.json`, else
            the folder's name, else a guess from the vocabulary
            (`keras_pretrain.casing`). The choice is printed.
        task: follow `config.json`'s `architectures`: the fine-tuned task with its head, or the pretrainer
            of a pretraining architecture (`load` does by default). False: the backbone (a skipped head is
            printed).

    Returns:
        `(model, tokenizer)`; tokenizer is None when the folder has none.
    """
    path = os.fspath(path)
    if not os.path.isdir(path):
        raise CheckpointFormatError(f"{path}: not a folder.")
    config_path = os.path.join(path, "config.json")
    model_type = read_json(config_path).get("model_type")
    family = families.from_huggingface_type(model_type, source=config_path)
    kwargs = {}
    if lowercase is not None:
        if not family.casing:
            raise ConfigError(
                f"{config_path}: lowercase= does not apply to {model_type} (byte-level BPE, no casing option)."
            )
        kwargs["lowercase"] = lowercase
    return family.converter("huggingface")(path, pretrainer=pretrainer, task=task, **kwargs)


def load(path, pretrainer=False, task=True, **options):
    """`(model, tokenizer)` from a release in any supported format, detected (family and format printed).

    Args:
        path: a folder, archive (`.zip`, `.tar.gz`), file or TF1 checkpoint prefix (see
            `keras_pretrain.checkpoints.formats` for what identifies each format).
        pretrainer: also load the pretraining heads (the family's pretrainer task) where the release has them.
        task: a Hugging Face folder: the model its `architectures` names (a fine-tuned head, a pretrainer);
            False: the backbone, printing the head it skips. An XLNet TF1 checkpoint of run_squad.py: its
            `BeamQuestionAnswering`. Other formats: unused.
        **options: passed to the format's converter (`lowercase=`, XLNet's `mem_len=`, ...).

    Raises:
        CheckpointFormatError: no known format, or the converter's errors (every missing or mis-shaped
            variable named at once).
    """
    from keras_pretrain.checkpoints.formats import detect

    source = detect(path)
    print(f"loading {source.describe()}", flush=True)
    if source.format == "huggingface" or (source.format, source.family) == ("tf1", "xlnet"):
        options["task"] = task  # XLNet's TF1 checkpoints of run_squad.py hold their head
    return families.get(source.family).converter(source.format)(source.location, pretrainer=pretrainer, **options)


def to_huggingface(model, folder, tokenizer=None):
    """Writes `model` (a backbone, pretrainer or fine-tuned task of BERT, ALBERT, RoBERTa, DistilBERT, ERNIE,
    XLNet or GPT-1) as a Hugging Face folder, with `tokenizer`'s files when given.

    `folder` must be new or empty; nothing is written through a symbolic link. The architecture follows the
    model (`BertModel`, `BertForPreTraining`, `BertForSequenceClassification`, ...). Returns the folder.

    Raises:
        ExportError: ELMo (no transformers class: use `to_bilm`), a head with no transformers counterpart,
            an activation transformers cannot name, a folder that is not empty.
    """
    family = families.family_of(model)
    if "huggingface" not in family.exporters:
        others = ", ".join(f"to_{t}" for t in family.exporters) or "none"
        raise ExportError(f"{family.name}: transformers has no class for this family, so there is no Hugging "
                          f"Face export; its exports: {others}.")
    return family.exporter("huggingface")(model, folder, tokenizer=tokenizer)


def to_bilm(model, folder, vocabulary=None):
    """ELMo as bilm-tf files (`options.json`, `weights.hdf5`), which `load(folder)` reads back."""
    family = families.family_of(model)
    return family.exporter("bilm")(model, folder, vocabulary=vocabulary)


def from_bilm(options_path, weights_path=None, pretrainer=False, **kwargs):
    """ELMo from bilm-tf / AllenNLP files: `options.json` and `weights.hdf5` (None: the one beside it).

    See `keras_pretrain.models.elmo.elmo_convert.convert_bilm` (`softmax=`, `vocabulary=`, `stateful=`).
    """
    return families.get("elmo").converter("bilm")(options_path, pretrainer=pretrainer, weights=weights_path,
                                                   **kwargs)


def from_openai_gpt(folder, pretrainer=False, **kwargs):
    """GPT-1 from OpenAI's finetune-transformer-lm release folder (`params_shapes.json`, `params_*.npy`).

    Returns `(GPTBackbone or GPTCausalLM, GPTTokenizer)`; see `keras_pretrain.models.gpt.gpt_convert.convert_openai`.
    """
    return families.get("gpt").converter("openai")(folder, pretrainer=pretrainer, **kwargs)


def from_fairseq(path, pretrainer=False, **kwargs):
    """RoBERTa from a fairseq release (`model.pt`, `dict.txt`; GPT-2's `encoder.json` + `vocab.bpe`).

    The pickle is read without running its code; see `keras_pretrain.models.roberta.roberta_convert.convert_fairseq`.
    """
    return families.get("roberta").converter("fairseq")(path, pretrainer=pretrainer, **kwargs)


def from_tf1_checkpoint(path, family=None, pretrainer=False, **kwargs):
    """Loads an original TF1 checkpoint (Google layout) of BERT, ALBERT or XLNet.

    `family`: None detects it from the config file's name (`bert_config.json`, `albert_config.json`,
    `xlnet_config.json`), else from the variable names (printed).

    `path`: a folder, an explicit checkpoint prefix (`.../model.ckpt-1000`,
    loaded exactly) or a released archive (`.zip`, `.tar.gz`). In a folder
    with several checkpoints the one the `checkpoint` state file names is
    loaded, else the highest global step, else `*-best`; the choice is
    printed (`keras_pretrain.checkpoints.tf1.tf1_checkpoint`).

    `lowercase=` (None: from the release name, else guessed / the published
    default, printed) sets the tokenizer's casing; see `keras_pretrain.casing`.
    """
    supported = sorted(f.name for f in families.FAMILIES.values() if "tf1" in f.converters)
    if family is None:
        from keras_pretrain.checkpoints.formats import detect

        try:
            source = detect(path)
        except CheckpointFormatError:  # no checkpoint, unreadable: BERT's loader says what is wrong in detail
            source = None
        if source is not None and source.format != "tf1":
            raise CheckpointFormatError(f"{source.describe()}: not a TF1 checkpoint; use convert.load({path!r}).")
        family = source.family if source is not None else "bert"
        if source is not None:
            print(f"{path}: {family} TF1 checkpoint ({source.reason})", flush=True)
    if family not in supported:
        raise ConfigError(f"No TF1 checkpoint converter for family {family!r}; supported: {supported}.")
    return families.get(family).converter("tf1")(path, pretrainer=pretrainer, **kwargs)


def to_keras_hub_preset(backbone, folder, tokenizer=None):
    """Writes `backbone` (BERT, ALBERT, RoBERTa, DistilBERT) as a keras-hub preset folder of keras-hub's own classes
    (`keras_pretrain.models.keras_hub_presets.to_keras_hub_preset`)."""
    from keras_pretrain.models.keras_hub_presets import to_keras_hub_preset as write

    return write(backbone, folder, tokenizer=tokenizer)


def from_keras_hub_preset(folder, load_weights=True, **kwargs):
    """Our backbone (and tokenizer) from a keras-hub preset folder of BERT, ALBERT, RoBERTa or DistilBERT
    (`keras_pretrain.models.keras_hub_presets.from_keras_hub_preset`)."""
    from keras_pretrain.models.keras_hub_presets import from_keras_hub_preset as read

    return read(folder, load_weights=load_weights, **kwargs)
