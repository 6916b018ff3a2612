"""Training instances for every pretraining objective of the seeds.

Follows the original Google `create_pretraining_data.py` (BERT) and its ALBERT variant: a target length
(sometimes shorter, `short_seq_prob`), segments built from whole sentences, and a pair truncated to fit by
trimming the longer side, at random from its front or back. RoBERTa's FULL-SENTENCES / DOC-SENTENCES packing
and a contiguous LM stream are built on the same inputs.

Inputs are tokenized documents: a list of documents, each a list of sentences, each a list of token strings.
Builders take a `random.Random` and use it in the same order as the original scripts.
"""

import dataclasses
import itertools

from keras_pretrain.data.packing import BERT

CLS = "[CLS]"
SEP = "[SEP]"


@dataclasses.dataclass
class TrainingInstance:
    """One pretraining example.

    Args:
        tokens: list of token strings, including [CLS]/[SEP].
        segment_ids: list of int, one per token.
        is_random_next: bool. NSP: segment B comes from another document. SOP (ALBERT, which reuses the
            same field): the two segments are swapped. Written as `next_sentence_labels` (1 = True).
        masked_lm_positions: list of int, positions of the predicted tokens (ascending).
        masked_lm_labels: list of str, the original tokens at those positions.
    """

    tokens: list
    segment_ids: list
    is_random_next: bool = False
    masked_lm_positions: list = dataclasses.field(default_factory=list)
    masked_lm_labels: list = dataclasses.field(default_factory=list)

    @property
    def label(self):
        """The NSP / SOP label as an int (1 = random next, or swapped)."""
        return int(self.is_random_next)

    def __str__(self):
        # The readable form of the original script.
        return (
            f"tokens: {' '.join(self.tokens)}\n"
            f"segment_ids: {' '.join(str(x) for x in self.segment_ids)}\n"
            f"is_random_next: {self.is_random_next}\n"
            f"masked_lm_positions: {' '.join(str(x) for x in self.masked_lm_positions)}\n"
            f"masked_lm_labels: {' '.join(self.masked_lm_labels)}\n\n"
        )


def truncate_seq_pair(tokens_a, tokens_b, max_num_tokens, rng):
    """Truncate a pair in place to `max_num_tokens`, trimming the longer side from its front or back (one
    token at a time, one draw each, as the original; the lists are cut once at the end)."""
    a0, a1, b0, b1 = 0, len(tokens_a), 0, len(tokens_b)
    random = rng.random
    while (a1 - a0) + (b1 - b0) > max_num_tokens:
        if a1 - a0 > b1 - b0:
            if random() < 0.5:
                a0 += 1
            else:
                a1 -= 1
        elif random() < 0.5:
            b0 += 1
        else:
            b1 -= 1
    tokens_a[:] = tokens_a[a0:a1]
    tokens_b[:] = tokens_b[b0:b1]


def _pair_instance(tokens_a, tokens_b, is_random_next, cls_token, sep_token):
    tokens, segment_ids = BERT.pack_lists([tokens_a, tokens_b], cls_token, sep_token)
    return TrainingInstance(tokens, segment_ids, is_random_next)


def _target_length(max_num_tokens, short_seq_prob, rng):
    if rng.random() < short_seq_prob:
        return rng.randint(2, max_num_tokens)
    return max_num_tokens


def _random_segment(all_documents, document_index, target_b_length, rng):
    # The original: up to 10 tries to find another document, then sentences from a random start.
    for _ in range(10):
        random_document_index = rng.randint(0, len(all_documents) - 1)
        if random_document_index != document_index:
            break
    random_document = all_documents[random_document_index]
    random_start = rng.randint(0, len(random_document) - 1)
    tokens_b = []
    for j in range(random_start, len(random_document)):
        tokens_b.extend(random_document[j])
        if len(tokens_b) >= target_b_length:
            break
    return tokens_b


