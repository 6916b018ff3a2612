"""Masked-LM pretraining jobs (BERT, ALBERT, RoBERTa, DistilBERT, ERNIE): WordPiece, masked LM + NSP / SOP /
FULL-SENTENCES instances, static or dynamic masks."""

import os
import time

from keras_pretrain import families
from keras_pretrain.errors import ConfigError
from keras_pretrain.pretraining import HELD_OUT_EVERY
from keras_pretrain.pretraining import PretrainingJob
from keras_pretrain.pretraining import build_backbone
from keras_pretrain.pretraining import held_out_document
from keras_pretrain.pretraining import initial_model

SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def write_text(path, text):
    """Writes a text file atomically (an interrupted run never leaves half a vocabulary)."""
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def learn_vocabulary(paths, size, lowercase, out):
    """A WordPiece vocabulary learned from the corpus, saved as `out/vocab.txt`; returns its path."""
    import keras_hub
    import tensorflow as tf

    from keras_pretrain.data import read_documents

    lines = [s.lower() if lowercase else s for doc in read_documents(paths) for s in doc]
    if not lines:
        raise ValueError(f"no text to learn a vocabulary from in {paths}")
    vocabulary = keras_hub.tokenizers.compute_word_piece_vocabulary(
        tf.data.Dataset.from_tensor_slices(lines).batch(1000),
        size,
        lowercase=False,  # done above, with BERT's (not NFKC) lower-casing
        strip_accents=lowercase,
        split_on_cjk=True,
        reserved_tokens=SPECIAL_TOKENS,
    )
    from keras_pretrain.models.bert.bert_tokenizer import overlong_tokens

    long = set(overlong_tokens(vocabulary))
    if long:  # tensorflow-text's WordPiece tokenizer could not load them; their words become pieces or [UNK]
        print(f"vocabulary: {len(long)} token(s) over 256 UTF-8 bytes left out (unbroken words of the corpus)")
        vocabulary = [t for t in vocabulary if t not in long]
    path = os.path.join(out, "vocab.txt")
    write_text(path, "\n".join(vocabulary) + "\n")
    return path


def wordpiece_vocabulary(paths, settings):
    """The vocabulary file (learned once into `settings.out`, kept on resume), or its tokens padded with
    `[unused{i}]` up to a multiple of `settings.vocabulary_multiple` (model parallelism shards the
    embedding rows evenly, as large trainers pad their vocabularies)."""
    vocab = settings.vocab
    if vocab is None:
        vocab = os.path.join(settings.out, "vocab.txt")
        if not os.path.exists(vocab):
            started = time.time()
            print(f"learning a {settings.vocab_size}-token WordPiece vocabulary from the corpus ...", flush=True)
            learn_vocabulary(paths, settings.vocab_size, settings.lowercase, settings.out)
            print(f"vocabulary: {vocab} ({time.time() - started:.0f}s)", flush=True)
    multiple = settings.vocabulary_multiple
    if multiple <= 1:
        return vocab
    with open(vocab, encoding="utf-8") as f:
        tokens = [line.rstrip("\n") for line in f if line.rstrip("\n")]
    known, i = set(tokens), 0
    while len(tokens) % multiple:
        if f"[unused{i}]" not in known:
            tokens.append(f"[unused{i}]")
        i += 1
    return tokens


def initial_or_wordpiece(family, paths, settings):
    """`(model, tokenizer)` of the `--init` release (`initial_model`), else `(None, a WordPiece tokenizer)`
    over `wordpiece_vocabulary` (BERT-style families and XLNet's pretraining recipe)."""
    from keras_pretrain.models.bert import BertTokenizer

    if settings.init:
        return initial_model(family.name, settings)
    return None, BertTokenizer(vocabulary=wordpiece_vocabulary(paths, settings), lowercase=settings.lowercase)


def read_lexicon(path):
    """Phrases / entities for knowledge masking, one per line."""
    with open(path, encoding="utf-8") as f:
        return [line.strip() for line in f if line.strip()]


def build_job(family, paths, settings):
    """Tokenizer, static or dynamic masked-LM data (1 document in HELD_OUT_EVERY held out) and pretrainer."""
    from keras_pretrain.data import CorpusStats
    from keras_pretrain.data import pretraining_dataset

    family = families.get(family)
    initial, tokenizer = initial_or_wordpiece(family, paths, settings)
    objective = settings.objective or family.objective
    masking = settings.masking or family.masking
    stats = CorpusStats()
    masking_kwargs = {"phrases": read_lexicon(settings.lexicon)} if settings.lexicon else None
    data_kwargs = dict(objective=objective, masking=masking, seq_length=settings.seq_length,
                       max_predictions=settings.max_predictions, batch_size=settings.batch_size,
                       masking_kwargs=masking_kwargs)
    dynamic = settings.dynamic or family.dynamic
    print(f"building {objective} instances with {masking} masking "
          f"({'dynamic' if dynamic else f'{settings.dupe_factor} static copies'}); "
          f"1 document in {HELD_OUT_EVERY} held out ...", flush=True)
    train = pretraining_dataset(paths, tokenizer, dupe_factor=settings.dupe_factor, dynamic=dynamic,
                                seed=settings.seed, drop_remainder=True, stats=stats,
                                select=lambda i: not held_out_document(i), **data_kwargs)
    try:
        held_out = pretraining_dataset(paths, tokenizer, dupe_factor=1, seed=settings.seed + 1, shuffle=True,
                                       select=held_out_document, **data_kwargs)
    except ConfigError:  # fewer than HELD_OUT_EVERY documents: nothing to hold out
        print(f"note: fewer than {HELD_OUT_EVERY} documents, so none is held out; "
              "the accuracy is measured on training documents")
        held_out = pretraining_dataset(paths, tokenizer, dupe_factor=1, seed=settings.seed + 1, shuffle=True,
                                       **data_kwargs)
    if initial is None:
        model = family.pretrainer_class(build_backbone(family.name, tokenizer.vocabulary_size(), settings))
    else:
        model = initial if hasattr(initial, "backbone") else family.pretrainer_class(initial)
    return PretrainingJob(
        family=family.name, tokenizer=tokenizer, train=train,
        held_out=held_out.take(settings.eval_batches).cache(), model=model,
        metric="mlm_accuracy", objective=objective, masking=masking, stats=stats,
        vocabulary=tokenizer.get_vocabulary(),
    )
