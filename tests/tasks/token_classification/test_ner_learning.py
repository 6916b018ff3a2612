"""Learning is real for token classification (issue 42, item 7): a tiny randomly initialised BERT learns, through
`TokenClassifier` and the whole tagging pipeline (words -> `tagging_features` with our cased `BertTokenizer`,
labels on first pieces -> `fit` -> `word_predictions` -> `entity_scores`), a synthetic NER task whose entities
are defined by a rule over word shapes and context: capitalised name words (two or three WordPiece pieces each)
are a person after "mr" / "mrs" and a location after "in" / "near", one or two names long (B- then I-), and the
same name words elsewhere (after "the", "and", or starting a sentence) are no entity. Some sentences are longer
than one window: their windows overlap by 6 words, so a name right after a cut still sees its trigger, and are
merged back per word (each word from the window where it has the most context)."""

import keras
import numpy as np

from keras_pretrain import families
from keras_pretrain.tasks.token_classification import features as tagging_features
from keras_pretrain.tasks.token_classification.metrics import entity_scores
from keras_pretrain.tasks import TokenClassifier

SYLLABLES = ["Ka", "Lo", "Mi", "Ta", "Ru", "Se"]
ENDINGS = ["##ro", "##na", "##vi", "##ton", "##del"]
PLAIN = ["walked", "lived", "saw", "spoke", "with", "the", "and", "a", "day", "home", "went", "quietly", "then",
         "talked", "friend", "house", "city", "old", "new"]
TRIGGERS = {"mr": "PER", "mrs": "PER", "in": "LOC", "near": "LOC"}
VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + SYLLABLES + ENDINGS + PLAIN + sorted(TRIGGERS)
LABELS = ["O", "B-LOC", "B-PER", "I-LOC", "I-PER"]
SEQ_LENGTH = 24


def name(rng):
    """A capitalised name word of 2 or 3 pieces, e.g. "Karona"."""
    return rng.choice(SYLLABLES) + "".join(e[2:] for e in rng.choice(ENDINGS, int(rng.integers(1, 3))))


def sentence(rng):
    words, tags = [], []
    while len(words) < int(rng.integers(6, 22)):
        roll = rng.random()
        if roll < 0.25:  # an entity: its trigger, then one or two names
            trigger = str(rng.choice(sorted(TRIGGERS)))
            names = [name(rng) for _ in range(int(rng.integers(1, 3)))]
            words += [trigger] + names
            kind = TRIGGERS[trigger]
            tags += ["O", f"B-{kind}"] + [f"I-{kind}"] * (len(names) - 1)
        elif roll < 0.4:  # a name that is no entity (no trigger before it)
            words += [str(rng.choice(["the", "and", "with"])), name(rng)]
            tags += ["O", "O"]
        else:
            words.append(str(rng.choice(PLAIN)))
            tags.append("O")
    return words, tags


def arrays(text, sentences, tags):
    packing = families.get("bert").packing
    index = {t: i for i, t in enumerate(LABELS)}
    tokenize = tagging_features.word_tokenizer(text, sentences)
    windows = tagging_features.convert_sentences_to_features(
        sentences, [[index[t] for t in row] for row in tags], tokenize, SEQ_LENGTH, packing,
        {"cls": 2, "sep": 3}, 1, overlap=6)
    x, y, words = tagging_features.to_arrays(windows, SEQ_LENGTH, packing, 0)
    return windows, x, y, words


def test_token_classifier_learns_entities_from_shape_and_context():
    from keras_pretrain.models.bert import BertBackbone
    from keras_pretrain.models.bert import BertTokenizer

    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(5)
    train = [sentence(rng) for _ in range(700)]
    dev = [sentence(rng) for _ in range(150)]
    text = BertTokenizer(vocabulary=VOCABULARY, lowercase=False)
    windows, x, y, _ = arrays(text, *zip(*train))
    assert len(windows) > len(train)  # some sentences need two windows
    backbone = BertBackbone(vocabulary_size=len(VOCABULARY), max_sequence_length=SEQ_LENGTH, num_layers=2,
                            num_heads=4, hidden_dim=64, intermediate_dim=128, dropout=0.0)
    model = TokenClassifier(backbone, len(LABELS), dropout=0.0)
    epochs = 20
    steps = -(-len(windows) // 32) * epochs
    model.compile(optimizer=keras.optimizers.AdamW(keras.optimizers.schedules.PolynomialDecay(3e-3, steps, 0.0)),
                  loss=model.default_compile_args()["loss"])
    model.fit({n: x[n] for n in model.input}, y, batch_size=32, epochs=epochs, verbose=0)

    dev_words, dev_tags = zip(*dev)
    dev_windows, dev_x, dev_y, words = arrays(text, dev_words, dev_tags)
    assert any(f.sub_sentence_id > 0 and (np.asarray(f.label_ids) > 0).any() for f in dev_windows)
    logits = model.predict({n: dev_x[n] for n in model.input}, batch_size=128, verbose=0)
    predicted, _ = tagging_features.word_predictions(dev_windows, np.asarray(logits, "float32"), words,
                                                     [len(w) for w in dev_words])
    predicted = [[LABELS[i] for i in row] for row in predicted]
    scores = entity_scores(list(dev_tags), predicted)
    baseline = entity_scores(list(dev_tags), [["B-PER" if w[0].isupper() else "O" for w in s] for s in dev_words])
    print(f"NER: held-out entity F1 {scores['f1']:.3f} (P {scores['precision']:.3f}, R {scores['recall']:.3f}); "
          f"every capitalised word a person: {baseline['f1']:.3f}")
    assert scores["per_type"]["PER"]["support"] > 30 and scores["per_type"]["LOC"]["support"] > 30
    assert scores["f1"] >= 0.9 and baseline["f1"] < 0.5, (scores, baseline)
