"""A linear-chain conditional random field (Lafferty et al., 2001) in Keras ops, as AllenNLP's
`ConditionalRandomField` (the CRF of Peters et al. 2018's NER tagger, AllenNLP's `crf_tagger`)."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_pretrain")
class ConditionalRandomField(keras.layers.Layer):
    """A linear-chain CRF over `num_tags` tags, AllenNLP's conventions:

        score(y | x) = start[y_1] + sum_t emissions[t, y_t] + sum_t transitions[y_{t-1}, y_t] + end[y_n]

    `transitions[i, j]` scores moving FROM tag i TO tag j; `start_transitions[j]` scores a sequence starting with
    tag j, `end_transitions[i]` one ending with tag i (both only with `include_start_end_transitions`, else they
    count zero). `log_likelihood` is `score(y | x) - log Z(x)`, `log Z` by the forward algorithm (log-sum-exp);
    `viterbi_decode` gives the arg-max sequence and its score.

    The mask `[B, T]` marks the positions that count (the real words; a label -100 masks its word out too). A
    sequence is its masked-in positions in order: a masked-out position is skipped (the transition runs from the
    previous kept tag to the next), so padding after the length, before it or inside it changes nothing; a row
    with no kept position has score, log Z and log-likelihood 0. Time is walked with `keras.ops.scan` (no Python
    loop over data), so it runs inside `fit`, compiled, on TensorFlow, JAX and PyTorch; it computes in the
    variables' dtype (float32 under mixed precision).

    Initialisation as AllenNLP: `transitions` Glorot normal, `start/end_transitions` standard normal.

    Args:
        num_tags: int, the number of tags C.
        include_start_end_transitions: bool, whether the start / end vectors exist (AllenNLP's argument).

    Call: `crf(emissions [B, T, C], mask [B, T])` -> the Viterbi tags `[B, T]` int32 (0 at masked positions).
    """

    def __init__(self, num_tags, include_start_end_transitions=True, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True  # the tags keep the mask of the emissions
        self.num_tags = num_tags
        self.include_start_end_transitions = include_start_end_transitions

    def build(self, input_shape=None):
        c = self.num_tags
        self.transitions = self.add_weight(shape=(c, c), initializer="glorot_normal", name="transitions")
        if self.include_start_end_transitions:
            normal = keras.initializers.RandomNormal(stddev=1.0)
            self.start_transitions = self.add_weight(shape=(c,), initializer=normal, name="start_transitions")
            self.end_transitions = self.add_weight(shape=(c,), initializer=normal, name="end_transitions")

    def _chain(self):
        """(transitions [C, C], start [C], end [C]) as tensors (zeros without start / end transitions)."""
        transitions = ops.convert_to_tensor(self.transitions)
        if not self.include_start_end_transitions:
            zeros = ops.zeros((self.num_tags,), transitions.dtype)
            return transitions, zeros, zeros
        return transitions, ops.convert_to_tensor(self.start_transitions), ops.convert_to_tensor(self.end_transitions)

    def _time_major(self, emissions, mask, *others):
        """emissions [T, B, C] in the variables' dtype, mask [T, B] bool (all True when None), others [T, B]."""
        emissions = ops.cast(emissions, self.transitions.dtype)
        mask = ops.ones(ops.shape(emissions)[:2], "bool") if mask is None else ops.cast(mask, "bool")
        swap = lambda x: ops.moveaxis(x, 1, 0)  # noqa: E731
        return (swap(emissions), swap(mask)) + tuple(swap(x) for x in others)

    def log_partition(self, emissions, mask=None):
        """log Z `[B]`: log-sum-exp of the scores of all C^n tag sequences of each row (the forward algorithm)."""
        transitions, start, end = self._chain()
        emissions, mask = self._time_major(emissions, mask)

        def step(carry, inputs):
            alpha, started = carry  # alpha [B, C]: log-sum-exp of the scores of the prefixes ending in each tag
            scores, kept = inputs
            moved = ops.logsumexp(alpha[:, :, None] + transitions[None], axis=1) + scores
            alpha = ops.where(kept[:, None], ops.where(started[:, None], moved, start + scores), alpha)
            carry = (alpha, ops.logical_or(started, kept))
            return carry, carry  # (TensorFlow's scan stacks outputs shaped as the carry)

        init = (ops.zeros_like(emissions[0]), ops.zeros_like(mask[0]))
        (alpha, started), _ = ops.scan(step, init, (emissions, mask))
        return ops.where(started, ops.logsumexp(alpha + end, axis=-1), 0.0)

    def sequence_score(self, emissions, tags, mask=None):
        """score(tags | emissions) `[B]` of the given tags `[B, T]` (any value where masked out)."""
        transitions, start, end = self._chain()
        emissions, mask, tags = self._time_major(emissions, mask, tags)
        tags = ops.where(mask, ops.cast(tags, "int32"), 0)
        flat = ops.reshape(transitions, (-1,))

        def step(carry, inputs):
            score, previous, started = carry
            scores, kept, tag = inputs
            emitted = ops.take_along_axis(scores, tag[:, None], axis=1)[:, 0]
            moved = ops.where(started, ops.take(flat, previous * self.num_tags + tag), ops.take(start, tag))
            carry = (score + ops.where(kept, emitted + moved, 0.0), ops.where(kept, tag, previous),
                     ops.logical_or(started, kept))
            return carry, carry

        init = (ops.zeros_like(emissions[0, :, 0]), ops.zeros_like(tags[0]), ops.zeros_like(mask[0]))
        (score, last, started), _ = ops.scan(step, init, (emissions, mask, tags))
        return score + ops.where(started, ops.take(end, last), 0.0)

    def log_likelihood(self, emissions, tags, mask=None):
        """log p(tags | emissions) `[B]` = score - log Z (0 for a row with nothing kept)."""
        return self.sequence_score(emissions, tags, mask) - self.log_partition(emissions, mask)

    def viterbi_decode(self, emissions, mask=None):
        """`(tags [B, T] int32, scores [B])`: the highest-scoring tag sequence of each row (0 at masked-out
        positions) and its score."""
        transitions, start, end = self._chain()
        emissions, mask = self._time_major(emissions, mask)
        identity = ops.arange(self.num_tags, dtype="int32")

        def forward(carry, inputs):
            delta, _, started = carry  # delta [B, C]: the best score of a prefix ending in each tag
            scores, kept = inputs
            candidates = delta[:, :, None] + transitions[None]  # [B, from, to]
            moved = ops.max(candidates, axis=1) + scores
            delta = ops.where(kept[:, None], ops.where(started[:, None], moved, start + scores), delta)
            # the best previous tag of each tag; at a skipped position (or the first kept one) each tag itself
            follows = ops.logical_and(kept, started)[:, None]
            pointers = ops.where(follows, ops.cast(ops.argmax(candidates, axis=1), "int32"), identity[None])
            carry = (delta, pointers, ops.logical_or(started, kept))
            return carry, carry

        init = (ops.zeros_like(emissions[0]), ops.zeros_like(emissions[0], "int32") + identity, ops.zeros_like(mask[0]))
        (delta, _, started), (_, pointers, _) = ops.scan(forward, init, (emissions, mask))
        totals = delta + end
        best = ops.cast(ops.argmax(totals, axis=-1), "int32")

        def backward(tag, pointers_t):  # tag [B]: the best tag at this position; the carry: the one before
            return ops.take_along_axis(pointers_t, tag[:, None], axis=1)[:, 0], tag

        _, tags = ops.scan(backward, best, pointers, reverse=True)
        tags = ops.where(mask, tags, 0)
        return ops.moveaxis(tags, 0, 1), ops.where(started, ops.max(totals, axis=-1), 0.0)

    def call(self, emissions, mask=None):
        return self.viterbi_decode(emissions, mask)[0]

    def compute_output_shape(self, emissions_shape, mask_shape=None):
        return tuple(emissions_shape[:2])

    def compute_output_spec(self, emissions, mask=None):
        return keras.KerasTensor(tuple(emissions.shape[:2]), dtype="int32")

    def get_config(self):
        config = super().get_config()
        config.update({"num_tags": self.num_tags,
                       "include_start_end_transitions": self.include_start_end_transitions})
        return config


def crf_mask(labels, num_tags, mask=None):
    """`(tags int32 [B, T], mask bool [B, T])` of labels: a label -100 (or any outside [0, C)) is masked out, as
    is every position `mask` (the real words) leaves out; the masked labels read 0."""
    labels = ops.cast(labels, "int32")
    kept = ops.logical_and(ops.greater_equal(labels, 0), ops.less(labels, num_tags))
    if mask is not None:
        kept = ops.logical_and(kept, ops.cast(mask, "bool"))
    return ops.where(kept, labels, 0), kept


def crf_loss(crf, labels, emissions, mask=None, sample_weight=None):
    """The CRF's training loss: the negative log-likelihood of the labelled sequences `[B, T]` (-100 = not
    counted), averaged over the rows (weighted by `sample_weight` [B] when given)."""
    tags, kept = crf_mask(labels, crf.num_tags, mask)
    nll = -crf.log_likelihood(emissions, tags, kept)
    if sample_weight is None:
        return ops.mean(nll)
    weights = ops.cast(ops.reshape(sample_weight, (-1,)), nll.dtype)
    return ops.divide_no_nan(ops.sum(nll * weights), ops.sum(weights))
