"""Word-level tags -> sub-word features for token classification, as tf-models' `tagging_data_lib` builds them
(and transformers' `word_ids()` aligns them), for every packing.

- Each word is tokenized alone (WordPiece, SentencePiece: the word as it is; byte-level BPE: after a space, as
  a word inside a text reads, `Ġword`: transformers' `is_split_into_words` with `add_prefix_space=True`).
  A word that gives no piece, or more pieces than a window holds, becomes the unknown token (tagging_data_lib's
  `[UNK]` rule), so every word keeps one labelled position.
- The word's label goes on its first piece; the other pieces, the special tokens and the padding get
  `IGNORE` (-100: transformers' ignore index; tagging_data_lib writes -1), which `TokenClassifier`'s loss and
  accuracy skip.
- A sentence longer than a window is cut between words into windows (`sub_sentence_id` 0, 1, ...; no word is
  split). With `overlap=0` they follow each other, none repeated (tagging_data_lib); `overlap=k` starts each next
  window `k` words before the previous one ended (the stride of transformers' overflowing windows, in words), so
  a word near a cut still sees its context. `word_predictions` merges the windows back into one prediction per
  word: from the window where the word has the most context on its poorer side (SQuAD's max-context rule, in
  words; ties: the earlier window).
- Each window is packed by the family's `Packing` (`[CLS] pieces [SEP]`, RoBERTa's `<s> ... </s>`, XLNet's
  `pieces <sep> <cls>` padded on the left), so the labels follow the tokens wherever the packing puts them.
"""

import dataclasses

import numpy as np

IGNORE = -100
NO_WORD = -1  # `word_ids` of the special tokens and the padding


@dataclasses.dataclass(frozen=True)
class TaggingFeature:
    """One window of one sentence.

    Attributes:
        sentence_id, sub_sentence_id: the sentence (its index in the input) and the window's rank in it.
        token_ids, segment_ids: the packed window, unpadded.
        label_ids: per token, the word's label on its first piece, `IGNORE` elsewhere (all `IGNORE` when the
            sentences come without labels).
        word_ids: per token, the index in the sentence of the word the piece belongs to, `NO_WORD` for the
            special tokens.
        words: `(first, end)`, the sentence's words the window holds.
    """

    sentence_id: int
    sub_sentence_id: int
    token_ids: tuple
    segment_ids: tuple
    label_ids: tuple
    word_ids: tuple
    words: tuple = (0, 0)


def word_tokenizer(tokenize_batch, sentences, prefix_space=False):
    """`word -> list of ids` for the words of `sentences`, all tokenized in one batched call.

    Args:
        tokenize_batch: callable `list of str -> ids per text` (one of our tokenizers: a ragged tensor or lists).
        sentences: lists of words.
        prefix_space: each word tokenized after a space (`alignment.prefix_space`: byte-level BPE, RoBERTa).
    """
    space = " " if prefix_space else ""
    words = sorted({space + w for words in sentences for w in words})
    ids = tokenize_batch(words) if words else []
    ids = ids.to_list() if hasattr(ids, "to_list") else ids
    table = {word: [int(i) for i in row] for word, row in zip(words, ids)}
    return lambda word: table[space + word]


def unknown_id(tokenizer):
    """The unknown token's id of one of our tokenizers (`[UNK]`, `<unk>`)."""
    for name in ("unk_token_id", "oov_token"):
        value = getattr(tokenizer, name, None)
        if isinstance(value, int):
            return value
        if isinstance(value, str) and tokenizer.token_to_id(value) is not None:
            return tokenizer.token_to_id(value)
    for token in ("[UNK]", "<unk>"):
        try:
            found = tokenizer.token_to_id(token)
        except (KeyError, ValueError):
            continue
        if found is not None:
            return found
    raise ValueError(f"the vocabulary of {type(tokenizer).__name__} has no unknown token ([UNK], <unk>)")


