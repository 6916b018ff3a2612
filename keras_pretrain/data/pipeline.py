"""From corpus files to a batched `tf.data.Dataset` of pretraining features, for `model.fit`.

The pieces (`read_documents`, instance builders, masking strategies, features, `DynamicMasking`) can be used
on their own; this module strings them together as the original script does: documents shuffled, instances
built `dupe_factor` times, each copy masked differently (static) or masked anew each epoch (dynamic).
"""

import random

import tensorflow as tf

from keras_pretrain.data.corpus import CorpusStats, expand_paths, read_documents
from keras_pretrain.data.dynamic import DynamicMasking
from keras_pretrain.data.features import instances_to_arrays
from keras_pretrain.data.instances import OBJECTIVES, iter_instances
from keras_pretrain.data.masking import MASKINGS, MaskingStrategy, TokenMasking, get_masking, shuffle
from keras_pretrain.errors import ConfigError


def tokenizer_vocabulary(tokenizer):
    """The token list (index = id) of a keras-hub tokenizer, or None for a plain callable."""
    if hasattr(tokenizer, "get_vocabulary"):
        return list(tokenizer.get_vocabulary())
    return None


def tokenize_documents(documents, tokenizer, batch_sentences=2048):
    """Tokenize documents into token strings, batching sentences through the tokenizer.

    Args:
        documents: iterable of documents (lists of sentence strings).
        tokenizer: a keras-hub tokenizer (`tokenize` giving ids, `get_vocabulary`), or a callable
            str -> list of token strings.
        batch_sentences: int, sentences per tokenizer call.

    Returns:
        A list of documents, each a list of sentences (lists of token strings); empty sentences dropped.
    """
    vocabulary = tokenizer_vocabulary(tokenizer) if hasattr(tokenizer, "tokenize") else None
    out = []
    pending_docs, pending_sentences = [], []

    def flush():
        if not pending_sentences:
            return
        if vocabulary is None:
            tokenized = [list(tokenizer(s)) for s in pending_sentences]
        else:
            ids = tokenizer.tokenize(tf.constant(pending_sentences))
            # keras-hub returns Python lists in eager mode, a RaggedTensor in graph mode.
            if isinstance(ids, tf.RaggedTensor):
                ids = ids.to_list()
            elif not isinstance(ids, list) or (ids and not isinstance(ids[0], list)):
                raise ConfigError(
                    "The tokenizer must return ragged ids (build it without `sequence_length`)."
                )
            tokenized = [list(map(vocabulary.__getitem__, row)) for row in ids]
        k = 0
        for count in pending_docs:
            doc = [s for s in tokenized[k:k + count] if s]
            k += count
            if doc:
                out.append(doc)
        pending_docs.clear()
        pending_sentences.clear()

    for document in documents:
        pending_docs.append(len(document))
        pending_sentences.extend(document)
        if len(pending_sentences) >= batch_sentences:
            flush()
    flush()
    return out


def create_training_instances(
    documents,
    objective="nsp",
    masking=None,
    max_seq_length=128,
    dupe_factor=1,
    short_seq_prob=0.1,
    rng=None,
    each=None,
    **kwargs,
):
    """The original `create_training_instances`: shuffle documents, build `dupe_factor` rounds, mask, shuffle.

    Args:
        documents: tokenized documents (lists of sentences of token strings).
        objective: str, one of "nsp", "sop", "full_sentences", "doc_sentences".
        masking: a `MaskingStrategy`, or None to leave the instances unmasked (dynamic masking).
        max_seq_length: int.
        dupe_factor: int, rounds over the corpus; each round builds (NSP/SOP pairs) and masks anew.
        short_seq_prob: float.
        rng: `random.Random`.
        each: optional callable applied to each (masked) instance as soon as it is built, whose results
            are kept instead (e.g. serialized records: less memory); the random draws do not change.
        **kwargs: special tokens for the builders (`cls_token`, `sep_token`, `doc_separator`).

    Returns:
        A list of `TrainingInstance`s (or of `each`'s results) in random order.
    """
    rng = rng or random.Random(12345)
    documents = [d for d in documents if d]
    shuffle(rng, documents)
    instances = []
    for _ in range(dupe_factor):
        for instance in iter_instances(documents, objective, max_seq_length, rng, short_seq_prob, **kwargs):
            if masking is not None:
                instance = masking.mask_instance(instance, rng)
            instances.append(each(instance) if each is not None else instance)
    shuffle(rng, instances)
    return instances


