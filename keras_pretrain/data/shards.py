"""Static pretraining data built shard by shard: bounded memory, one builder for the in-process recipe and
the Apache Beam pipeline (`keras_pretrain.data.beam`).

Each input file is a shard. A shard is read, tokenized and turned into `dupe_factor` masked copies of its
instances as the original `create_pretraining_data.py` does with its whole in-memory corpus: random "next
sentence" segments come from the same shard, and shard `i` draws from `random.Random(random_seed + i)`, so
a one-file corpus gives exactly the original script's records. Instances are serialized as soon as they
are masked; memory holds one shard's tokens and records, whatever the corpus size.
"""

import array
import dataclasses
import random

from keras_pretrain.data.corpus import CorpusStats, read_documents
from keras_pretrain.data.instances import OBJECTIVES, TrainingInstance
from keras_pretrain.data.masking import DEFAULT_SPECIAL_TOKENS, MASKINGS, get_masking
from keras_pretrain.errors import ConfigError

# TensorFlow (tokenizer, tf.data helpers) is imported by the builder itself, not by this module: a Beam
# launcher that only builds the pipeline starts without it.

# The counts of a shard; the recipe and the Beam pipeline report these (Beam as counters).
COUNTERS = ("instances", "random_next", "masked_positions") + CorpusStats.COUNTS


@dataclasses.dataclass(frozen=True)
class StaticDataSettings:
    """What `create_pretraining_data` builds (its command-line flags); picklable, for Beam workers."""

    vocab_file: str
    lowercase: bool = True
    objective: str = "nsp"
    masking: str = "token"
    max_seq_length: int = 128
    max_predictions_per_seq: int = 20
    masked_lm_prob: float = 0.15
    dupe_factor: int = 10
    short_seq_prob: float = 0.1
    random_seed: int = 12345
    ngram: int = 3
    segmenter: str = "none"
    phrases_file: str = None
    entities_file: str = None
    sentence_split: bool = False
    strict: bool = False
    max_line_chars: int = 10000

    def __post_init__(self):
        if self.objective not in OBJECTIVES:
            raise ConfigError(f"Unknown objective {self.objective!r}; expected one of {OBJECTIVES}.")
        if self.masking not in MASKINGS:
            raise ConfigError(f"Unknown masking {self.masking!r}; expected one of {tuple(MASKINGS)}.")


class RecordBuffer:
    """Serialized records back to back in one buffer, read in a given order: a shard's records cost their
    bytes (no object per record), and the buffer goes back to the system as one block."""

    def __init__(self):
        self.data = bytearray()
        self.ends = array.array("q")
        self.order = None

    def append(self, record):
        """Store a record; returns its index."""
        self.data += record
        self.ends.append(len(self.data))
        return len(self.ends) - 1

    def _record(self, index):
        return bytes(self.data[self.ends[index - 1] if index else 0:self.ends[index]])

    def __len__(self):
        return len(self.ends)

    def __getitem__(self, i):
        order = self.order if self.order is not None else range(len(self.ends))
        if isinstance(i, slice):
            return [self._record(j) for j in order[i]]
        return self._record(order[i])

    def __iter__(self):
        for j in (self.order if self.order is not None else range(len(self.ends))):
            yield self._record(j)


@dataclasses.dataclass
class ShardResult:
    """One shard's serialized records (a `RecordBuffer`, in the order to write them) and its counts."""

    index: int
    path: str
    records: list
    stats: CorpusStats
    instances: int = 0
    random_next: int = 0
    masked_positions: int = 0

    def counts(self):
        """Every count of `COUNTERS` as a dict."""
        out = {name: getattr(self, name) for name in ("instances", "random_next", "masked_positions")}
        out.update({name: getattr(self.stats, name) for name in CorpusStats.COUNTS})
        return out


def build_masking(settings, vocabulary, tokenize):
    """The masking strategy of `settings` (jieba and the knowledge lexicons read here)."""
    kwargs = dict(rate=settings.masked_lm_prob, max_predictions=settings.max_predictions_per_seq,
                  vocabulary=vocabulary, special_tokens=DEFAULT_SPECIAL_TOKENS)
    segmenter = None
    if settings.segmenter == "jieba":
        import jieba

        segmenter = jieba.lcut
    if settings.masking == "whole_word":
        kwargs["segmenter"] = segmenter
    elif settings.masking == "ngram":
        kwargs.update(segmenter=segmenter, max_n=settings.ngram)
    elif settings.masking == "knowledge":
        def lexicon(path):
            if not path:
                return []
            with open(path, encoding="utf-8") as f:
                return [line.strip() for line in f if line.strip()]

        kwargs.update(segmenter=segmenter, phrases=lexicon(settings.phrases_file),
                      entities=lexicon(settings.entities_file), tokenize=tokenize)
    return get_masking(settings.masking, **kwargs)


