"""Token-classification features (issue 42, item 2): the word's label on its first piece, the rest ignored, equal
to transformers' `word_ids()` alignment for WordPiece, SentencePiece and byte-level BPE words; long sentences
cut between words as tf-models' `tagging_data_lib` (its documented example), merged back per word."""

import numpy as np
import pytest

from keras_pretrain import families
from keras_pretrain.tasks.token_classification import features as tf_features
from keras_pretrain.tasks.token_classification.features import IGNORE

pytestmark = pytest.mark.one_backend

SENTENCES = [
    ["EU", "rejects", "German", "call", "to", "boycott", "British", "lamb", "."],
    ["Peter", "Blackburn", "lives", "in", "Brussels,", "Belgium", "1996-08-22", "Zoë", "naïve", "café"],
    ["The", "quick", "brown", "fox", "jumps", "over", "the", "lazy", "dog"],
]


def labels_of(sentences, seed=0):
    rng = np.random.default_rng(seed)
    return [[int(t) for t in rng.integers(0, 7, len(words))] for words in sentences]


def reference_labels(encoding, word_labels):
    """transformers' recipe: the label on the first token of each word (word_ids), -100 elsewhere."""
    out, previous = [], None
    for word in encoding.word_ids():
        out.append(IGNORE if word is None or word == previous else word_labels[word])
        previous = word
    return out


def bert_vocabulary(tmp_path):
    from keras_pretrain.tasks.question_answering.predictions import basic_tokenize

    words = sorted({w for s in SENTENCES for word in s for w in basic_tokenize(word, True)} - {"blackburn"})
    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "black", "##burn"] + words) + "\n",
                    encoding="utf-8")
    return str(path)


def check_against(reference, ours, packing, special, unk_id, prefix_space=False):
    labels = labels_of(SENTENCES)
    tokenize = tf_features.word_tokenizer(ours, SENTENCES, prefix_space=prefix_space)
    features = tf_features.convert_sentences_to_features(SENTENCES, labels, tokenize, 160, packing, special, unk_id)
    assert [f.sentence_id for f in features] == [0, 1, 2]  # one window each at length 160
    for feature, words, word_labels in zip(features, SENTENCES, labels):
        encoding = reference(words, is_split_into_words=True)
        assert list(feature.token_ids) == encoding["input_ids"], words
        assert list(feature.label_ids) == reference_labels(encoding, word_labels), words
        assert [None if w < 0 else w for w in feature.word_ids] == encoding.word_ids()
    return features


def test_wordpiece_words_align_as_transformers(tmp_path):
    transformers = pytest.importorskip("transformers")
    from keras_pretrain.models.bert import BertTokenizer

    vocab = bert_vocabulary(tmp_path)
    reference = transformers.BertTokenizerFast(vocab, do_lower_case=True)
    ours = BertTokenizer(vocabulary=vocab, lowercase=True)
    ids = {"cls": ours.token_to_id("[CLS]"), "sep": ours.token_to_id("[SEP]")}
    features = check_against(reference, ours, families.get("bert").packing, ids, ours.token_to_id("[UNK]"))
    assert any(f.label_ids.count(IGNORE) > 3 for f in features)  # multi-piece words ("blackburn", "1996-08-22")


def test_byte_level_words_align_as_transformers(tmp_path):
    transformers = pytest.importorskip("transformers")
    from keras_pretrain.models.roberta import RobertaTokenizer
    from tests.models.roberta.fixtures import write_bpe_files

    vocab, merges = write_bpe_files(tmp_path)
    reference = transformers.RobertaTokenizerFast(vocab, merges, add_prefix_space=True)
    ours = RobertaTokenizer(vocab, merges)
    ids = {"cls": ours.token_to_id("<s>"), "sep": ours.token_to_id("</s>")}
    check_against(reference, ours, families.get("roberta").packing, ids, ours.token_to_id("<unk>"),
                  prefix_space=True)


def test_sentencepiece_words_align_as_transformers(tmp_path):
    transformers = pytest.importorskip("transformers")
    from keras_pretrain.models.albert import AlbertTokenizer
    from tests.models.albert.fixtures import train_sentencepiece

    path = str(tmp_path / "spiece.model")
    train_sentencepiece(path)
    reference = transformers.AlbertTokenizer.from_pretrained(str(tmp_path))
    ours = AlbertTokenizer(path)
    ids = {"cls": ours.token_to_id("[CLS]"), "sep": ours.token_to_id("[SEP]")}
    check_against(reference, ours, families.get("albert").packing, ids, ours.token_to_id("<unk>"))


def test_tagging_data_libs_documented_example():
    """tagging_data_lib's docstring: "What a great weekend", labels 7 5 9 10, max_seq_length 5 -> two windows."""
    vocab = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "what": 4, "a": 5, "great": 6, "week": 7, "##end": 8}
    pieces = {"what": [4], "a": [5], "great": [6], "weekend": [7, 8]}
    packing = families.get("bert").packing
    features = tf_features.convert_sentences_to_features([["what", "a", "great", "weekend"]], [[7, 5, 9, 10]],
                                                         pieces.__getitem__, 5, packing, {"cls": 2, "sep": 3}, 1)
    assert [(f.sentence_id, f.sub_sentence_id) for f in features] == [(0, 0), (0, 1)]
    x, labels, words = tf_features.to_arrays(features, 5, packing, vocab["[PAD]"])
    assert x["token_ids"].tolist() == [[2, 4, 5, 6, 3], [2, 7, 8, 3, 0]]
    assert labels.tolist() == [[IGNORE, 7, 5, 9, IGNORE], [IGNORE, 10, IGNORE, IGNORE, IGNORE]]
    assert x["padding_mask"].tolist() == [[1, 1, 1, 1, 1], [1, 1, 1, 1, 0]]
    assert words.tolist() == [[-1, 0, 1, 2, -1], [-1, 3, 3, -1, -1]]
    # A word with more pieces than a window, or none, is the unknown token (one labelled position).
    pieces.update(long=[4, 5, 6, 7], gone=[])
    features = tf_features.convert_sentences_to_features([["long", "gone", "a"]], [[1, 2, 3]], pieces.__getitem__,
                                                         5, packing, {"cls": 2, "sep": 3}, 1)
    assert [f.token_ids for f in features] == [(2, 1, 1, 5, 3)]
    assert features[0].label_ids == (IGNORE, 1, 2, 3, IGNORE)