def _special_tokens(tokenizer):
    def get(name, default):
        value = getattr(tokenizer, name, None)
        return value if isinstance(value, str) else default

    return {
        "cls": get("cls_token", "[CLS]"),
        "sep": get("sep_token", "[SEP]"),
        "pad": get("pad_token", "[PAD]"),
        "mask": get("mask_token", "[MASK]"),
        "unk": get("unk_token", getattr(tokenizer, "oov_token", None) or "[UNK]"),
    }


def _build_masking(masking, vocabulary, special, masked_lm_prob, max_predictions, masking_kwargs):
    if isinstance(masking, MaskingStrategy):
        return masking
    if masking not in MASKINGS:
        raise ConfigError(f"Unknown masking {masking!r}; expected one of {tuple(MASKINGS)}.")
    kwargs = dict(
        rate=masked_lm_prob,
        max_predictions=max_predictions,
        vocabulary=vocabulary,
        mask_token=special["mask"],
        special_tokens=tuple(special.values()),
    )
    kwargs.update(masking_kwargs or {})
    return get_masking(masking, **kwargs)


def pretraining_dataset(
    paths,
    tokenizer,
    objective="nsp",
    masking="token",
    seq_length=128,
    max_predictions=20,
    batch_size=32,
    dupe_factor=1,
    seed=0,
    dynamic=False,
    masked_lm_prob=0.15,
    short_seq_prob=0.1,
    shuffle=True,
    drop_remainder=False,
    sentence_split=False,
    strict=False,
    masking_kwargs=None,
    stats=None,
    select=None,
    data_service=None,
    cycle_length=8,
    shuffle_buffer=10000,
):
    """A batched `tf.data.Dataset` of pretraining features from corpus files, or from the TFRecord shards of
    `recipes.create_pretraining_data` (files named `*.tfrecord`, `*.tfrecords` or `*.tfr`).

    TFRecord shards are streamed (`tf.data` interleave over `cycle_length` files, a `shuffle_buffer`
    window): static, the records as written; `dynamic=True`, each record's masked tokens are put back and
    it is masked anew in the graph every epoch (token masking). The whole pipeline is TensorFlow ops, so
    it can run on a tf.data service (`data_service="grpc://dispatcher:5050"`).

    Args:
        paths: corpus files, folders or globs (one sentence per line, blank line between documents).
        tokenizer: a keras-hub tokenizer (e.g. `keras_hub.tokenizers.WordPieceTokenizer`) or a callable
            str -> list of token strings together with `masking_kwargs["vocabulary"]`.
        objective: "nsp", "sop", "full_sentences" or "doc_sentences".
        masking: "token", "whole_word", "ngram", "knowledge", or a `MaskingStrategy`.
        seq_length: int, max_seq_length.
        max_predictions: int, max_predictions_per_seq.
        batch_size: int.
        dupe_factor: int, static copies (static masking only; dynamic masks anew every epoch).
        seed: int, seeds everything (instances, masks, shuffling).
        dynamic: bool, mask inside the tf.data graph, a new mask every epoch (vectorized for "token";
            other strategies re-mask in Python each epoch).
        masked_lm_prob: float.
        short_seq_prob: float.
        shuffle: bool, reshuffle the instances every epoch (deterministic for `seed`).
        drop_remainder: bool.
        sentence_split: bool, split plain-text lines into sentences.
        strict: bool, raise on bad corpus input instead of skipping it.
        masking_kwargs: dict, extra arguments of the masking strategy (e.g. `segmenter`, `phrases`).
        stats: optional `CorpusStats` filled while reading.
        select: optional callable `index -> bool` keeping the documents (numbered in reading order, from
            0) it accepts, e.g. `lambda i: i % 25 != 0` for training and `lambda i: i % 25 == 0` for a
            held-out set of whole documents.
        data_service: optional tf.data service dispatcher address (TFRecord shards only): the batches are
            produced by its workers (`tf.data.experimental.service.distribute`, "parallel_epochs").
        cycle_length: int, TFRecord shards read at once.
        shuffle_buffer: int, records shuffled in a window of this size (TFRecord shards).

    Returns:
        A `tf.data.Dataset` of dicts: `input_ids`, `input_mask`, `segment_ids`, `masked_lm_positions`,
        `masked_lm_ids`, `next_sentence_labels` (int32) and `masked_lm_weights` (float32), batched.
    """
    if objective not in OBJECTIVES:
        raise ConfigError(f"Unknown objective {objective!r}; expected one of {OBJECTIVES}.")
    files = expand_paths(paths)
    if files and all(f.endswith(RECORD_SUFFIXES) for f in files):
        return _records_dataset(files, tokenizer, masking, seq_length, max_predictions, batch_size, seed,
                                dynamic, masked_lm_prob, shuffle, drop_remainder, data_service, cycle_length,
                                shuffle_buffer)
    if data_service:
        raise ConfigError("data_service needs TFRecord shards (written by recipes.create_pretraining_data): "
                          "reading text runs Python, which tf.data service workers cannot.")
    rng = random.Random(seed)
    vocabulary = tokenizer_vocabulary(tokenizer) or (masking_kwargs or {}).get("vocabulary")
    if vocabulary is None:
        raise ConfigError("A vocabulary is needed: use a keras-hub tokenizer or pass one in masking_kwargs.")
    special = _special_tokens(tokenizer)
    builder_kwargs = {"cls_token": special["cls"], "sep_token": special["sep"]}
    if objective == "full_sentences":
        builder_kwargs["doc_separator"] = special["sep"]
    stats = stats if stats is not None else CorpusStats()
    documents = read_documents(paths, strict=strict, sentence_split=sentence_split, stats=stats)
    if select is not None:
        documents = (d for i, d in enumerate(documents) if select(i))
    documents = tokenize_documents(documents, tokenizer)
    if not documents:
        raise ConfigError(f"No document in {paths!r} ({stats}).")
    strategy = _build_masking(masking, vocabulary, special, masked_lm_prob, max_predictions, masking_kwargs)
    token_to_id = {t: i for i, t in enumerate(vocabulary)}

    if not dynamic:
        instances = create_training_instances(
            documents, objective, strategy, seq_length, dupe_factor, short_seq_prob, rng, **builder_kwargs
        )
        dataset = tf.data.Dataset.from_tensor_slices(
            instances_to_arrays(instances, token_to_id, seq_length, max_predictions)
        )
        return _finish(dataset, len(instances), batch_size, shuffle, seed, drop_remainder)

    instances = create_training_instances(
        documents, objective, None, seq_length, 1, short_seq_prob, rng, **builder_kwargs
    )
    if type(strategy) is TokenMasking:
        arrays = instances_to_arrays(instances, token_to_id, seq_length, max_predictions)
        for name in ("masked_lm_positions", "masked_lm_ids", "masked_lm_weights"):
            arrays.pop(name)
        dataset = _finish(
            tf.data.Dataset.from_tensor_slices(arrays), len(instances), batch_size, shuffle, seed,
            drop_remainder,
        )
        dynamic_masking = DynamicMasking(
            len(vocabulary),
            mask_token_id=token_to_id[special["mask"]],
            special_token_ids=[token_to_id[t] for t in special.values() if t in token_to_id],
            rate=strategy.rate,
            max_predictions=max_predictions,
            mask_token_rate=strategy.mask_token_rate,
            random_token_rate=strategy.random_token_rate,
        )
        return dynamic_masking.apply(dataset, seed=seed)
    return _python_dynamic(instances, strategy, token_to_id, seq_length, max_predictions, batch_size,
                           shuffle, seed, drop_remainder)


