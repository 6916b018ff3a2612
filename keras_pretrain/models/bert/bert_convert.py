"""Weight-name maps for BERT: Hugging Face and original Google TF1 layouts.

Both layouts name the same network the same way up to spelling (see
`keras_pretrain.checkpoints.names`): one placing function per part serves
both. The config format and the placing are BERT's layout, which ALBERT,
ERNIE and RoBERTa share: `keras_pretrain.models.conversion.bert_style_config`
and `keras_pretrain.models.block_weights.load_bert_*`.
"""

import os
import re

from keras_pretrain.casing import choose_lowercase
from keras_pretrain.casing import guess_lowercase  # noqa: F401 - re-exported
from keras_pretrain.checkpoints.huggingface import read_json
from keras_pretrain.checkpoints.names import HF
from keras_pretrain.checkpoints.names import TF1
from keras_pretrain.checkpoints.names import find_file
from keras_pretrain.checkpoints.names import hf_norm  # noqa: F401 - re-exported
from keras_pretrain.checkpoints.names import hf_prefix
from keras_pretrain.layers.activations import HF_ACTIVATIONS
from keras_pretrain.layers.activations import TF1_ACTIVATIONS
from keras_pretrain.models import conversion
from keras_pretrain.models.block_weights import load_bert_encoder
from keras_pretrain.models.block_weights import load_dense
from keras_pretrain.models import huggingface_export
from keras_pretrain.models.huggingface_export import hf_activation
from keras_pretrain.models.huggingface_export import json_bytes
from keras_pretrain.models.block_weights import load_bert_heads


# --- Hugging Face ----------------------------------------------------------


def load_hf_backbone(backbone, loader, model_prefix="bert."):
    load_bert_encoder(backbone, loader, HF, hf_prefix(loader, model_prefix))


def load_hf_heads(pretrainer, loader):
    load_bert_heads(pretrainer, loader, HF)


def load_hf_pretrainer(pretrainer, loader, model_prefix="bert."):
    load_hf_backbone(pretrainer.backbone, loader, model_prefix)
    load_hf_heads(pretrainer, loader)


# Tied or derived copies that HF state dicts may carry.
HF_IGNORE = (
    "cls.predictions.decoder.weight",
    "cls.predictions.decoder.bias",
    "*position_ids",
)


def hf_config(folder):
    return conversion.hf_config(HF_SPEC, folder)


def hf_backbone_config(config, source):
    return conversion.bert_style_config(config, source, HF_ACTIVATIONS)


def wordpiece_tokenizer(paths, lowercase, options):
    """Our `BertTokenizer` from `vocab.txt` (+ `strip_accents` of `tokenizer_config.json`)."""
    from keras_pretrain.models.bert.bert_tokenizer import BertTokenizer

    return BertTokenizer(
        vocabulary=paths[0],
        lowercase=lowercase,
        strip_accents=options.get("strip_accents"),
    )


def prepare(loader, kwargs, pretrainer):
    """The next-sentence head only when the folder has one (`*ForPreTraining`; `*ForMaskedLM` has none)."""
    return {"sentence_head": "cls.seq_relationship.weight" in loader}


def forgive_missing_pooler(model_prefix):
    """`after_load`: `*ForMaskedLM`, `*ForQuestionAnswering` and `*ForTokenClassification` folders have no
    pooler (`add_pooling_layer=False`); ours stays as initialised (said so, unless the pretrainer, whose
    heads never read it, was asked for)."""

    def after_load(model, loader, pretrainer):
        prefix = hf_prefix(loader, model_prefix)
        pooler = f"'{prefix}pooler."  # BERT's and ERNIE's pooler.dense.*, ALBERT's pooler.*
        name = prefix + "pooler.*"
        if (prefix + "pooler.dense.weight" not in loader and prefix + "pooler.weight" not in loader
                and any(pooler in p for p in loader.problems)):
            loader.problems = [p for p in loader.problems if pooler not in p]
            if not pretrainer:
                print(f"{loader.source}: no pooler ({name}); pooled_output's dense layer stays initialised",
                      flush=True)

    return after_load


