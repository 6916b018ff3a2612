"""The serving SavedModel of a token-classification task (NER): text in, its entities out, the Python pipeline
(`features` -> the model -> `word_predictions` -> `metrics.entities`) in one graph.

`export_tagging_serving(model, path, tokenizer, labels, ...)` writes a SavedModel whose `serving_default` takes
`text` (string [B]: words separated by whitespace, tokenized as the training files were, e.g. CoNLL's
punctuation apart; each CJK ideograph is a word of its own, so Chinese needs no spaces) and returns, padded to
the most entities of the batch:

- `entity_text`, `entity_type` string [B, E] ("" past the last entity);
- `entity_start`, `entity_end` int32 [B, E]: character offsets in `text` (`text[start:end]` is the entity's
  words with the text between them; -1 past the last);
- `entity_score` float32 [B, E]: the mean of its words' scores (transformers' grouped entities);
- `num_entities` int32 [B]; and per word, `words` / `tags` string [B, W] and `tag_scores` float32 [B, W].

Inside the graph, as the Python code: the text split into words on Python's whitespace and around each CJK
ideograph (`features.text_words`), each word tokenized alone (as `alignment` says: byte-level BPE after a space;
the unknown token for a word without pieces or longer than a window),
the sentence cut between words into windows (each as many words as fit, the next `overlap` words before the
previous end), packed by the family's packing; each word's tag from the window where it has the most context
(the earlier on ties), `aggregation` "first" (its first piece's probabilities), "average" or "max" over its
pieces; entities by conlleval's chunking (`metrics.entities`). An `ElmoTagger` (ELMo) reads each
window's words as characters between `<S>` and `</S>` and gives its Viterbi tags (scores 1: the CRF's decode
scores no word alone). Tokenizing uses tensorflow-text
ops: load `tensorflow_text` before `tf.saved_model.load`; nothing else is needed.
"""

import numpy as np

from keras_pretrain.export.tracing import ExportError
from keras_pretrain.export.tracing import require_tensorflow_backend
from keras_pretrain.tasks.token_classification import alignment
from keras_pretrain.tasks.token_classification import features as tagging_features
from keras_pretrain.tasks.token_classification.metrics import split_tag
from keras_pretrain.text import PY_WHITESPACE as WHITESPACE

OUTPUTS = ("entity_text", "entity_type", "entity_start", "entity_end", "entity_score", "num_entities", "words",
           "tags", "tag_scores")
AGGREGATIONS = ("first", "average", "max")
# BERT's CJK ideograph blocks: each such character is a word of its own (`tagging_features.text_words`).
CJK = (r"[\x{4E00}-\x{9FFF}\x{3400}-\x{4DBF}\x{20000}-\x{2A6DF}\x{2A700}-\x{2B73F}\x{2B740}-\x{2B81F}"
       r"\x{2B820}-\x{2CEAF}\x{F900}-\x{FAFF}\x{2F800}-\x{2FA1F}]")
PREFIXES = {"O": 0, "B": 1, "I": 2, "E": 3, "S": 4}


def _tag_table(labels):
    """(prefix codes, type codes, type names) of the label list (`O` has type -1)."""
    prefixes, types, names = [], [], []
    for tag in labels:
        prefix, kind = split_tag(tag)
        prefixes.append(PREFIXES[prefix])
        if kind is None:
            types.append(-1)
        else:
            if kind not in names:
                names.append(kind)
            types.append(names.index(kind))
    return np.asarray(prefixes, np.int32), np.asarray(types, np.int32), names


def _windows(tf, counts, budget, overlap):
    """The windows `[first, end)` of words of each sentence (ragged [B, (n), 2]) from the pieces per word
    `counts` (ragged [B, (W)]): as many words as fit `budget` from the first; the next `overlap` before the end."""

    def one(row):
        cumulative = tf.concat([[0], tf.cumsum(row)], axis=0)
        words = tf.shape(row)[0]

        def body(start, found):
            fits = tf.searchsorted(cumulative, [cumulative[start] + budget], side="right")[0] - 1
            end = tf.maximum(fits, start + 1)
            found = found.write(found.size(), tf.stack([start, end]))
            following = tf.where(end >= words, words, tf.maximum(start + 1, end - overlap))
            return following, found

        _, found = tf.while_loop(lambda start, _: start < words, body,
                                 (tf.constant(0), tf.TensorArray(tf.int32, size=0, dynamic_size=True,
                                                                 element_shape=[2])))
        return tf.reshape(found.stack(), [-1, 2])  # dense: map_fn stacks the rows into a ragged [B, (n), 2]

    return tf.map_fn(one, counts, fn_output_signature=tf.RaggedTensorSpec([None, 2], tf.int32, ragged_rank=0))


