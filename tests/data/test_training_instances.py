import math
import random

import pytest

from keras_pretrain.data.instances import create_doc_sentences
from keras_pretrain.data.instances import create_full_sentences
from keras_pretrain.data.instances import create_instances
from keras_pretrain.data.instances import create_lm_stream
from keras_pretrain.data.instances import create_nsp_instances
from keras_pretrain.data.instances import create_sop_instances
from keras_pretrain.data.instances import truncate_seq_pair

pytestmark = pytest.mark.tf_only  # pure Python: once, in the TensorFlow run, is enough


def _tolerance(n, p, sigmas=4.5):
    return sigmas * math.sqrt(p * (1 - p) / n)


def _corpus(num_docs, num_sentences, sentence_len):
    # Token "d{doc}s{sentence}t{k}" tells where every token comes from.
    return [
        [[f"d{d}s{s}t{k}" for k in range(sentence_len)] for s in range(num_sentences)]
        for d in range(num_docs)
    ]


def _where(token):
    d, rest = token[1:].split("s")
    s, k = rest.split("t")
    return int(d), int(s), int(k)


def _segments(instance):
    tokens = instance.tokens
    first_sep = tokens.index("[SEP]")
    return tokens[1:first_sep], tokens[first_sep + 1:-1]


def test_nsp_structure_and_random_next_rate():
    docs = _corpus(num_docs=50, num_sentences=300, sentence_len=3)
    instances = create_nsp_instances(docs, 35, random.Random(0), short_seq_prob=0.0)
    n = len(instances)
    assert n > 1500
    for inst in instances:
        assert len(inst.tokens) <= 35
        assert inst.tokens[0] == "[CLS]" and inst.tokens[-1] == "[SEP]"
        a, b = _segments(inst)
        assert a and b
        assert inst.segment_ids == [0] * (len(a) + 2) + [1] * (len(b) + 1)
        da, db = _where(a[-1])[0], _where(b[0])[0]
        if not inst.is_random_next:
            assert da == db  # the true continuation comes from the same document, right after A
            assert _where(b[0])[1] >= _where(a[-1])[1]
        else:
            assert da != db
    # A one-sentence chunk is always random-next (the original); at most one such chunk per document
    # end, which bounds the bias.
    rate = sum(i.is_random_next for i in instances) / n
    assert abs(rate - 0.5) <= _tolerance(n, 0.5) + len(docs) / n


def test_sop_swap_rate_and_order():
    # Sentences of 4 tokens, target 32 = 8 sentences, 64 sentences per document: every chunk has 8
    # sentences, so every label comes from the 50% draw.
    docs = _corpus(num_docs=60, num_sentences=64, sentence_len=4)
    instances = create_sop_instances(docs, 35, random.Random(1), short_seq_prob=0.0)
    n = len(instances)
    assert n == 60 * 8
    for inst in instances:
        a, b = _segments(inst)
        (doc_a, sa, _), (doc_b, sb, _) = _where(a[0]), _where(b[0])
        assert doc_a == doc_b  # SOP never leaves the document
        assert (sa > sb) == inst.is_random_next  # label 1 = swapped
        assert inst.label == int(inst.is_random_next)
    swaps = sum(i.is_random_next for i in instances)
    assert abs(swaps / n - 0.5) <= _tolerance(n, 0.5)


def test_truncation_trims_the_longer_side_from_both_ends():
    fronts = backs = 0
    rng = random.Random(3)
    for _ in range(200):
        a, b = list(range(10)), list(range(100, 103))
        truncate_seq_pair(a, b, 8, rng)
        assert len(a) + len(b) == 8 and b == [100, 101, 102]
        fronts += a[0] != 0
        backs += a[-1] != 9
    assert fronts > 50 and backs > 50


def test_short_seq_prob_gives_shorter_targets():
    docs = _corpus(num_docs=10, num_sentences=100, sentence_len=1)
    full = create_nsp_instances(docs, 20, random.Random(0), short_seq_prob=0.0)
    short = create_nsp_instances(docs, 20, random.Random(0), short_seq_prob=1.0)
    mean = lambda xs: sum(len(i.tokens) for i in xs) / len(xs)  # noqa: E731
    assert mean(short) < mean(full) - 3


def _stream(docs):
    """Every token of `docs`, in order."""
    return [token for doc in docs for sentence in doc for token in sentence]