def pooler_not_in(architecture):
    """The names a `*ForMaskedLM`, `*ForQuestionAnswering` or `*ForTokenClassification` export leaves out:
    transformers builds them without a pooler."""
    return ("*pooler.*",) if architecture.endswith(("ForMaskedLM", "ForQuestionAnswering",
                                                     "ForTokenClassification")) else ()


def pretrainer_suffix(pretrainer):
    return "ForPreTraining" if pretrainer.sentence_head is not None else "ForMaskedLM"


def load_hf_classifier_head(classifier, loader):
    """`*ForSequenceClassification`'s (and `*ForMultipleChoice`'s) `classifier` Linear on the pooled `[CLS]`
    (BERT, ALBERT, ERNIE)."""
    load_dense(loader, classifier.output_dense, *HF.dense("", "classifier"), HF.linear)


def to_hf_config(backbone):
    return conversion.bert_style_hf_config(backbone, hf_activation)


def wordpiece_tokenizer_json(vocabulary, options, max_input_chars_per_word=200):
    """transformers' fast-tokenizer file (the `tokenizers` library's JSON) of a WordPiece vocabulary.

    Written because the classes build their WordPiece model with a 100-character word limit, where Google's
    `tokenization.py` (and ours) allows 200: with this file `AutoTokenizer` reads the original limit.
    """
    ids = {token: i for i, token in enumerate(vocabulary)}
    specials = [t for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]") if t in ids]

    def special(token, type_id):
        return {"SpecialToken": {"id": token, "type_id": type_id}}

    def sequence(name, type_id):
        return {"Sequence": {"id": name, "type_id": type_id}}

    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": ids[t], "content": t, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True} for t in specials],
        "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                       "strip_accents": options["strip_accents"], "lowercase": options["do_lower_case"]},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [special("[CLS]", 0), sequence("A", 0), special("[SEP]", 0)],
            "pair": [special("[CLS]", 0), sequence("A", 0), special("[SEP]", 0), sequence("B", 1),
                     special("[SEP]", 1)],
            "special_tokens": {t: {"id": t, "ids": [ids[t]], "tokens": [t]} for t in ("[CLS]", "[SEP]") if t in ids},
        },
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {"type": "WordPiece", "unk_token": options["unk_token"], "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": max_input_chars_per_word, "vocab": ids},
    }


def wordpiece_files():
    """`write_tokenizer` of a WordPiece family: `vocab.txt`, `tokenizer.json` and `tokenizer_config.json`.

    The config names the generic fast tokenizer, so that `AutoTokenizer` reads `tokenizer.json` (with
    BERT's 200-character word limit) instead of rebuilding a WordPiece model with transformers' limit of 100.
    """

    def write(tokenizer):
        vocabulary = tokenizer.get_vocabulary()
        options = {
            "tokenizer_class": "PreTrainedTokenizerFast",
            "do_lower_case": bool(tokenizer.bert_lowercase),
            "strip_accents": bool(tokenizer.strip_accents),
            "tokenize_chinese_chars": True,
            "unk_token": tokenizer.oov_token if hasattr(tokenizer, "oov_token") else "[UNK]",
            "cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "[PAD]", "mask_token": "[MASK]",
            # A literal "[MASK]" in the text is text, as in Google's tokenization.py and ours.
            "split_special_tokens": True,
        }
        return {"vocab.txt": ("\n".join(vocabulary) + "\n").encode("utf-8"),
                "tokenizer_config.json": json_bytes(options),
                "tokenizer.json": json_bytes(wordpiece_tokenizer_json(vocabulary, options))}

    return write


HF_SPEC = conversion.HFSpec(
    backbone="keras_pretrain.models.bert.bert_backbone:BertBackbone",
    pretrainer="keras_pretrain.models.bert.bert_pretrainer:BertPretrainer",
    config=hf_backbone_config, load_backbone=load_hf_backbone, load_heads=load_hf_heads,
    ignore=HF_IGNORE, heads=("cls.*",),
    tokenizer_files=("vocab.txt",), tokenizer=wordpiece_tokenizer, casing=True, guess_casing=True,
    prepare=prepare, after_load=forgive_missing_pooler("bert."), left_out=pooler_not_in,
    model_type="bert", architecture="Bert", prefix="bert.", to_config=to_hf_config,
    pretrainer_suffix=pretrainer_suffix,
    tasks=(conversion.sequence_classification("keras_pretrain.models.bert.bert_classifier:BertClassifier",
                                              load_hf_classifier_head, ("classifier.*",)),
           conversion.multiple_choice(load_hf_classifier_head, ("classifier.*",)),
           conversion.question_answering(),
           conversion.token_classification()),
    write_tokenizer=wordpiece_files(),
)