def export_tagging_serving(model, path, tokenizer, labels, seq_length=128, overlap=0, aggregation="first"):
    """Writes the serving SavedModel of a `TokenClassifier` `model` (see the module docstring; TF backend:
    `hub_modules.exporting.export_tagging_serving` runs it from any backend). Returns `path`."""
    from keras_pretrain import families
    from keras_pretrain.export.serving import save_serving_model
    from keras_pretrain.tasks.preprocessing import special_id
    from keras_pretrain.text import graph_character_ids

    tf = require_tensorflow_backend()
    import tensorflow_text as tf_text

    family = families.family_of(model.backbone)
    packing = family.packing
    characters = family.token_states.characters  # ELMo: words as characters, an `ElmoTagger`
    if not characters and (not packing.in_graph or not hasattr(tokenizer, "get_vocabulary")):
        raise ExportError(f"token-classification serving: {family.name}'s inputs are not packed in-graph.")
    if aggregation not in AGGREGATIONS:
        raise ExportError(f"aggregation must be one of {AGGREGATIONS}; got {aggregation!r}.")
    if len(labels) != model.num_classes:
        raise ExportError(f"{len(labels)} labels for a model of {model.num_classes} classes.")
    limit = getattr(model.backbone, "max_sequence_length", None)
    if limit and seq_length > limit:
        raise ExportError(f"seq_length {seq_length} exceeds the model's {limit} positions.")
    budget = seq_length - packing.num_special_tokens(1)
    if budget < 1 or overlap < 0:
        raise ExportError(f"seq_length {seq_length} leaves no room for a word, or overlap {overlap} < 0.")
    if not characters:
        names = packing.special_names
        ids = {key: special_id(tokenizer, *names[key]) for key in ("cls", "sep", "pad")}
        unk = tagging_features.unknown_id(tokenizer)
    prefix_codes, type_codes, type_names = _tag_table(labels)
    root = tf.train.Checkpoint()
    if not characters:  # (tracked through `set_variables` alone: Keras' own trace of the CRF's scan needs a length)
        root.model = model
    if tokenizer is not None and not characters:
        root.tokenizer = tokenizer
    input_names = list(model.input)

    def pieces_of(words):
        """Ragged [W, (pieces)] ids of each word alone; the unknown token for none or too many."""
        pieces = tokenizer(alignment.graph_words(tf, tokenizer, words))
        if not isinstance(pieces, tf.RaggedTensor):
            pieces = tf.RaggedTensor.from_tensor(pieces)
        pieces = tf.cast(pieces, tf.int32).with_row_splits_dtype(tf.int64)
        lengths = pieces.row_lengths()
        bad = (lengths == 0) | (lengths > budget)
        kept = tf.ragged.boolean_mask(pieces, ~bad)  # rows of the good words, empty rows dropped
        new_lengths = tf.where(bad, tf.ones_like(lengths), lengths)
        splits = tf.concat([[0], tf.cumsum(new_lengths)], axis=0)
        # The good words' pieces at their new places, the unknown id at the bad words' one place.
        good_starts = tf.boolean_mask(splits[:-1], ~bad)
        targets = tf.repeat(good_starts, kept.row_lengths()) + tf.ragged.range(kept.row_lengths()).flat_values
        values = tf.scatter_nd(targets[:, None], kept.flat_values, [splits[-1]])
        values = tf.tensor_scatter_nd_update(values, tf.boolean_mask(splits[:-1], bad)[:, None],
                                             tf.fill([tf.reduce_sum(tf.cast(bad, tf.int32))], unk))
        return tf.RaggedTensor.from_row_splits(values, splits)

    def serve(text):
        words, starts, ends = (t.with_row_splits_dtype(tf.int64) for t in
                               tf_text.regex_split_with_offsets(text, f"{WHITESPACE}|{CJK}", CJK))
        if characters:  # ELMo: one position a word, `<S>` and `</S>` around each window
            counts = tf.ones_like(words, tf.int32)
        else:
            pieces = pieces_of(words.flat_values)  # [W total, (pieces)]
            counts = words.with_flat_values(tf.cast(pieces.row_lengths(), tf.int32))
        spans = _windows(tf, counts, budget, overlap)  # [B, (windows), 2] word ranges
        example = tf.cast(spans.value_rowids(), tf.int32)  # each window's sentence
        first, end = spans.flat_values[:, 0], spans.flat_values[:, 1]
        word_base = tf.cast(tf.gather(words.row_splits, example), tf.int32)
        word_index = tf.ragged.range(first, end)  # sentence-level word indexes of each window [N, (words)]
        global_word = word_index + word_base[:, None]
        if characters:
            char_ids = graph_character_ids(tf.gather(words.flat_values, global_word), sequence_length=seq_length)
            outputs = model({"char_ids": char_ids}, training=False)
            # The Viterbi tags, as probabilities 1 (the CRF's decode scores no word alone).
            probabilities = tf.one_hot(outputs["tags"], len(labels), dtype=tf.float64)
            boundary = tf.fill([tf.shape(first)[0], 1], -1)
            position_word = tf.concat([boundary, word_index, boundary], axis=1).to_tensor(-1, shape=[None, seq_length])
            position_first = tf.cast(position_word >= 0, tf.int32)
        else:
            window_pieces = tf.gather(pieces, global_word).merge_dims(1, 2)  # [N, (pieces)]
            piece_counts = tf.gather(pieces.row_lengths(), global_word)
            piece_word = tf.RaggedTensor.from_row_lengths(
                tf.repeat(word_index.flat_values, tf.cast(piece_counts.flat_values, tf.int32)),
                tf.cast(tf.reduce_sum(piece_counts, axis=1), tf.int64))
            is_first = tf.RaggedTensor.from_row_lengths(
                tf.cast(tf.ragged.range(tf.cast(piece_counts.flat_values, tf.int32)).flat_values == 0, tf.int32),
                piece_word.row_lengths())
            x = packing.pack_ragged(tf, [window_pieces], seq_length, ids)
            marks = {"cls": -1, "sep": -1, "pad": -1}
            position_word = packing.pack_ragged(tf, [piece_word], seq_length, marks)["token_ids"]  # -1: none
            position_first = packing.pack_ragged(tf, [is_first], seq_length, {"cls": 0, "sep": 0, "pad": 0})[
                "token_ids"]
            if "task_type_ids" in input_names:
                x["task_type_ids"] = tf.zeros_like(x["token_ids"])
            logits = model({name: x[name] for name in input_names}, training=False)
            probabilities = tf.nn.softmax(tf.cast(logits, tf.float64), axis=-1)  # as the Python code, in float64

        # Each word's window: the most context on its poorer side, the earlier window on ties.
        rows = tf.shape(first)[0]
        valid = position_word >= 0
        window = tf.broadcast_to(tf.range(rows)[:, None], tf.shape(position_word))
        word = tf.boolean_mask(position_word, valid)
        window = tf.boolean_mask(window, valid)
        sentence_word = word + tf.gather(word_base, window)  # the word's global index
        room = tf.minimum(word - tf.gather(first, window), tf.gather(end, window) - 1 - word)
        total_words = tf.cast(words.row_splits[-1], tf.int32)
        best_room = tf.math.unsorted_segment_max(room, sentence_word, total_words)
        chosen = tf.math.unsorted_segment_min(
            tf.where(room == tf.gather(best_room, sentence_word), window, rows), sentence_word, total_words)
        keep = window == tf.gather(chosen, sentence_word)
        probs = tf.boolean_mask(tf.boolean_mask(probabilities, valid), keep)  # [P, C] of the chosen windows
        targets = tf.boolean_mask(sentence_word, keep)
        firsts = tf.boolean_mask(tf.boolean_mask(position_first, valid), keep)
        if aggregation == "first":
            picked = tf.scatter_nd(tf.boolean_mask(targets, firsts > 0)[:, None],
                                   tf.boolean_mask(probs, firsts > 0), [total_words, len(labels)])
        elif aggregation == "average":
            picked = tf.math.unsorted_segment_mean(probs, targets, total_words)
        else:  # the piece with the highest probability (the first of equals)
            top = tf.reduce_max(probs, axis=-1)
            best = tf.math.unsorted_segment_max(top, targets, total_words)
            order = tf.range(tf.shape(targets)[0])
            first_best = tf.math.unsorted_segment_min(
                tf.where(top == tf.gather(best, targets), order, tf.shape(targets)[0]), targets, total_words)
            picked = tf.gather(probs, first_best)
        tag_ids = tf.argmax(picked, axis=-1, output_type=tf.int32)
        tag_scores = tf.cast(tf.reduce_max(picked, axis=-1), tf.float32)

        # Entities: conlleval's chunking over each sentence's tags.
        prefix = tf.gather(tf.constant(prefix_codes), tag_ids)
        kind = tf.gather(tf.constant(type_codes), tag_ids)
        position = tf.range(total_words)
        sentence_start = tf.gather(tf.cast(words.row_splits[:-1], tf.int32), tf.cast(words.value_rowids(), tf.int32))
        previous = tf.maximum(position - 1, 0)
        continues = ((position > sentence_start) & ((prefix == PREFIXES["I"]) | (prefix == PREFIXES["E"]))
                     & ((tf.gather(prefix, previous) == PREFIXES["B"]) | (tf.gather(prefix, previous) == PREFIXES["I"]))
                     & (tf.gather(kind, previous) == kind))
        inside = prefix != PREFIXES["O"]
        begins = inside & ~continues
        entity = tf.cumsum(tf.cast(begins, tf.int32)) - 1  # global entity id of each word inside one
        count = tf.reduce_sum(tf.cast(begins, tf.int32))
        member = tf.boolean_mask(position, inside)
        member_entity = tf.boolean_mask(entity, inside)
        first_word = tf.math.unsorted_segment_min(member, member_entity, count)
        last_word = tf.math.unsorted_segment_max(member, member_entity, count)
        score = tf.math.unsorted_segment_mean(tf.boolean_mask(tag_scores, inside), member_entity, count)
        byte_start = tf.gather(tf.cast(starts.flat_values, tf.int32), first_word)
        byte_end = tf.gather(tf.cast(ends.flat_values, tf.int32), last_word)
        entity_example = tf.gather(tf.cast(words.value_rowids(), tf.int32), first_word)
        source = tf.gather(text, entity_example)
        entity_text = tf.strings.substr(source, byte_start, byte_end - byte_start)
        char_start = tf.strings.length(tf.strings.substr(source, tf.zeros_like(byte_start), byte_start),
                                       unit="UTF8_CHAR")
        char_end = char_start + tf.strings.length(entity_text, unit="UTF8_CHAR")
        entity_type = tf.gather(tf.constant(type_names or [""]), tf.maximum(tf.gather(kind, first_word), 0))
        batch = tf.shape(text)[0]
        per_example = tf.math.bincount(entity_example, minlength=batch, maxlength=batch)

        def padded(values, fill):
            return tf.RaggedTensor.from_value_rowids(values, tf.cast(entity_example, tf.int64),
                                                     nrows=tf.cast(batch, tf.int64)).to_tensor(fill)

        tags = tf.gather(tf.constant(list(labels)), tag_ids)
        return {"entity_text": padded(entity_text, ""), "entity_type": padded(entity_type, ""),
                "entity_start": padded(char_start, -1), "entity_end": padded(char_end, -1),
                "entity_score": padded(tf.cast(score, tf.float32), 0.0), "num_entities": per_example,
                "words": words.to_tensor(""), "tags": words.with_flat_values(tags).to_tensor(""),
                "tag_scores": words.with_flat_values(tag_scores).to_tensor(0.0)}

    specs = [tf.TensorSpec([None], tf.string, name="text")]
    return save_serving_model(tf, root, model, serve, specs, path)


def write_from_spec(model, tokenizer, spec, family=None):
    """The serving SavedModel that `spec` describes (`export_tagging_serving` with its labels and `options`)."""
    return export_tagging_serving(model, spec["path"], tokenizer, spec["labels"], **spec["options"])
