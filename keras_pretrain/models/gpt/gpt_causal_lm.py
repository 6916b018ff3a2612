"""GPT language model: next-token loss (L1), perplexity, cached generation."""

import sys

import keras
import keras_hub
import numpy as np
from keras import ops

from keras_pretrain.errors import ConfigError
from keras_pretrain.layers.masked_lm import MaskedLMAccuracy
from keras_pretrain.layers.masked_lm import MaskedLMLoss
from keras_pretrain.layers.masked_lm import MaskedLMPerplexity
from keras_pretrain.models import task
from keras_pretrain.models.task import TOKEN_IDS
from keras_pretrain.models.task import Task
from keras_pretrain.models.task import feature
from keras_pretrain.models.task import ones_like
from keras_pretrain.optimizers import AdamW
from keras_pretrain.models.gpt.gpt_backbone import GPTBackbone

# Aliases accepted for the padding mask in a feature dict (Hugging Face's too).
PADDING_MASK = task.PADDING_MASK + ("attention_mask",)


def shift_left(x, dtype=None):
    """`x[..., 1:]` followed by one zero on the last axis (same shape as `x`).

    Works inside a tf.data graph (on `tf.Tensor`s) and on arrays alike, like
    `keras_pretrain.models.task.ones_like`: `adapt_features` runs in both.
    """
    tf = sys.modules.get("tensorflow")
    if tf is not None and isinstance(x, tf.Tensor):
        if dtype is not None:
            x = tf.cast(x, dtype)
        return tf.concat([x[..., 1:], tf.zeros_like(x[..., :1])], axis=-1)
    x = np.asarray(x)
    if dtype is not None:
        x = x.astype(dtype)
    return np.concatenate([x[..., 1:], np.zeros_like(x[..., :1])], axis=-1)


def decoder_inputs(features):
    """`token_ids` and `padding_mask` from a dict using any usual name."""
    token_ids = feature(features, *TOKEN_IDS)
    padding_mask = None
    for name in PADDING_MASK:
        if name in features:
            padding_mask = features[name]
            break
    if padding_mask is None:
        padding_mask = ones_like(token_ids, "int32")
    return {"token_ids": token_ids, "padding_mask": padding_mask}


def lm_targets(inputs):
    """Next-token labels and their weights for decoder `inputs`.

    The label at position t is the token at t + 1; it counts (weight 1) when
    that token is real (padding_mask 1). The last position has no label.
    """
    return (
        shift_left(inputs["token_ids"]),
        shift_left(inputs["padding_mask"], "float32"),
    )


def lm_loss(name="lm_loss"):
    """Token cross-entropy averaged over the real next-token predictions.

    Keras' `SparseCategoricalCrossentropy(from_logits=True)` value, computed
    as `MaskedLMLoss` computes it (cheaper over a 40,478-word vocabulary).
    """
    return MaskedLMLoss(reduction="mean_with_sample_weight", name=name)


def make_sampler(name="greedy", k=None, p=None, temperature=1.0, seed=None):
    """A keras-hub sampler from command-line style options.

    Args:
        name: "greedy", "top_k", "top_p" or "random" (plain sampling).
        k: int, for "top_k" (default 10); optional cap for "top_p".
        p: float in (0, 1], for "top_p" (default 0.9).
        temperature: float > 0; logits are divided by it before the softmax.
        seed: int or None.
    """
    if temperature <= 0:
        raise ConfigError(f"temperature must be positive, got {temperature}.")
    if name == "greedy":
        return keras_hub.samplers.GreedySampler(temperature=temperature)
    if name == "top_k":
        k = 10 if k is None else int(k)
        if k < 1:
            raise ConfigError(f"top_k sampling needs k >= 1, got {k}.")
        return keras_hub.samplers.TopKSampler(k=k, seed=seed, temperature=temperature)
    if name == "top_p":
        p = 0.9 if p is None else float(p)
        if not 0.0 < p <= 1.0:
            raise ConfigError(f"top_p sampling needs 0 < p <= 1, got {p}.")
        return keras_hub.samplers.TopPSampler(p=p, k=k, seed=seed, temperature=temperature)
    if name == "random":
        return keras_hub.samplers.RandomSampler(seed=seed, temperature=temperature)
    raise ConfigError(
        f"Unknown sampler {name!r}; expected greedy, top_k, top_p or random."
    )


def empty_cache(backbone, batch_size, max_length, dtype):
    """A zero key/value cache [B, L, 2, T, heads, head_dim] for `backbone`."""
    head_dim = backbone.hidden_dim // backbone.num_heads
    shape = [batch_size, backbone.num_layers, 2, max_length, backbone.num_heads, head_dim]
    return ops.zeros(shape, dtype=dtype)