def _pairs_from_document(
    all_documents, document_index, max_seq_length, short_seq_prob, rng, sop, cls_token, sep_token
):
    # A generator: the caller masks each instance before the next is built, so the random draws come
    # in the original script's order (build, mask, build, mask ...).
    document = [s for s in all_documents[document_index] if s]
    max_num_tokens = max_seq_length - 3
    target_seq_length = _target_length(max_num_tokens, short_seq_prob, rng)
    current_chunk = []
    current_length = 0
    i = 0
    while i < len(document):
        segment = document[i]
        current_chunk.append(segment)
        current_length += len(segment)
        if i == len(document) - 1 or current_length >= target_seq_length:
            if current_chunk:
                a_end = 1
                if len(current_chunk) >= 2:
                    a_end = rng.randint(1, len(current_chunk) - 1)
                tokens_a = list(itertools.chain.from_iterable(current_chunk[:a_end]))
                if len(current_chunk) == 1 or (not sop and rng.random() < 0.5):
                    # Random next (NSP), or a one-sentence chunk (both scripts take a random segment).
                    is_random_next = True
                    target_b_length = target_seq_length - len(tokens_a)
                    tokens_b = _random_segment(all_documents, document_index, target_b_length, rng)
                    # Put the unused segments back for the next chunk.
                    i -= len(current_chunk) - a_end
                elif sop and rng.random() < 0.5:
                    is_random_next = True  # ALBERT: swapped order
                    tokens_b = list(itertools.chain.from_iterable(current_chunk[a_end:]))
                    tokens_a, tokens_b = tokens_b, tokens_a
                else:
                    is_random_next = False
                    tokens_b = list(itertools.chain.from_iterable(current_chunk[a_end:]))
                truncate_seq_pair(tokens_a, tokens_b, max_num_tokens, rng)
                if tokens_a and tokens_b:
                    yield _pair_instance(tokens_a, tokens_b, is_random_next, cls_token, sep_token)
            current_chunk = []
            current_length = 0
        i += 1


def create_nsp_instances(
    documents, max_seq_length, rng, short_seq_prob=0.1, cls_token=CLS, sep_token=SEP
):
    """BERT next-sentence-prediction pairs from tokenized documents (original algorithm).

    For each chunk of whole sentences reaching the target length, segment A is its first `a_end`
    sentences (random); B is the rest (is_random_next=False) or, with probability 0.5 or when the chunk has
    a single sentence, sentences from a random other document (is_random_next=True, unused sentences are
    put back).

    Args:
        documents: list of documents; a document is a list of sentences; a sentence a list of tokens.
        max_seq_length: int, length including [CLS] and the two [SEP].
        rng: `random.Random`.
        short_seq_prob: float, probability of a shorter random target length.
        cls_token, sep_token: str, the special tokens to insert.

    Returns:
        A list of unmasked `TrainingInstance`s, in document order.
    """
    return list(_sentence_pairs(documents, max_seq_length, short_seq_prob, rng, False, cls_token, sep_token))


def _sentence_pairs(documents, max_seq_length, short_seq_prob, rng, sentence_order, cls_token, sep_token):
    """The pairs of every non-empty document, in document order (NSP, or SOP with `sentence_order`)."""
    documents = [d for d in documents if any(d)]
    for index in range(len(documents)):
        yield from _pairs_from_document(
            documents, index, max_seq_length, short_seq_prob, rng, sentence_order, cls_token, sep_token
        )


def create_sop_instances(
    documents, max_seq_length, rng, short_seq_prob=0.1, cls_token=CLS, sep_token=SEP
):
    """ALBERT sentence-order-prediction pairs (original ALBERT algorithm).

    Two consecutive segments of the same document, in order (label 0) or swapped with probability 0.5
    (`is_random_next=True`, label 1). As in the ALBERT script, a chunk of a single sentence takes its second
    segment from a random document (label 1).

    Args: as `create_nsp_instances`.

    Returns:
        A list of unmasked `TrainingInstance`s.
    """
    return list(_sentence_pairs(documents, max_seq_length, short_seq_prob, rng, True, cls_token, sep_token))


def _pack_sentences(documents, max_seq_length, cross_documents, cls_token, sep_token, doc_separator):
    max_num_tokens = max_seq_length - 2
    instances = []
    current = []

    def flush():
        if current:
            tokens, segment_ids = BERT.pack_lists([current], cls_token, sep_token)
            instances.append(TrainingInstance(tokens, segment_ids, False))
        current.clear()

    for document in documents:
        if not cross_documents:
            flush()
        elif current and doc_separator:
            if len(current) + 1 >= max_num_tokens:
                flush()
            else:
                current.append(doc_separator)
        for sentence in document:
            if not sentence:
                continue
            if current and len(current) + len(sentence) > max_num_tokens:
                flush()
            # A sentence longer than a whole input is cut into pieces (no token is lost).
            for start in range(0, len(sentence), max_num_tokens):
                piece = sentence[start:start + max_num_tokens]
                if current and len(current) + len(piece) > max_num_tokens:
                    flush()
                current.extend(piece)
    flush()
    return instances


