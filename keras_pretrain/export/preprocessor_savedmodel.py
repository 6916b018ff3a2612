"""Preprocessor SavedModels (TF-Hub TF2 convention): strings in, encoder inputs out.

`export_preprocessor(tokenizer, path, seq_length=128)` writes the contract of
TF-Hub's BERT preprocessors (`bert_en_uncased_preprocess`):

- `obj(strings)` (also `obj(strings, training=...)`, as `hub.KerasLayer`
  calls it) -> `input_word_ids`, `input_mask`, `input_type_ids` (int32
  [B, seq_length]);
- `obj.tokenize(strings)` -> int32 RaggedTensor [batch, (words), (pieces)]
  (two ragged levels; `.merge_dims(-2, -1)` gives the flat ids of the
  tokenizer);
- `obj.tokenize.get_special_tokens_dict()` -> `vocab_size`,
  `start_of_sequence_id`, `end_of_segment_id`, `padding_id`, `mask_id`
  (int32 scalars; an entry is left out when the vocabulary has no such
  token, as TF-Hub's);
- `obj.bert_pack_inputs([seg_a] or [seg_a, seg_b], seq_length=N)` -> the
  encoder inputs, the segments trimmed round-robin to fit; each segment
  [batch, (words), (pieces)] as `tokenize` returns it, or [batch, (pieces)];
- variables `cls_id`, `sep_id`, `pad_id`, `mask_id` (-1 when the vocabulary
  has none), `vocab_size`, `seq_length`; signatures `serving_default` (input
  `text`) and `pair` (`text_a`, `text_b`); endpoint `serve` (= `obj.__call__`)
  for `keras.layers.TFSMLayer`.

Tokenization runs in-graph (tensorflow-text ops: load `tensorflow_text` before
`tf.saved_model.load`, as for TF-Hub's own preprocessors).

The words level: WordPiece (BERT, ERNIE, DistilBERT, ALBERT zh) has the words
of BERT's basic tokenizer, as TF-Hub's BERT preprocessors (a word = a piece
without the `##` prefix and the `##` pieces after it). SentencePiece (ALBERT
v2, XLNet) and byte-level BPE (RoBERTa) have no words in TF-Hub (TF-Hub's
`albert_en_preprocess` returns [batch, (pieces)]); here a word is a
whitespace-separated word: a piece starting with the space marker (`▁`; for
BPE `Ġ` or another whitespace byte) starts a new word, as does each row's first
piece. The grouping is read off the pieces the tokenizer produces for the
whole text, so the flat ids never change. Start/end ids: `[CLS]` / `[SEP]`
(ALBERT too), RoBERTa `<s>` / `</s>`, XLNet `<cls>` / `<sep>` (XLNet puts
`<cls>` last; see below).

The packing follows the tokenizer's family (`bert_pack_inputs` keeps TF-Hub's
name for all of them):

- `bert` (BertTokenizer, AlbertTokenizer, ...: BERT, ALBERT, ERNIE,
  DistilBERT): `[CLS] A [SEP] (B [SEP])`, segment ids 0 / 1, padded on the
  right with `pad_id`.
- `roberta` (RobertaTokenizer, byte-level BPE, in-graph through keras-hub's
  `BytePairTokenizer`): `<s> A </s> (</s> B </s>)`, type ids all 0 (RoBERTa
  has one token type), padded on the right with `<pad>` (1).
- `xlnet` (XLNetTokenizer, SentencePiece): `A <sep> (B <sep>) <cls>`, segment
  ids 0 / 1 and 2 for `<cls>`, padded on the LEFT with `<pad>` (type id 0,
  mask 0), as `transformers`' `XLNetTokenizer` (5.x): the last position is
  always `<cls>`. (The original code pads with segment id 4; padded keys are
  masked, so the value changes no output at real positions.)

Segments are trimmed round-robin to fit (as TF-Hub's BERT preprocessors); for
a pair, `transformers`' `longest_first` can keep one token more of one
segment and one less of the other.

GPT's tokenizer is Python-only (GPT-1 BPE with '</w>'; see
`keras_pretrain.models.gpt.gpt_tokenizer`): GPT modules have no
preprocessor SavedModel. ELMo needs none: its encoder takes strings.
"""