def cached_step(backbone, token_ids, cache, index):
    """One forward pass of a `GPTBackbone` over `token_ids` with a key/value cache.

    The decoding step of `GPTCausalLM.generate` and of the exported
    `generate` signature (`keras_pretrain.export.savedmodel`): keras-hub's
    `TransformerDecoder` self-attention cache, on the backbone's layers.

    Args:
        backbone: a `GPTBackbone`.
        token_ids: int [B, S] (S = 1 while decoding).
        cache: float [B, L, 2, T, heads, head_dim], every block's keys and
            values for the T positions of the whole sequence.
        index: int, the position of `token_ids[:, 0]`.

    Returns:
        `(logits [B, S, V], hidden_states [B, S, H], cache)`.
    """
    tokens = backbone.token_embedding(token_ids)
    positions = backbone.position_embedding(tokens, start_index=index)
    x = backbone.embeddings_add((tokens, positions))
    x = backbone.embeddings_dropout(x)
    caches = []
    for i, layer in enumerate(backbone.transformer_layers):
        x, next_cache = layer(
            x,
            self_attention_cache=cache[:, i, ...],
            self_attention_cache_update_index=index,
        )
        caches.append(next_cache)
    logits = backbone.token_embedding(x, reverse=True)
    return logits, x, ops.stack(caches, axis=1)


def _any_equal(inputs, values, padding_mask):
    """Where `inputs` holds any of `values`, within `padding_mask` (as keras-hub's generate)."""
    found = ops.equal(inputs, values[0])
    for value in values[1:]:
        found = ops.logical_or(found, ops.equal(inputs, value))
    return ops.logical_and(found, padding_mask)