def create_full_sentences(
    documents, max_seq_length, cls_token=CLS, sep_token=SEP, doc_separator=SEP
):
    """RoBERTa FULL-SENTENCES: contiguous whole sentences packed up to `max_seq_length`, crossing documents.

    An extra `doc_separator` token marks each document boundary inside an input. No NSP (segment ids all 0,
    is_random_next False). A sentence longer than an input is cut into input-sized pieces.

    Args:
        documents: tokenized documents (list of list of list of str).
        max_seq_length: int, length including [CLS] and the final [SEP].
        cls_token, sep_token: str, tokens around each input.
        doc_separator: str or None, the token between documents ("[SEP]" for BERT vocabularies, "</s>" for
            RoBERTa's).

    Returns:
        A list of unmasked `TrainingInstance`s.
    """
    return _pack_sentences(documents, max_seq_length, True, cls_token, sep_token, doc_separator)


def create_doc_sentences(documents, max_seq_length, cls_token=CLS, sep_token=SEP):
    """RoBERTa DOC-SENTENCES: as FULL-SENTENCES but an input never crosses a document boundary.

    Args: as `create_full_sentences` (no separator is needed).

    Returns:
        A list of unmasked `TrainingInstance`s; the last input of a document may be shorter.
    """
    return _pack_sentences(documents, max_seq_length, False, cls_token, sep_token, None)


def create_lm_stream(documents, block_size, separator=None, drop_remainder=True):
    """One contiguous token stream over all documents, cut into blocks (causal / bidirectional LMs).

    Args:
        documents: tokenized documents (list of list of list of str).
        block_size: int, tokens per block (no special tokens are added around a block).
        separator: str or None, a token appended after each document (e.g. "</s>" or "[SEP]").
        drop_remainder: bool, drop the last, shorter block.

    Returns:
        A list of `TrainingInstance`s whose tokens are consecutive slices of the stream.
    """
    stream = []
    for document in documents:
        for sentence in document:
            stream.extend(sentence)
        if separator and document:
            stream.append(separator)
    instances = []
    for start in range(0, len(stream), block_size):
        block = stream[start:start + block_size]
        if len(block) < block_size and drop_remainder:
            break
        instances.append(TrainingInstance(block, [0] * len(block), False))
    return instances


OBJECTIVES = ("nsp", "sop", "full_sentences", "doc_sentences")


def create_instances(documents, objective, max_seq_length, rng, short_seq_prob=0.1, **kwargs):
    """Dispatch to the builder of `objective` ("nsp", "sop", "full_sentences", "doc_sentences").

    Args:
        documents: tokenized documents.
        objective: str, one of `OBJECTIVES`.
        max_seq_length: int.
        rng: `random.Random` (unused by the packing objectives).
        short_seq_prob: float, for "nsp" and "sop".
        **kwargs: passed on (special tokens, `doc_separator`).

    Returns:
        A list of unmasked `TrainingInstance`s.
    """
    return list(iter_instances(documents, objective, max_seq_length, rng, short_seq_prob, **kwargs))


def iter_instances(documents, objective, max_seq_length, rng, short_seq_prob=0.1, **kwargs):
    """As `create_instances`, lazily: mask each instance before taking the next one and the random draws
    come in the order of the original scripts (which mask each instance as soon as it is built)."""
    if objective in ("nsp", "sop"):
        cls_token, sep_token = kwargs.get("cls_token", CLS), kwargs.get("sep_token", SEP)
        return _sentence_pairs(documents, max_seq_length, short_seq_prob, rng, objective == "sop", cls_token,
                               sep_token)
    if objective == "full_sentences":
        return iter(create_full_sentences(documents, max_seq_length, **kwargs))
    if objective == "doc_sentences":
        return iter(create_doc_sentences(documents, max_seq_length, **kwargs))
    raise ValueError(f"Unknown objective {objective!r}; expected one of {OBJECTIVES}.")