def numbered(layout, p, relative):
    """A regex whose group 1 is the number of the items `relative` (`encoder/layer`) under `p`."""
    return "^" + re.escape(layout.name(p, relative)) + ("_" if layout.sep == "/" else r"\.") + r"(\d+)" + \
        re.escape(layout.sep)


def size_checks(kwargs, layout, p, intermediate=None):
    """`(sizes, layers)` of `keras_pretrain.checkpoints.checks.check_config` for a BERT-style encoder
    under `p` in `layout` (BERT, ERNIE, RoBERTa). ALBERT passes its `intermediate` kernel's name and
    replaces the width and layer checks."""
    e = layout.scope(p, "embeddings")
    word = layout.embedding(e, "word_embeddings")
    block = "encoder/layer"
    layer0 = layout.scope(p, layout.item(block, 0))
    intermediate = intermediate or layout.dense(layer0, "intermediate/dense")[0]
    bias = intermediate[: -len(layout.kernel)] + "bias"
    out_axis = 1 if layout.linear is None else 0  # TF1 kernels [in, out]; PyTorch Linear [out, in]
    sizes = [
        ("vocab_size", kwargs["vocabulary_size"], [(word, 0)]),
        ("max_position_embeddings", kwargs["max_sequence_length"],
         [(layout.embedding(e, "position_embeddings"), 0)]),
        ("type_vocab_size", kwargs["num_segments"], [(layout.embedding(e, "token_type_embeddings"), 0)]),
        ("intermediate_size", kwargs["intermediate_dim"], [(intermediate, out_axis), (bias, 0)]),
    ]
    sizes.append(("hidden_size", kwargs["hidden_dim"], [(word, 1), (intermediate, 1 - out_axis),
                                                        (layout.embedding(e, "position_embeddings"), 1)]))
    return sizes, [("num_hidden_layers", kwargs["num_layers"], numbered(layout, p, block))]


def check_sizes(config_path, checkpoint, shapes, kwargs, layout, p):
    """The BERT-style config against the checkpoint's shapes, before anything is built."""
    from keras_pretrain.checkpoints.checks import check_config
    from keras_pretrain.checkpoints.checks import heads_divide

    heads_divide(config_path, "num_attention_heads", kwargs["num_heads"], "hidden_size", kwargs["hidden_dim"])
    sizes, layers = size_checks(kwargs, layout, p)
    check_config(config_path, checkpoint, shapes, sizes, layers)


def hf_checks(kwargs, config_path, shapes, model_prefix="bert."):
    """config.json against the weights' shapes (BERT; RoBERTa with `roberta.`)."""
    from keras_pretrain.checkpoints.checks import heads_divide

    heads_divide(config_path, "num_attention_heads", kwargs["num_heads"], "hidden_size", kwargs["hidden_dim"])
    return size_checks(kwargs, HF, hf_prefix(shapes, model_prefix))


# --- Original Google TF1 checkpoints ---------------------------------------


def load_tf1_backbone(backbone, loader):
    load_bert_encoder(backbone, loader, TF1, "bert/")


def load_tf1_heads(pretrainer, loader):
    load_bert_heads(pretrainer, loader, TF1)


def tf1_config(path):
    return conversion.bert_style_config(read_json(path), path, TF1_ACTIVATIONS)


# --- Entry points (registered in keras_pretrain.convert) --------------------


def hf_tokenizer(folder, lowercase=None):
    """Our `BertTokenizer` from `vocab.txt` + `tokenizer_config.json`.

    Casing: `lowercase`, else `do_lower_case` of `tokenizer_config.json`, else
    the folder's name, else a guess from the vocabulary (`keras_pretrain.casing`).
    """
    return conversion.load_tokenizer(HF_SPEC, folder, lowercase)