@keras.saving.register_keras_serializable(package="keras_pretrain")
class GPTCausalLM(Task):
    """Next-token language model on a `GPTBackbone` (GPT-1's objective L1).

    Logits are the hidden states times the transposed token embedding (tied,
    no bias, as GPT-1). `fit()` takes a dict (or a dataset of dicts) with
    `token_ids` (aliases `input_ids`, `input_word_ids`) and optionally
    `padding_mask` (`input_mask`, `attention_mask`): the label of position t
    is token t + 1, weighted by whether it is real, and the loss is the mean
    over real predictions (`lm_loss`); metrics `perplexity` (exp of the mean
    token loss) and `accuracy`. `(x, y, sample_weight)` works as usual.

    `generate()` (keras-hub's `CausalLM`) samples with a key/value cache:
    the prompt is run once, then each new token costs one step of one token
    through every block (`call_with_cache`). Choose the sampler with
    `compile(sampler=...)` (see `make_sampler`: greedy, top-k, top-p, with a
    temperature). Without a preprocessor, pass
    `{"token_ids", "padding_mask"}` padded on the right to the total length,
    and `stop_token_ids=None` (or a tuple of ids).

    Args:
        backbone: a `GPTBackbone`.
        preprocessor: optional keras-hub preprocessor.

    Outputs: logits [B, T, V].

    Example:
    ```python
    lm = GPTCausalLM(GPTBackbone.from_preset("gpt_tiny"))
    lm.fit({"token_ids": ids, "padding_mask": mask}, epochs=1)
    lm.compile(sampler=make_sampler("top_p", p=0.9, seed=0))
    out = lm.generate({"token_ids": prompt, "padding_mask": prompt_mask},
                      stop_token_ids=None)
    ```

    Reference: https://cdn.openai.com/research-covers/language-unsupervised/language_understanding_paper.pdf
    (section 3.1); generation follows keras-hub's `GPT2CausalLM`.
    """

    backbone_cls = GPTBackbone
    preprocessor_cls = None

    def __init__(self, backbone, preprocessor=None, **kwargs):
        # === Layers ===
        self.backbone = backbone
        self.preprocessor = preprocessor

        # === Functional Model ===
        inputs = dict(backbone.input)
        hidden = backbone(inputs)["sequence_output"]
        logits = backbone.token_embedding(hidden, reverse=True)
        super().__init__(inputs=inputs, outputs=logits, **kwargs)

    def is_feature_dict(self, x):
        return any(name in x for name in TOKEN_IDS)

    def adapt_features(self, features):
        x = decoder_inputs(features)
        y, sample_weight = lm_targets(x)
        return x, y, sample_weight

    def default_compile_args(self):
        return {
            "optimizer": AdamW(2.5e-4, weight_decay=0.01),
            "loss": lm_loss(),
            "weighted_metrics": [
                MaskedLMPerplexity(name="perplexity"),
                MaskedLMAccuracy(name="accuracy"),
            ],
        }

    def compile(self, *args, sampler="greedy", **kwargs):
        """As `Task.compile`, plus `sampler` (a name or keras-hub sampler)."""
        super().compile(*args, **kwargs)
        self.sampler = keras_hub.samplers.get(sampler)
        self.generate_function = None

    # keras-hub's `CausalLM` generation driver (compiled per backend, batched
    # prompts, stop tokens). Borrowed rather than inherited: `CausalLM` and
    # our `Task` both derive from keras-hub's `Task`, and Keras' functional
    # class injection fails on that diamond.
    make_generate_function = keras_hub.models.CausalLM.make_generate_function
    generate = keras_hub.models.CausalLM.generate
    _normalize_generate_inputs = keras_hub.models.CausalLM._normalize_generate_inputs
    _normalize_generate_outputs = keras_hub.models.CausalLM._normalize_generate_outputs

    # --- Generation (the approach of keras-hub's GPT2CausalLM) -------------

    def call_with_cache(self, token_ids, cache, cache_update_index):
        """One forward pass over `token_ids` with a key/value cache.

        Args:
            token_ids: int [B, S] (S = 1 while decoding).
            cache: float [B, L, 2, T, heads, head_dim], every block's keys
                and values for the T positions of the whole sequence.
            cache_update_index: int, the position of `token_ids[:, 0]`.

        Returns:
            `(logits [B, S, V], hidden_states [B, S, H], cache)`.
        """
        return cached_step(self.backbone, token_ids, cache, cache_update_index)

    def _build_cache(self, token_ids):
        """An empty cache seeded with one pass over the whole prompt."""
        batch_size, max_length = ops.shape(token_ids)[0], ops.shape(token_ids)[1]
        cache = empty_cache(self.backbone, batch_size, max_length, self.compute_dtype)
        _, hidden_states, cache = self.call_with_cache(token_ids, cache, 0)
        return hidden_states, cache

    def generate_step(self, inputs, stop_token_ids=None):
        """Compilable generation of one batch (see keras-hub GPT2CausalLM)."""
        token_ids, padding_mask = inputs["token_ids"], inputs["padding_mask"]
        hidden_states, cache = self._build_cache(token_ids)
        row_lengths = ops.sum(ops.cast(padding_mask, "int32"), axis=-1)
        index = ops.min(row_lengths)

        def next(prompt, cache, index):
            cache_update_index = index - 1
            batch_size = ops.shape(prompt)[0]
            prompt = ops.slice(prompt, [0, cache_update_index], [batch_size, 1])
            logits, hidden_states, cache = self.call_with_cache(
                prompt, cache, cache_update_index
            )
            return (
                ops.squeeze(logits, axis=1),
                ops.squeeze(hidden_states, axis=1),
                cache,
            )

        token_ids = self.sampler(
            next=next,
            prompt=token_ids,
            cache=cache,
            index=index,
            mask=padding_mask,
            stop_token_ids=stop_token_ids,
            hidden_states=hidden_states,
            model=self,
        )
        if stop_token_ids is not None:
            end_locations = ops.cast(
                _any_equal(token_ids, stop_token_ids, ops.logical_not(padding_mask)),
                "int32",
            )
            cumsum = ops.cast(ops.cumsum(end_locations, axis=-1), "int32")
            overflow = cumsum - end_locations
            padding_mask = ops.logical_not(ops.cast(overflow, "bool"))
        else:
            padding_mask = ops.ones_like(token_ids, dtype="bool")
        return {"token_ids": token_ids, "padding_mask": padding_mask}

    def generate_ids(self, prompts, max_length, stop_token_ids=None):
        """Continues each prompt (a list of token ids) to `max_length` tokens.

        Returns a list of id lists (prompt included; cut after a stop token).
        """
        if max_length > self.backbone.max_sequence_length:
            raise ConfigError(
                f"max_length {max_length} exceeds the model's "
                f"{self.backbone.max_sequence_length} positions."
            )
        token_ids = np.zeros((len(prompts), max_length), "int32")
        padding_mask = np.zeros((len(prompts), max_length), "bool")
        for row, prompt in enumerate(prompts):
            if not 0 < len(prompt) <= max_length:
                raise ConfigError(
                    f"prompt {row} has {len(prompt)} tokens; expected 1 to "
                    f"max_length={max_length}."
                )
            token_ids[row, : len(prompt)] = prompt
            padding_mask[row, : len(prompt)] = True
        stop = tuple(stop_token_ids) if stop_token_ids else None
        out = self.generate(
            {"token_ids": token_ids, "padding_mask": padding_mask},
            stop_token_ids=stop,
        )
        ids = ops.convert_to_numpy(out["token_ids"])
        mask = ops.convert_to_numpy(out["padding_mask"])
        return [row[m.astype(bool)].tolist() for row, m in zip(ids, mask)]