def test_windows_merge_back_into_one_label_per_word():
    """XLNet's packing (left padding, `<cls>` last) and long sentences: each word's prediction comes from its
    window, with the three aggregation strategies."""
    packing = families.get("xlnet").packing
    sentence = [f"w{i}" for i in range(11)]
    pieces = {w: [10 + i] * (1 + i % 3) for i, w in enumerate(sentence)}  # 1 to 3 pieces per word
    features = tf_features.convert_sentences_to_features([sentence, ["w0"]], None, pieces.__getitem__, 8, packing,
                                                         {"cls": 3, "sep": 4}, 1)
    assert len({f.sub_sentence_id for f in features if f.sentence_id == 0}) > 2
    x, labels, words = tf_features.to_arrays(features, 8, packing, 5)
    assert (labels == IGNORE).all() and (x["token_ids"][:, -1] == 3).all()  # <cls> last
    # Logits that name each word's index on its first piece and index + 1 on its other pieces.
    logits = np.full(words.shape + (16,), -5.0)
    for row in range(len(features)):
        seen = set()
        for position, word in enumerate(words[row]):
            if word >= 0:
                logits[row, position, word if word not in seen else word + 1] = 5.0
                seen.add(word)
    predicted, scores = tf_features.word_predictions(features, logits, words, [11, 1], "first")
    assert predicted == [list(range(11)), [0]] and min(min(s) for s in scores) > 0.99
    averaged, _ = tf_features.word_predictions(features, logits, words, [11, 1], "average")
    # 1 piece: its label; 2: a tie, the lower label; 3: the other pieces' label outvotes the first's.
    assert averaged[0] == [i + 1 if i % 3 == 2 else i for i in range(11)]
    assert tf_features.word_predictions(features, logits, words, [11, 1], "max")[0][0] == list(range(11))
    with pytest.raises(ValueError, match="strategy"):
        tf_features.word_predictions(features, logits, words, [11, 1], "vote")


def test_overlapping_windows_predict_each_word_from_its_best_context():
    """`overlap=k`: each window after the first starts k words before the previous one ended; a word's
    prediction comes from the window where its poorer side has the most words (the earlier one on ties)."""
    packing = families.get("bert").packing
    sentence = [f"w{i}" for i in range(30)]
    pieces = {w: [10 + i % 7] * (1 + i % 2) for i, w in enumerate(sentence)}
    features = tf_features.convert_sentences_to_features([sentence], [list(range(30))], pieces.__getitem__, 12,
                                                         packing, {"cls": 2, "sep": 3}, 1, overlap=3)
    spans = [f.words for f in features]
    assert spans[0][0] == 0 and spans[-1][1] == 30 and len(spans) > 3
    for (first, end), (next_first, _) in zip(spans, spans[1:]):
        assert next_first == end - 3  # 3 words repeated
    _, labels, words = tf_features.to_arrays(features, 12, packing, 0)
    assert sorted(set(labels[labels >= 0].tolist())) == list(range(30))  # labelled in every window holding them
    logits = np.full(words.shape + (len(spans),), -5.0)
    for row in range(len(features)):
        logits[row, :, row] = 5.0  # each window votes its own rank
    predicted, _ = tf_features.word_predictions(features, logits, words, [30])
    for word in range(30):
        rooms = [(min(word - a, b - 1 - word), -rank) for rank, (a, b) in enumerate(spans) if a <= word < b]
        assert predicted[0][word] == -max(rooms)[1], word
    assert len(set(predicted[0])) == len(spans)  # every window gives some words
    no_overlap = tf_features.convert_sentences_to_features([sentence], None, pieces.__getitem__, 12, packing,
                                                           {"cls": 2, "sep": 3}, 1)
    assert [f.words[0] for f in no_overlap[1:]] == [f.words[1] for f in no_overlap[:-1]]  # tagging_data_lib's cut
    with pytest.raises(ValueError, match="overlap"):
        tf_features.convert_sentences_to_features([sentence], None, pieces.__getitem__, 12, packing,
                                                  {"cls": 2, "sep": 3}, 1, overlap=-1)


def test_text_words_split_on_whitespace_and_around_each_ideograph():
    from tests.originals import TRICKY_TEXTS

    for _, text in TRICKY_TEXTS:
        words = tf_features.text_words(text)
        assert all(text[a:b] == w for w, a, b in words)
        if not any("\u4e00" <= c <= "\u9fff" or "\u3400" <= c <= "\u4dbf" for c in text):
            assert [w for w, _, _ in words] == text.split(), text
    assert [w for w, _, _ in tf_features.text_words("新华社 Beijing电\u3000ok")] == [
        "新", "华", "社", "Beijing", "电", "ok"]