def _windows(pieces, budget, overlap=0):
    """The windows `[(first, end)]` of words whose pieces fit `budget`: each as many words as fit from its
    first (tagging_data_lib's cut); the next starts `overlap` words before the end (at least one word on)."""
    windows, start = [], 0
    while start < len(pieces):
        end, used = start, 0
        while end < len(pieces) and (end == start or used + len(pieces[end]) <= budget):
            used += len(pieces[end])
            end += 1
        windows.append((start, end))
        if end == len(pieces):
            break
        start = max(start + 1, end - overlap)
    return windows


def convert_sentences_to_features(sentences, labels, tokenize, seq_length, packing, special, unk_id, overlap=0):
    """The windows of `sentences` (lists of words) with their word `labels` (lists of ints, or None).

    Args:
        sentences: list of lists of words.
        labels: None, or one list of int labels per sentence (as long as its words).
        tokenize: `word -> list of ids` (`word_tokenizer`).
        seq_length: int, the packed length.
        packing: the family's `keras_pretrain.data.packing.Packing`.
        special: dict with the `cls` and `sep` ids.
        unk_id: the unknown token's id (a word without pieces or longer than a window).
        overlap: int >= 0, the words a window of a long sentence repeats from the end of the one before.

    Returns:
        list of `TaggingFeature`, the sentences' windows in order.
    """
    budget = seq_length - packing.num_special_tokens(1)
    if overlap < 0:
        raise ValueError(f"overlap must be >= 0; got {overlap}.")
    if budget < 1:
        raise ValueError(f"seq_length {seq_length} leaves no room for a word after the special tokens.")
    features = []
    for sentence_id, words in enumerate(sentences):
        tags = labels[sentence_id] if labels is not None else [IGNORE] * len(words)
        if len(tags) != len(words):
            raise ValueError(f"sentence {sentence_id}: {len(words)} words but {len(tags)} labels.")
        pieces = []
        for word in words:
            ids = tokenize(word)
            pieces.append(ids if ids and len(ids) <= budget else [unk_id])
        for rank, (first, end) in enumerate(_windows(pieces, budget, overlap)):
            ids, label_ids, word_ids = [], [], []
            for w in range(first, end):
                ids += pieces[w]
                label_ids += [tags[w]] + [IGNORE] * (len(pieces[w]) - 1)
                word_ids += [w] * len(pieces[w])
            tokens, types = packing.pack_lists([ids], special["cls"], special["sep"])
            label_row, _ = packing.pack_lists([label_ids], IGNORE, IGNORE)
            word_row, _ = packing.pack_lists([word_ids], NO_WORD, NO_WORD)
            features.append(TaggingFeature(sentence_id, rank, tuple(tokens), tuple(types), tuple(label_row),
                                           tuple(word_row), (first, end)))
    return features


def word_windows(sentences, labels, seq_length, packing, overlap=0):
    """The windows of `sentences` for a model that reads whole words (ELMo): one position a word, the packing's
    two boundaries (`<S>`, `</S>`) around each window; `features` whose `token_ids` are placeholders (0).
    `character_inputs` gives their character ids."""
    return convert_sentences_to_features(sentences, labels, lambda word: [0], seq_length, packing,
                                         {"cls": 0, "sep": 0}, 0, overlap)


def character_inputs(features, sentences, seq_length):
    """ELMo's `char_ids` [N, seq_length, 50] of `word_windows`' features (bilm-tf's ids, `<S>` / `</S>` around)."""
    from keras_pretrain.text import character_ids

    return {"char_ids": character_ids([sentences[f.sentence_id][f.words[0]:f.words[1]] for f in features],
                                      sequence_length=seq_length)}


def to_arrays(features, seq_length, packing, pad_id):
    """NumPy inputs (`token_ids`, `segment_ids`, `padding_mask`) and `labels` / `word_ids` [N, seq_length], padded
    as the packing pads (XLNet on the left); padding labels `IGNORE`, padding words `NO_WORD`."""
    x = packing.pad_rows([(f.token_ids, f.segment_ids) for f in features], seq_length, pad_id)
    extra = {}
    for name, fill in (("labels", IGNORE), ("word_ids", NO_WORD)):
        values = np.full((len(features), seq_length), fill, "int32")
        for i, f in enumerate(features):
            row = f.label_ids if name == "labels" else f.word_ids
            where = slice(seq_length - len(row), None) if packing.pads_left else slice(0, len(row))
            values[i, where] = row
        extra[name] = values
    return x, extra["labels"], extra["word_ids"]