class ShardBuilder:
    """Builds the records of one shard at a time (tokenizer and masking made once).

    Args:
        settings: `StaticDataSettings`.
        make_tokenizer: builds the WordPiece tokenizer, called here as
            `make_tokenizer(vocabulary=settings.vocab_file, lowercase=settings.lowercase)`; the original
            script's ids are `keras_pretrain.models.bert.BertTokenizer`'s (the recipe passes
            `recipes.common.wordpiece_tokenizer`, which Beam sends to its workers by name).

    Example:
    >>> builder = ShardBuilder(StaticDataSettings("vocab.txt", dupe_factor=5), BertTokenizer)
    >>> result = builder.build(0, "corpus/part-000.txt")
    >>> len(result.records), result.stats.documents
    """

    def __init__(self, settings, make_tokenizer):
        from keras_pretrain.data.pipeline import tokenizer_vocabulary
        from keras_pretrain.data.tfrecords import InstanceSerializer

        self.settings = settings
        self.tokenizer = make_tokenizer(vocabulary=settings.vocab_file, lowercase=settings.lowercase)
        self.vocabulary = tokenizer_vocabulary(self.tokenizer)
        missing = [t for t in ("[CLS]", "[SEP]", "[MASK]") if t not in self.vocabulary]
        if missing:
            raise ConfigError(f"{settings.vocab_file} lacks the special tokens {missing}")
        vocabulary = self.vocabulary
        self.masking = build_masking(settings, vocabulary,
                                     lambda text: [vocabulary[i] for i in self.tokenizer.tokenize(text)])
        self.serialize = InstanceSerializer(
            {t: i for i, t in enumerate(vocabulary)}, settings.max_seq_length, settings.max_predictions_per_seq)

    def build(self, index, path, opener=None):
        """The shuffled, serialized records of shard `index` (the file `path`) and its counts.

        Args:
            index: int, the shard's number in the corpus (seeds it: `random_seed + index`).
            path: str, the shard's file.
            opener: optional callable path -> binary file object (Beam's `FileSystems.open`).

        Returns:
            A `ShardResult`.

        Raises:
            CorpusFormatError: with `strict`, on the shard's first bad line, empty document or an empty shard.
        """
        from keras_pretrain.data.pipeline import create_training_instances, tokenize_documents

        s = self.settings
        stats = CorpusStats()
        documents = tokenize_documents(
            read_documents([path], strict=s.strict, sentence_split=s.sentence_split,
                           max_line_chars=s.max_line_chars, stats=stats, opener=opener),
            self.tokenizer,
        )
        result = ShardResult(index, path, RecordBuffer(), stats)

        def count_and_store(instance):
            result.instances += 1
            result.random_next += instance.is_random_next
            result.masked_positions += len(instance.masked_lm_positions)
            return result.records.append(self.serialize(instance))

        # Shuffling the record indices draws as shuffling the instances themselves (the original).
        result.records.order = create_training_instances(
            documents, s.objective, self.masking, s.max_seq_length, s.dupe_factor, s.short_seq_prob,
            random.Random(s.random_seed + index), each=count_and_store,
        )
        return result


def describe_record(record, vocabulary):
    """The original script's readable form of one serialized record (`TrainingInstance.__str__`)."""
    import tensorflow as tf

    feature = tf.train.Example.FromString(record).features.feature

    def ints(name):
        return list(feature[name].int64_list.value)

    n = sum(ints("input_mask"))
    k = int(sum(feature["masked_lm_weights"].float_list.value))
    return str(TrainingInstance(
        tokens=[vocabulary[i] for i in ints("input_ids")[:n]],
        segment_ids=ints("segment_ids")[:n],
        is_random_next=bool(ints("next_sentence_labels")[0]),
        masked_lm_positions=ints("masked_lm_positions")[:k],
        masked_lm_labels=[vocabulary[i] for i in ints("masked_lm_ids")[:k]],
    ))