from keras_pretrain.data import packing as packings
from keras_pretrain.errors import ConfigError
from keras_pretrain.export.serving import checked_inputs
from keras_pretrain.export.tracing import ExportError
from keras_pretrain.export.tracing import require_tensorflow_backend
from keras_pretrain.export.tracing import tracing_context
from keras_pretrain.models import pieces
from keras_pretrain.models.pieces import BPE_SPACES  # noqa: F401 (re-exported)
from keras_pretrain.models.pieces import SENTENCEPIECE_SPACE  # noqa: F401 (re-exported)


def preprocessor_of(tokenizer, packing=None):
    """The text preprocessor (`keras_pretrain.models.text_preprocessor`) of the family whose tokenizer class
    `tokenizer` is an instance of (most specific class first); a tokenizer of no family gets a plain one
    with `packing`, by default RoBERTa's for a byte-level BPE tokenizer and BERT's for any other."""
    from keras_pretrain import families
    from keras_pretrain.models.text_preprocessor import TextPreprocessor

    by_class = {}
    for family in families.FAMILIES.values():
        if family.packing.in_graph:
            by_class.setdefault(family.tokenizer_class, family)
    family = next((by_class[cls] for cls in type(tokenizer).__mro__ if cls in by_class), None)
    if family is not None:
        return family.preprocessor_class(family, tokenizer, packing=packing)
    if packing is None:
        bpe = pieces.of(tokenizer, default=pieces.WORDPIECE).byte_level
        packing = packings.ROBERTA if bpe else packings.BERT
    return TextPreprocessor(None, tokenizer, packing=packing)


def packing_of(tokenizer):
    """The packing of `tokenizer`'s family (see `preprocessor_of`)."""
    return preprocessor_of(tokenizer).packing


def group_words(tf, pieces, starts):
    """[B, (pieces)] ids -> [B, (words), (pieces)], a word at each start piece."""
    ids = pieces.flat_values
    row_starts = tf.gather(pieces.row_starts(), pieces.value_rowids())
    first = tf.range(tf.shape(ids, out_type=tf.int64)[0]) == row_starts
    begins = tf.logical_or(tf.gather(starts, ids), first)
    word_of_piece = tf.cumsum(tf.cast(begins, tf.int64)) - 1
    words = tf.RaggedTensor.from_value_rowids(
        ids, word_of_piece, nrows=tf.reduce_sum(tf.cast(begins, tf.int64)), validate=False
    )
    words_per_row = tf.math.unsorted_segment_sum(
        tf.cast(begins, tf.int64), pieces.value_rowids(), pieces.nrows()
    )
    return tf.RaggedTensor.from_row_lengths(words, words_per_row, validate=False)


def special_tokens_dict(ids, vocab_size):
    """TF-Hub's `get_special_tokens_dict()` keys (missing tokens left out)."""
    names = {"start_of_sequence_id": "cls", "end_of_segment_id": "sep", "padding_id": "pad", "mask_id": "mask"}
    result = {"vocab_size": int(vocab_size)}
    result.update({key: ids[name] for key, name in names.items() if ids[name] >= 0})
    return result


def pack(tf, packing, segments, length, ids):
    """Encoder inputs under TF-Hub's names from ragged id segments (see the module docstring).

    The packing is `Packing.pack_ragged`'s; RoBERTa's type ids are all 0 here
    (`Packing.tfhub_type_ids`: RoBERTa has one token type).
    """
    packing = packings.get(packing)
    packed = packing.pack_ragged(tf, segments, length, ids)
    type_ids = packed["segment_ids"]
    if not packing.tfhub_type_ids:
        type_ids = tf.zeros_like(type_ids)
    return {
        "input_word_ids": packed["token_ids"],
        "input_mask": packed["padding_mask"],
        "input_type_ids": type_ids,
    }