def test_full_sentences_packs_across_documents_with_separator():
    rng = random.Random(0)
    docs = [_corpus(1, rng.randint(1, 6), rng.randint(1, 7))[0] for _ in range(30)]
    docs = [[[t.replace("d0", f"d{i}") for t in s] for s in doc] for i, doc in enumerate(docs)]
    instances = create_full_sentences(docs, 24, doc_separator="[SEP]")
    inner = []
    crossing = 0
    for inst in instances:
        assert len(inst.tokens) <= 24 and inst.tokens[0] == "[CLS]" and inst.tokens[-1] == "[SEP]"
        assert set(inst.segment_ids) == {0} and not inst.is_random_next
        body = inst.tokens[1:-1]
        crossing += "[SEP]" in body
        # whole sentences only: starts with token 0 of a sentence, ends with the last
        assert _where(body[0])[2] == 0
        inner.append(body)
    assert crossing > 0
    flat = [t for body in inner for t in body]
    # Nothing lost, order kept; separators only between documents.
    assert [t for t in flat if t != "[SEP]"] == [t for t in _stream(docs)]
    for body in inner:
        for prev, nxt in zip(body, body[1:]):
            if prev != "[SEP]" and nxt != "[SEP]" and _where(prev)[0] != _where(nxt)[0]:
                pytest.fail("documents joined without a separator")


def test_doc_sentences_never_crosses_a_document():
    docs = [_corpus(1, 5 + i % 4, 3)[0] for i in range(20)]
    docs = [[[t.replace("d0", f"d{i}") for t in s] for s in doc] for i, doc in enumerate(docs)]
    instances = create_doc_sentences(docs, 16)
    for inst in instances:
        assert len(inst.tokens) <= 16
        assert len({_where(t)[0] for t in inst.tokens[1:-1]}) == 1
    assert [t for i in instances for t in i.tokens[1:-1]] == _stream(docs)


def test_long_sentence_is_cut_not_lost():
    docs = [[[f"d0s0t{k}" for k in range(25)]]]
    instances = create_doc_sentences(docs, 12)
    assert [len(i.tokens) for i in instances] == [12, 12, 7]


def test_lm_stream_blocks():
    docs = _corpus(3, 4, 5)
    blocks = create_lm_stream(docs, 16, separator="</s>")
    stream = [t for d in docs for t in [x for s in d for x in s] + ["</s>"]]
    assert all(len(b.tokens) == 16 for b in blocks)
    assert [t for b in blocks for t in b.tokens] == stream[: 16 * (len(stream) // 16)]
    assert len(create_lm_stream(docs, 16, drop_remainder=False)) == math.ceil(60 / 16)


@pytest.mark.parametrize("objective", ["nsp", "sop", "full_sentences", "doc_sentences"])
def test_same_seed_same_data(objective):
    docs = _corpus(8, 20, 3)
    one = create_instances(docs, objective, 32, random.Random(7))
    two = create_instances(docs, objective, 32, random.Random(7))
    assert one == two and len(one) > 5
    if objective in ("nsp", "sop"):
        assert one != create_instances(docs, objective, 32, random.Random(8))


def test_readable_form():
    inst = create_nsp_instances([[["a"], ["b"]], [["c"]]], 16, random.Random(0), 0.0)[0]
    text = str(inst)
    lines = text.splitlines()
    assert [line.split(":")[0] for line in lines[:5]] == [
        "tokens", "segment_ids", "is_random_next", "masked_lm_positions", "masked_lm_labels"
    ]
    assert lines[0].startswith("tokens: [CLS] ") and text.endswith("\n\n")


def test_bert_pair_packing_follows_the_layout():
    from keras_pretrain.data.packing import layout, pack_lists

    a, b = ["x1", "x2", "x3"], ["y1"]
    expected = ([], [])
    for part, type_id in layout("bert", 2):
        tokens = [a, b][part] if isinstance(part, int) else ["[CLS]" if part == "cls" else "[SEP]"]
        expected[0].extend(tokens)
        expected[1].extend([type_id] * len(tokens))
    assert pack_lists("bert", [a, b], "[CLS]", "[SEP]") == expected
    assert pack_lists("bert", [a, b], "[CLS]", "[SEP]", seq_length=9) == expected
    assert expected == (["[CLS]", "x1", "x2", "x3", "[SEP]", "y1", "[SEP]"], [0, 0, 0, 0, 0, 1, 1])