RECORD_SUFFIXES = (".tfrecord", ".tfrecords", ".tfr")


def restore_masked(features):
    """The input ids before masking: each masked position given back its `masked_lm_ids` label."""
    ids = features["input_ids"]
    used = features["masked_lm_weights"] > 0
    rows = tf.broadcast_to(tf.range(tf.shape(ids)[0])[:, None], tf.shape(features["masked_lm_positions"]))
    indices = tf.boolean_mask(tf.stack([rows, features["masked_lm_positions"]], axis=-1), used)
    return tf.tensor_scatter_nd_update(ids, indices, tf.boolean_mask(features["masked_lm_ids"], used))


def _records_dataset(files, tokenizer, masking, seq_length, max_predictions, batch_size, seed, dynamic,
                     masked_lm_prob, shuffle, drop_remainder, data_service, cycle_length, shuffle_buffer):
    from keras_pretrain.data.tfrecords import parse_examples

    dataset = tf.data.Dataset.from_tensor_slices(files)
    if shuffle:
        dataset = dataset.shuffle(len(files), seed=seed, reshuffle_each_iteration=True)
    dataset = dataset.interleave(tf.data.TFRecordDataset, cycle_length=min(len(files), cycle_length),
                                 num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    if shuffle:
        dataset = dataset.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
    dataset = dataset.batch(batch_size, drop_remainder=drop_remainder).map(
        lambda serialized: parse_examples(serialized, seq_length, max_predictions),
        num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    if dynamic:
        if not (masking == "token" or type(masking) is TokenMasking):
            raise ConfigError(f"Dynamic masking of TFRecord shards is token masking, not {masking!r}: write "
                              f"static copies of it with recipes.create_pretraining_data --masking {masking}.")
        vocabulary = tokenizer_vocabulary(tokenizer)
        token_to_id = {t: i for i, t in enumerate(vocabulary)}
        special = _special_tokens(tokenizer)
        rates = (masking.mask_token_rate, masking.random_token_rate) if isinstance(masking, TokenMasking) \
            else (0.8, 0.1)
        dynamic_masking = DynamicMasking(
            len(vocabulary), mask_token_id=token_to_id[special["mask"]],
            special_token_ids=[token_to_id[t] for t in special.values() if t in token_to_id],
            rate=masked_lm_prob if not isinstance(masking, TokenMasking) else masking.rate,
            max_predictions=max_predictions, mask_token_rate=rates[0], random_token_rate=rates[1],
        )
        dataset = dataset.map(lambda f: {**f, "input_ids": restore_masked(f)},
                              num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
        dataset = dynamic_masking.apply(dataset, seed=seed)
    if data_service:
        dataset = dataset.apply(tf.data.experimental.service.distribute(
            processing_mode="parallel_epochs", service=data_service))
    return dataset.prefetch(tf.data.AUTOTUNE)


def _finish(dataset, size, batch_size, shuffle, seed, drop_remainder):
    if shuffle:
        dataset = dataset.shuffle(max(size, 1), seed=seed, reshuffle_each_iteration=True)
    return dataset.batch(batch_size, drop_remainder=drop_remainder).prefetch(tf.data.AUTOTUNE)


def _python_dynamic(instances, strategy, token_to_id, seq_length, max_predictions, batch_size, shuffle,
                    seed, drop_remainder):
    # Strategies that need token strings (whole words, n-grams, knowledge units) re-mask in Python:
    # epoch e uses random.Random((seed, e)), so the masks are new every epoch and the same every run.
    epoch = [0]

    def generate():
        rng = random.Random(f"{seed}-{epoch[0]}")
        epoch[0] += 1
        order = list(range(len(instances)))
        if shuffle:
            rng.shuffle(order)
        for start in range(0, len(order), batch_size):
            chunk = [strategy.mask_instance(instances[i], rng) for i in order[start:start + batch_size]]
            if drop_remainder and len(chunk) < batch_size:
                return
            yield instances_to_arrays(chunk, token_to_id, seq_length, max_predictions)

    spec = {
        name: tf.TensorSpec([None, width], dtype)
        for name, width, dtype in (
            ("input_ids", seq_length, tf.int32),
            ("input_mask", seq_length, tf.int32),
            ("segment_ids", seq_length, tf.int32),
            ("masked_lm_positions", max_predictions, tf.int32),
            ("masked_lm_ids", max_predictions, tf.int32),
            ("masked_lm_weights", max_predictions, tf.float32),
        )
    }
    spec["next_sentence_labels"] = tf.TensorSpec([None], tf.int32)
    return tf.data.Dataset.from_generator(generate, output_signature=spec)

