"""GLUE examples -> the fine-tuning features of the authors' scripts, and their TFRecord files.

Record for record equal to:

- `"bert"` style: bert's `run_classifier.py` `file_based_convert_examples_to_features` (WordPiece ids)
  and albert's `classifier_utils.py` one (SentencePiece ids): `[CLS] A [SEP] (B [SEP])`, segment ids
  0 / 1, `input_mask` 1 for real tokens, zeros padded on the right; int64 features;
- `"xlnet"` style: xlnet's `classifier_utils.convert_single_example` with its `run_classifier.py`
  writer: `A <sep> (B <sep>) <cls>`, segment ids 0 / 1 / 2 (`SEG_ID_A`, `SEG_ID_B`, `SEG_ID_CLS`),
  padded on the LEFT with id 0 and segment id 4 (`SEG_ID_PAD`); `input_mask` is a float feature with
  0 for real tokens and 1 for padding.

Feature names: `input_ids`, `input_mask`, `segment_ids`, `label_ids`, `is_real_example` (always 1).
`label_ids` is the index in the task's label list (int64), or the score as a float for a regression
task (STS-B), as ALBERT and XLNet write it (BERT's script has no STS-B).

A pair becomes one sequence exactly as theirs: `text_b` counts only when it is non-empty AND tokenizes
to at least one id (otherwise the single-text layout, without the second separator). Layout and
truncation are `keras_pretrain.data.packing`'s (`BERT`, `XLNET`, `pack_lists`): for two segments its
round-robin trimming keeps exactly the tokens of the authors' `_truncate_seq_pair` (drop the last token
of the longer segment, of `text_b` on a tie). Both keep a segment that fits in half the budget whole and
give the other the rest, and split the budget evenly otherwise, `text_a` taking the odd token
(tests/tasks/classification/test_glue.py checks every pair of lengths up to 30). A single text keeps its first
`max_seq_length - 2` ids, as theirs. The padding (XLNet's pad segment id 4 and its
inverted, float mask) is the scripts'.
"""

import collections

from keras_pretrain.data import packing
from keras_pretrain.tasks.classification.glue import get_task
from keras_pretrain.errors import CorpusFormatError

STYLES = ("bert", "xlnet")
FEATURE_NAMES = ("input_ids", "input_mask", "segment_ids", "label_ids", "is_real_example")
XLNET_PAD_SEGMENT = 4  # xlnet classifier_utils `SEG_ID_PAD` (its `SEG_ID_CLS` = 2 is `packing.XLNET`'s)
_PACKINGS = {"bert": packing.BERT, "xlnet": packing.XLNET}


def _label_id(task, example):
    if task.is_regression:
        return float(example.label)
    try:
        return task.labels.index(example.label)
    except ValueError:
        raise ValueError(f"Example {example.guid!r}: label {example.label!r} is not one of the {task.name} "
                         f"labels {list(task.labels)}.") from None


def convert_example(example, task, max_seq_length, tokenize, style="bert", special=None):
    """The features of one example (see `convert_examples_to_features`), an ordered dict of lists."""
    task = get_task(task)
    if style not in STYLES:
        raise ValueError(f"style={style!r}: expected one of {STYLES}.")
    special = dict(special or {})
    if "cls" not in special or "sep" not in special:
        raise ValueError(f"special={special!r}: the `cls` and `sep` ids are needed.")
    pad = special.get("pad", 0)
    tokens_a = [int(i) for i in tokenize(example.text_a)]
    tokens_b = [int(i) for i in tokenize(example.text_b)] if example.text_b else []
    segments = [tokens_a, tokens_b] if tokens_b else [tokens_a]
    ids, types = _PACKINGS[style].pack_lists(segments, special["cls"], special["sep"], max_seq_length)
    padding = max_seq_length - len(ids)
    if padding < 0:
        raise ValueError(f"max_seq_length={max_seq_length} cannot hold the {len(ids)} special tokens.")
    features = collections.OrderedDict()
    if style == "bert":
        features["input_ids"] = ids + [pad] * padding
        features["input_mask"] = [1] * len(ids) + [0] * padding
        features["segment_ids"] = types + [0] * padding
    else:
        features["input_ids"] = [pad] * padding + ids
        features["input_mask"] = [1.0] * padding + [0.0] * len(ids)
        features["segment_ids"] = [XLNET_PAD_SEGMENT] * padding + types
    features["label_ids"] = [_label_id(task, example)]
    features["is_real_example"] = [1]
    return features


