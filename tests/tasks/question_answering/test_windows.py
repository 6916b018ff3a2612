"""THE doc-stride rule (`keras_pretrain.tasks.question_answering.windows`): the Python features' windows
(`doc_spans`) and the serving graph's (`graph_windows`, the closed form `serving.windows` runs) are the same
windows for every length and stride the length check lets through."""

import pytest

from keras_pretrain.tasks.question_answering import features_wordpiece
from keras_pretrain.tasks.question_answering import windows
from keras_pretrain.tasks.question_answering.squad import SquadExample

CASES = [(length, room, stride) for length in range(1, 40) for room in (1, 2, 3, 5, 8, 13)
         for stride in range(1, room + 1)]


@pytest.mark.one_backend
def test_the_closed_form_counts_the_windows_of_doc_spans():
    for length, room, stride in CASES:
        spans = windows.doc_spans(length, room, stride)
        assert windows.window_count(length, room, stride) == len(spans), (length, room, stride)
        assert spans == [(i * stride, min(room, length - i * stride)) for i in range(len(spans))]
        assert spans[-1][0] + spans[-1][1] == length  # the last window reaches the end


@pytest.mark.tf_only
def test_the_serving_graph_cuts_the_python_windows():
    import tensorflow as tf

    for room in (1, 2, 3, 5, 8, 13):
        for stride in range(1, room + 1):
            lengths = list(range(1, 40))
            example, start, length = windows.graph_windows(
                tf, tf.constant(lengths, tf.int32), tf.fill([len(lengths)], room), stride)
            graph = {}
            for e, s, n in zip(example.numpy().tolist(), start.numpy().tolist(), length.numpy().tolist()):
                graph.setdefault(lengths[e], []).append((s, n))
            assert graph == {n: windows.doc_spans(n, room, stride) for n in lengths}, (room, stride)


@pytest.mark.one_backend
def test_the_python_features_cut_doc_spans_windows():
    """run_squad's features (one piece per word here) have one window per `doc_spans` span, and each doc
    token's max-context window is `is_max_context`'s."""
    for words, seq_length, stride in ((7, 10, 2), (20, 12, 3), (30, 16, 5), (9, 9, 1)):
        example = SquadExample("q", "who", tuple(f"w{i}" for i in range(words)))
        tokens = {"who": [1]}
        tokens.update({f"w{i}": [10 + i] for i in range(words)})
        features = features_wordpiece.convert_examples_to_features(
            [example], tokens.__getitem__, seq_length, stride, 4, special={"cls": 101, "sep": 102})
        room = windows.max_tokens_for_doc(seq_length, 1, 3)
        spans = windows.doc_spans(words, room, stride)
        assert [sorted(f.token_to_orig_map.values()) for f in features] == [
            list(range(start, start + n)) for start, n in spans]
        for index, feature in enumerate(features):
            for position, word in feature.token_to_orig_map.items():
                assert feature.token_is_max_context[position] == windows.is_max_context(spans, index, word)


@pytest.mark.one_backend
def test_the_length_check():
    assert windows.check_lengths(384, 64, 128, 3) == (317, None)
    assert windows.check_lengths(384, 64, 318, 3) == (317, windows.STRIDE_TOO_LONG)
    assert windows.check_lengths(384, 64, 0, 3) == (317, windows.STRIDE_TOO_LONG)
    assert windows.check_lengths(67, 64, 1, 3) == (0, windows.NO_ROOM)
    assert windows.check_lengths(24, 8, 4, 4) == (12, None)  # RoBERTa's `<s> Q </s></s> D </s>`