def word_predictions(features, logits, word_ids, sentence_lengths, strategy="first"):
    """One predicted label (and its probability) per word of each sentence, the windows merged back.

    Args:
        features: the `TaggingFeature`s the rows of `logits` come from.
        logits: [N, seq_length, C] float.
        word_ids: [N, seq_length] int (`to_arrays`' third value).
        sentence_lengths: the number of words of each sentence.
        strategy: how a word's pieces decide its label, as transformers' token-classification aggregation:
            "first" (the first piece's logits: what the model is trained on), "average" (the mean of the
            pieces' probabilities), "max" (the piece with the highest probability).

    Returns:
        (labels, scores): per sentence, a list of int labels and a list of float probabilities.
    """
    if strategy not in ("first", "average", "max"):
        raise ValueError(f"strategy must be 'first', 'average' or 'max'; got {strategy!r}.")
    logits = np.asarray(logits, "float64")
    probabilities = np.exp(logits - logits.max(-1, keepdims=True))
    probabilities /= probabilities.sum(-1, keepdims=True)
    labels = [[0] * n for n in sentence_lengths]
    scores = [[0.0] * n for n in sentence_lengths]
    context = [[-1] * n for n in sentence_lengths]  # the context of the window each word's prediction is from
    for row, feature in enumerate(features):
        words = np.asarray(word_ids[row])
        first, end = feature.words
        for word in np.unique(words[words >= 0]):
            room = min(word - first, end - 1 - word)
            if room <= context[feature.sentence_id][word]:
                continue  # an earlier window gives the word as much context
            context[feature.sentence_id][word] = room
            where = np.flatnonzero(words == word)
            if strategy == "first":
                p = probabilities[row, where[0]]
            elif strategy == "average":
                p = probabilities[row, where].mean(0)
            else:
                p = probabilities[row, where[np.argmax(probabilities[row, where].max(-1))]]
            labels[feature.sentence_id][word] = int(np.argmax(p))
            scores[feature.sentence_id][word] = float(p.max())
    return labels, scores


# BERT's CJK ideograph blocks (`BasicTokenizer._is_chinese_char`): each such character is a word of its own.
CJK = ("\u4e00-\u9fff\u3400-\u4dbf\U00020000-\U0002a6df\U0002a700-\U0002b73f\U0002b740-\U0002b81f"
       "\U0002b820-\U0002ceaf\uf900-\ufaff\U0002f800-\U0002fa1f")


def text_words(text):
    """The words of raw `text` as the NER serving SavedModel splits it: runs of non-whitespace (Python's
    `str.split()` whitespace), each CJK ideograph a word of its own (Chinese tagged per character, as BERT's
    basic tokenizer reads it). Returns `[(word, start, end)]` with `text[start:end] == word`."""
    import re

    return [(m.group(), m.start(), m.end()) for m in re.finditer(f"[{CJK}]|[^\\s{CJK}]+", text)]


def word_entities(words, tags, scores, text=None, offsets=None):
    """The entities of one sentence's tagged words, as the serving SavedModel returns them: dicts with `text`,
    `type`, `start` / `end` (character offsets) and `score` (the mean of the words' scores); conlleval's chunking
    (`keras_pretrain.tasks.token_classification.metrics.entities`).

    `text` and `offsets` (each word's `(start, end)` in it, e.g. from `text_words`): the entity's text is
    `text[start:end]`; without them the words are read as `" ".join(words)`.
    """
    from keras_pretrain.tasks.token_classification.metrics import entities

    if offsets is None:
        offsets, position = [], 0
        for word in words:
            offsets.append((position, position + len(word)))
            position += len(word) + 1
        text = " ".join(words)
    return [{"text": text[offsets[first][0]:offsets[end - 1][1]], "type": kind, "start": offsets[first][0],
             "end": offsets[end - 1][1], "score": float(np.mean(scores[first:end]))}
            for kind, first, end in entities(list(tags))]