def convert_huggingface(folder, pretrainer=False, lowercase=None, task=False):
    from keras_pretrain.checkpoints.checks import check_hf_folder
    from keras_pretrain.checkpoints.checks import tokenizer_note

    check_hf_folder(folder, HF_SPEC, hf_checks)
    return tokenizer_note(conversion.convert_huggingface(HF_SPEC, folder, pretrainer, lowercase, task), folder,
                          HF_SPEC)


def convert_tf1(path, pretrainer=False, lowercase=None, extract_to=None, max_extract_bytes=None):
    """Original Google BERT: `bert_config.json`, `bert_model.ckpt.*`, `vocab.txt`.

    Args:
        path: the folder, a checkpoint prefix inside it (`.../model.ckpt-1000`,
            loaded exactly), or a released archive (`uncased_L-12_H-768_A-12.zip`,
            `.tar.gz`; extracted safely). In a folder with several checkpoints
            (`run_pretraining.py` output), the one its `checkpoint` state file
            names, else the highest global step, else `*-best` (see
            `keras_pretrain.checkpoints.tf1`; the choice is printed).
        pretrainer: also load the MLM and NSP heads (returns `BertPretrainer`).
        lowercase: the casing of the vocabulary; None: from Google's release
            name of the folder (`uncased_L-12_H-768_A-12`, `cased_...`,
            `chinese_...`), else guessed from the vocabulary (uncased ones
            hold no upper-case pieces; `[unused0]`, `<S>` are ignored). The
            choice is printed.
        extract_to: folder to extract an archive into (default: a temporary
            folder removed afterwards).
        max_extract_bytes: the most bytes an archive may expand to (see
            `keras_pretrain.checkpoints.archives`).
    """
    from keras_pretrain.checkpoints.tf1 import tf1_checkpoint

    path = os.fspath(path)
    with tf1_checkpoint(path, extract_to, max_extract_bytes) as (root, prefix):
        return _convert_tf1(root, prefix, pretrainer, lowercase, path)


def _convert_tf1(root, prefix, pretrainer, lowercase, path):
    from keras_pretrain.checkpoints.tf1 import OPTIMIZER_PATTERNS
    from keras_pretrain.checkpoints.tf1 import tf1_loader
    from keras_pretrain.errors import CheckpointFormatError
    from keras_pretrain.models.bert.bert_backbone import BertBackbone
    from keras_pretrain.models.bert.bert_pretrainer import BertPretrainer
    from keras_pretrain.models.bert.bert_tokenizer import BertTokenizer

    # The files beside the checkpoint, else in the folder given.
    folder = os.path.dirname(prefix)
    config_path = find_file(folder, "bert_config.json", "config.json") or find_file(
        root, "bert_config.json", "config.json"
    )
    if config_path is None:
        raise CheckpointFormatError(
            f"{folder}: no bert_config.json found (run_pretraining.py output folders do not "
            "hold it: copy the bert_config.json used for training beside the checkpoint)."
        )
    kwargs = tf1_config(config_path)
    ignore = OPTIMIZER_PATTERNS + (() if pretrainer else ("cls/*",))
    loader = tf1_loader(prefix, ignore=ignore)
    check_sizes(config_path, prefix, loader.shapes, kwargs, TF1, "bert/")
    model = conversion.build_and_load(
        BertBackbone, BertPretrainer, kwargs, loader, pretrainer, load_tf1_backbone, load_tf1_heads
    )
    loader.finish()
    vocab = find_file(folder, "vocab.txt") or find_file(root, "vocab.txt")
    tokenizer = None
    if vocab is None:
        from keras_pretrain.checkpoints.checks import no_tokenizer

        no_tokenizer(path, "vocab.txt")
    else:
        lowercase = choose_lowercase(vocab, lowercase, names=(folder, path), vocab=vocab)
        tokenizer = BertTokenizer(vocabulary=vocab, lowercase=lowercase)
    return model, tokenizer


def export_huggingface(model, folder, tokenizer=None):
    """A `BertBackbone`, `BertPretrainer`, BERT classifier or multiple-choice task -> a Hugging Face folder
    (`BertModel`, `BertForPreTraining` / `BertForMaskedLM`, `BertForSequenceClassification`,
    `BertForMultipleChoice`)."""
    return huggingface_export.export_huggingface(HF_SPEC, model, folder, tokenizer)
