"""Bidirectional-LM pretraining jobs (ELMo): a word vocabulary, character ids, forward + backward LMs."""

import os

from keras_pretrain import families
from keras_pretrain.pretraining import PretrainingJob
from keras_pretrain.pretraining import build_backbone
from keras_pretrain.pretraining import initial_model
from keras_pretrain.pretraining import rebuild
from keras_pretrain.pretraining.masked_lm import write_text


def build_job(family, paths, settings):
    """Word list (saved as `out/words.txt`), sentence examples and `ElmoBiLM` (sampled softmax).

    With `settings.init` (a bilm-tf release, ...) the backbone is the release's, with `settings.dropout`
    (else the family's) for training; the word softmax is new, over the corpus' word list."""
    from keras_pretrain.data.words import build_word_vocabulary
    from keras_pretrain.data.words import elmo_pretraining_dataset

    family = families.get(family)
    vocab = build_word_vocabulary(paths, max_size=settings.vocab_size, lowercase=settings.lowercase)
    if settings.out:
        write_text(os.path.join(settings.out, "words.txt"), "\n".join(vocab) + "\n")
    data = dict(seq_length=settings.seq_length, batch_size=settings.batch_size, lowercase=settings.lowercase)
    train = elmo_pretraining_dataset(paths, vocab, seed=settings.seed, **data)
    held_out = elmo_pretraining_dataset(paths, vocab, seed=settings.seed + 1, **data).take(settings.eval_batches)
    if settings.init:  # the character CNN and biLSTMs of the release; a new softmax over the corpus' words
        backbone, _ = initial_model(family.name, settings)
        backbone = rebuild(getattr(backbone, "backbone", backbone), dropout=family.dropout
                           if settings.dropout is None else settings.dropout)
    else:
        backbone = build_backbone(family.name, None, settings)
    model = family.pretrainer_class(backbone, vocabulary_size=len(vocab), num_sampled=min(256, len(vocab) - 1),
                                    seed=settings.seed)
    return PretrainingJob(family=family.name, tokenizer=None, train=train, held_out=held_out.cache(), model=model,
                          metric="forward_perplexity", objective=family.objective)