def export_preprocessor(tokenizer, path, seq_length=128, packing=None):
    """Writes a TF-Hub TF2 preprocessor SavedModel for `tokenizer`.

    Args:
        tokenizer: a keras-hub tokenizer of ours whose call maps a batch of
            strings to ragged ids in-graph (`BertTokenizer`, `AlbertTokenizer`,
            `RobertaTokenizer`, `XLNetTokenizer`).
        path: the output folder.
        seq_length: int. Packed length of the default call (128 as TF-Hub).
        packing: a `keras_pretrain.data.packing.Packing` (or "bert", "roberta",
            "xlnet"); default the packing of the tokenizer's family.
    """
    tf = require_tensorflow_backend()

    try:
        preprocessor = preprocessor_of(tokenizer, packings.get(packing) if packing is not None else None)
    except ValueError as e:
        raise ExportError(str(e)) from None
    packing = preprocessor.packing
    if not packing.in_graph:
        raise ExportError(f"packing {packing.name!r} has no in-graph form (expected one of {tuple(packings.PACKINGS)}).")
    try:
        ids = preprocessor.special_ids(with_mask=True)
        starts = tf.constant(preprocessor.word_starts())
    except ConfigError as e:
        raise ExportError(str(e)) from None
    root = tf.Module()
    root.tokenizer = tokenizer  # tracks the tokenizer's TF resources
    for key, value in ids.items():
        setattr(root, f"{key}_id", tf.Variable(value, trainable=False, name=f"{key}_id"))
    root.vocab_size = tf.Variable(
        int(tokenizer.vocabulary_size()), trainable=False, name="vocab_size"
    )
    root.seq_length = tf.Variable(seq_length, trainable=False, name="seq_length")
    strings = tf.TensorSpec([None], tf.string)
    ragged = tf.RaggedTensorSpec([None, None], tf.int32)
    ragged_words = tf.RaggedTensorSpec([None, None, None], tf.int32, ragged_rank=2)
    length = tf.TensorSpec([], tf.int32)
    special = special_tokens_dict(ids, tokenizer.vocabulary_size())

    def tokenize_fn(texts):
        result = tokenizer(texts)
        if not isinstance(result, tf.RaggedTensor):
            result = tf.RaggedTensor.from_tensor(result)
        return tf.cast(result, tf.int32)

    default_length = seq_length

    def tf_function(fn, **kwargs):
        return tf.function(fn, autograph=False, **kwargs)  # faster tracing

    with tracing_context(tf):  # see savedmodel.tracing_context
        # Tokenizing and packing are traced once each (tokenizer graphs,
        # byte-level BPE above all, are slow to trace); every endpoint calls
        # these graphs.
        tokenize_graph = tf_function(tokenize_fn, input_signature=[strings]).get_concrete_function()
        pack_function = tf_function(
            lambda segments, length: pack(tf, packing, list(segments), length, ids)
        )
        pack_graphs = {
            n: pack_function.get_concrete_function([ragged] * n, length) for n in (1, 2)
        }

        def packed(segments, seq_length=None):
            if seq_length is None:
                seq_length = tf.constant(default_length, tf.int32)
            segments = [s.merge_dims(-2, -1) if s.ragged_rank > 1 else s for s in segments]
            return pack_graphs[len(segments)](list(segments), seq_length)

        # `tokenize` is an object, as in TF-Hub: called, and get_special_tokens_dict().
        root.tokenize = tf.Module()
        root.tokenize.__call__ = tf_function(
            lambda texts: group_words(tf, tokenize_graph(texts), starts), input_signature=[strings]
        )
        root.tokenize.get_special_tokens_dict = tf_function(
            lambda: {k: tf.constant(v, tf.int32) for k, v in special.items()}, input_signature=[]
        )

        def call(texts, training=None):  # `training` changes nothing (no dropout here)
            del training
            return packed([tokenize_graph(texts)])

        root.__call__ = tf_function(call)
        for training in (None, False, True):
            root.__call__.get_concrete_function(strings, training=training)
        root.serve = tf_function(call, input_signature=[strings])  # `keras.layers.TFSMLayer`
        root.bert_pack_inputs = tf_function(packed)
        one_or_two = [[a] for a in (ragged, ragged_words)]
        one_or_two += [[a, b] for a in (ragged, ragged_words) for b in (ragged, ragged_words)]
        for segments in one_or_two:
            root.bert_pack_inputs.get_concrete_function(segments)  # default length
            root.bert_pack_inputs.get_concrete_function(segments, length)
        # Signatures do not check the shapes they are given: `checked_inputs` refuses anything but [B] strings.
        text_spec = [tf.TensorSpec([None], tf.string, name="text")]
        pair_specs = [tf.TensorSpec([None], tf.string, name=n) for n in ("text_a", "text_b")]
        signatures = {
            "serving_default": tf_function(
                lambda text: packed([tokenize_graph(t) for t in checked_inputs(tf, text_spec, [text])]),
                input_signature=text_spec,
            ).get_concrete_function(),
            "pair": tf_function(
                lambda text_a, text_b: packed(
                    [tokenize_graph(t) for t in checked_inputs(tf, pair_specs, [text_a, text_b])]),
                input_signature=pair_specs,
            ).get_concrete_function(),
        }
    tf.saved_model.save(root, path, signatures=signatures)
    return path