def convert_examples_to_features(examples, task, max_seq_length, tokenize, style="bert", special=None):
    """The authors' fine-tuning features of GLUE examples, in order.

    Args:
        examples: iterable of `keras_pretrain.tasks.classification.glue.Example`.
        task: a `GlueTask` or task name (its labels give `label_ids`; a regression task writes floats).
        max_seq_length: int, the padded length.
        tokenize: callable `text -> list of ids` (the model's tokenizer, its text preprocessing included:
            the readers return raw text).
        style: "bert" (BERT, ALBERT, ...) or "xlnet".
        special: dict with the `cls` and `sep` ids, and `pad` (default 0: both scripts pad `input_ids`
            with 0, which for XLNet is `<unk>`, not `<pad>`). XLNet's script uses `<cls>`=3, `<sep>`=4.

    Returns:
        A list of ordered dicts feature name -> list (`FEATURE_NAMES`; `label_ids` and
        `is_real_example` lists of one value, as in the files). Float features hold Python floats.

    Example:
    ```python
    tokenizer = keras_pretrain.models.bert.BertTokenizer("vocab.txt", lowercase=True)
    features = convert_examples_to_features(
        read_split("mrpc", "glue_data/MRPC", "train"), "mrpc", 128,
        lambda text: [int(i) for i in tokenizer(text)], "bert",
        {"cls": tokenizer.cls_token_id, "sep": tokenizer.sep_token_id})
    write_features(features, "mrpc_train.tfrecord")
    dataset = feature_dataset("mrpc_train.tfrecord", 128).batch(32)
    ```
    """
    return [convert_example(e, task, max_seq_length, tokenize, style, special) for e in examples]


def _feature(tf, values):
    values = list(values)
    if values and isinstance(values[0], float):
        return tf.train.Feature(float_list=tf.train.FloatList(value=values))
    return tf.train.Feature(int64_list=tf.train.Int64List(value=values))


def write_features(features, path):
    """Writes features as the authors' TFRecord file: one `tf.train.Example` per record, float lists as
    FloatList (XLNet's `input_mask`, regression `label_ids`), the rest as Int64List. Returns the number
    of records.

    The records are serialized deterministically (features sorted by name), so the same features give
    the same bytes on every run; the originals' `SerializeToString()` writes the feature map in an order
    that changes from process to process (the protobuf runtime's hashing), so their files equal ours as
    parsed `tf.train.Example`s (and byte for byte once re-serialized deterministically).
    """
    import tensorflow as tf

    count = 0
    with tf.io.TFRecordWriter(path) as writer:
        for record in features:
            feature = collections.OrderedDict((name, _feature(tf, values)) for name, values in record.items())
            example = tf.train.Example(features=tf.train.Features(feature=feature))
            writer.write(example.SerializeToString(deterministic=True))
            count += 1
    return count


def feature_spec(max_seq_length, style="bert", is_regression=False):
    """The `tf.io.parse_example` spec of the authors' `file_based_input_fn_builder`."""
    import tensorflow as tf

    mask = tf.float32 if style == "xlnet" else tf.int64
    return {
        "input_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "input_mask": tf.io.FixedLenFeature([max_seq_length], mask),
        "segment_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "label_ids": tf.io.FixedLenFeature([], tf.float32 if is_regression else tf.int64),
        "is_real_example": tf.io.FixedLenFeature([], tf.int64),
    }


def feature_dataset(path, max_seq_length, style="bert", is_regression=False):
    """A `tf.data.Dataset` of the parsed records of `write_features` files (or the authors').

    Args:
        path: str or list of str, TFRecord file(s).
        max_seq_length: int, as written.
        style: "bert" or "xlnet" (XLNet's `input_mask` is float).
        is_regression: bool, `label_ids` is a float.

    Returns:
        A dataset of dicts, one per record: int64 features cast to int32 (as the originals' input
        function), float features float32; `label_ids` and `is_real_example` are scalars.
    """
    import tensorflow as tf

    paths = [path] if isinstance(path, str) else list(path)
    for p in paths:
        if not tf.io.gfile.exists(p):
            raise CorpusFormatError(f"{p}: no such TFRecord file.")
    spec = feature_spec(max_seq_length, style, is_regression)

    def parse(record):
        parsed = tf.io.parse_single_example(record, spec)
        return {name: tf.cast(v, tf.int32) if v.dtype == tf.int64 else v for name, v in parsed.items()}

    return tf.data.TFRecordDataset(paths).map(parse)


def to_arrays(features):
    """Stacks features into NumPy arrays: int32 (float32 for float features), `label_ids` and
    `is_real_example` of shape (N,), the sequence features (N, max_seq_length)."""
    import numpy as np

    features = list(features)
    if not features:
        return {}
    arrays = {}
    for name in features[0]:
        dtype = np.float32 if isinstance(features[0][name][0], float) else np.int32
        arrays[name] = np.asarray([record[name] for record in features], dtype=dtype)
        if arrays[name].shape[1] == 1 and name in ("label_ids", "is_real_example"):
            arrays[name] = arrays[name][:, 0]
    return arrays
