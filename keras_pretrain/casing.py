"""Which casing (`do_lower_case`) a checkpoint's tokenizer uses, and why.

A wrong casing gives wrong ids silently (an uncased vocabulary read as cased
turns "Hello" into [UNK]), so the loaders decide it in this order and print
the decision and its reason:

1. the caller's `lowercase=` (recipes: `--lowercase` / `--no-lowercase`);
2. what the source states: `do_lower_case` in a Hugging Face
   `tokenizer_config.json`, or a pretraining run's configuration;
3. the release name of the archive or folder: Google's `uncased_*`,
   `cased_*` / `multi_cased_*`, `chinese_*`, `multilingual_*` (uncased),
   ALBERT `*_zh` (uncased);
4. a guess from the vocabulary: uncased when no entry has an upper-case
   letter, ignoring bracketed / angle-bracketed specials (`[CLS]`,
   `[unused0]`, `<S>`, `<T>`, `<unk>`), which Google's uncased and Chinese
   vocabularies hold;
5. the family's published default.
"""

import os
import re
import sys

SPECIAL = re.compile(r"^(\[[^\]]*\]|<[^>]*>)$")
# Google's release names (bert/tokenization.py `validate_case_matches_checkpoint`, ALBERT archives).
UNCASED_NAME = re.compile(r"(^|[^a-z])(uncased|chinese|multilingual)([^a-z]|$)|_zh([^a-z]|$)", re.I)
CASED_NAME = re.compile(r"(^|[^a-z])cased([^a-z]|$)", re.I)


def report(what, lowercase, reason):
    """Prints the chosen casing (stderr; stdout stays for results)."""
    print(
        f"keras_pretrain: {what}: {'uncased (lower-cased)' if lowercase else 'cased'}: {reason}",
        file=sys.stderr,
    )


def lowercase_from_names(*paths):
    """(lowercase, name) from Google's release name that ends one of `paths`, else (None, None).

    Only the last part of each path is read (the checkpoint folder or the
    archive), not the folders above it.
    """
    for path in paths:
        name = os.path.basename(os.path.normpath(os.fspath(path))) if path else ""
        if UNCASED_NAME.search(name):
            return True, name
        if CASED_NAME.search(name):
            return False, name
    return None, None


def vocabulary_has_upper_case(vocab_path):
    """The first entry (not a bracketed special) with an upper-case letter, else None."""
    with open(vocab_path, encoding="utf-8") as f:
        for line in f:
            token = line.strip()
            if SPECIAL.match(token):
                continue
            if token != token.lower():
                return token
    return None


def guess_lowercase(vocab_path):
    """Uncased vocabularies hold no upper-case pieces (specials ignored)."""
    return vocabulary_has_upper_case(vocab_path) is None


def choose_lowercase(
    what, lowercase=None, stated=None, stated_by=None, names=(), vocab=None, default=True,
    default_reason="the published default of the family",
):
    """The casing to use for `what` (e.g. the vocabulary's path), printed with its reason.

    Args:
        what: what the message names (the vocabulary or model file).
        lowercase: the caller's override, or None.
        stated: `do_lower_case` as the source states it, or None.
        stated_by: where it is stated (e.g. the `tokenizer_config.json` path).
        names: paths whose release names may tell the casing.
        vocab: a WordPiece `vocab.txt` to guess from, or None.
        default: the family's published default when nothing else tells.
        default_reason: what the message says of that default.
    """
    if lowercase is not None:
        reason = "lowercase= given by the caller"
    elif stated is not None:
        lowercase, reason = bool(stated), f"do_lower_case={bool(stated)} in {stated_by}"
    else:
        lowercase, name = lowercase_from_names(*names)
        if lowercase is not None:
            reason = f"the release name {name!r}"
        elif vocab is not None:
            upper = vocabulary_has_upper_case(vocab)
            lowercase = upper is None
            reason = (
                "guessed: the vocabulary has no upper-case entry (specials ignored)"
                if lowercase
                else f"guessed: the vocabulary has upper-case entries such as {upper!r}"
            )
        else:
            lowercase, reason = default, default_reason
        reason += "; override with lowercase= (recipes: --lowercase / --no-lowercase)"
    report(what, lowercase, reason)
    return bool(lowercase)


def with_lowercase(tokenizer, lowercase):
    """`tokenizer` with its casing replaced (the same vocabulary); None keeps it."""
    if lowercase is None or tokenizer is None:
        return tokenizer
    if getattr(tokenizer, "bert_lowercase", None) is not None:  # BertTokenizer
        current = tokenizer.bert_lowercase
    else:
        current = getattr(tokenizer, "lowercase", None)
    if current is None:
        from keras_pretrain.errors import ConfigError

        raise ConfigError(
            f"{type(tokenizer).__name__} has no casing option: --lowercase / --no-lowercase "
            "apply to WordPiece and SentencePiece tokenizers only."
        )
    if bool(current) == bool(lowercase):
        return tokenizer
    config = tokenizer.get_config()
    config["lowercase"] = bool(lowercase)
    if "strip_accents" in config:
        config["strip_accents"] = None  # follows the casing, as the original
    if hasattr(tokenizer, "proto"):
        config["proto"] = tokenizer.proto
    else:
        config["vocabulary"] = tokenizer.get_vocabulary()
    report(type(tokenizer).__name__, lowercase, "lowercase= given by the caller")
    return type(tokenizer).from_config(config)
