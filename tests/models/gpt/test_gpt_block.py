"""GPT's TransformerDecoder against keras-hub's: same variables, same function, same gradients, same saved names."""

import keras
import keras_hub
import numpy as np
import pytest

from keras_pretrain.models.gpt.gpt_block import TransformerDecoder
from tests.block_parity import assert_config_round_trip
from tests.block_parity import assert_dropout_in_training_only
from tests.block_parity import assert_one_step_gives_the_same_weights
from tests.block_parity import assert_same_variables
from tests.block_parity import block_inputs
from tests.block_parity import same_weights
from tests.testing import assert_all_close

HIDDEN, HEADS, INTERMEDIATE, LENGTH = 16, 2, 32, 7


def pair(dropout=0.0, ours_dropout=None, seed=0):
    """keras-hub's decoder and ours (post-LN, as GPT-1) with identical random weights."""
    kwargs = dict(intermediate_dim=INTERMEDIATE, num_heads=HEADS, normalize_first=False, activation="gelu")
    reference = keras_hub.layers.TransformerDecoder(dropout=dropout, **kwargs)
    ours = TransformerDecoder(dropout=dropout if ours_dropout is None else ours_dropout, **kwargs)
    return same_weights(reference, ours, (2, LENGTH, HIDDEN), seed)


def inputs(seed=0):
    return block_inputs(LENGTH, HIDDEN, seed)  # padding on the right, as GPT's inputs


def test_same_variables_as_keras_hub():
    reference, ours = pair()
    assert_same_variables(reference, ours)


@pytest.mark.parametrize("use_attention_mask", [False, True])
@pytest.mark.parametrize("use_causal_mask", [True, False])
def test_inference_matches_keras_hub(use_attention_mask, use_causal_mask):
    """The fused path (no active dropout): causal mask, padding, a custom mask and fully masked rows."""
    reference, ours = pair(dropout=0.1)
    x, padding, attention = inputs()
    kwargs = dict(decoder_padding_mask=padding, use_causal_mask=use_causal_mask,
                  decoder_attention_mask=attention if use_attention_mask else None)
    expected = keras.ops.convert_to_numpy(reference(x, **kwargs))
    actual = ours(x, **kwargs)
    assert_all_close(actual, expected, atol=1e-5, what="inference outputs")
    if use_causal_mask:  # a real check: the causal mask changes the output
        no_causal = keras.ops.convert_to_numpy(reference(x, decoder_padding_mask=padding, use_causal_mask=False))
        assert np.abs(no_causal[0] - expected[0]).max() > 1e-2


def test_training_path_matches_keras_hub():
    """The explicit attention path (taken while dropout is active) at a rate that drops nothing."""
    reference, ours = pair(dropout=1e-9)
    x, padding, _ = inputs(1)
    expected = reference(x, decoder_padding_mask=padding)
    actual = ours(x, decoder_padding_mask=padding, training=True)
    assert_all_close(actual, expected, atol=1e-5, what="training-path outputs")


def test_gradients_match_keras_hub():
    """One SGD step through each layer (explicit attention path on ours) gives the same weights."""
    reference, ours = pair(ours_dropout=1e-9)
    assert_one_step_gives_the_same_weights(reference, ours, LENGTH, HIDDEN, "decoder_padding_mask")
    moved = max(np.abs(keras.ops.convert_to_numpy(w) - v).max()
                for w, v in zip(ours.weights, [keras.ops.convert_to_numpy(w) for w in pair()[1].weights]))
    assert moved > 1e-4  # the step changed the weights


def test_dropout_is_active_in_training_only():
    _, ours = pair(dropout=0.5)
    x, padding, _ = inputs()
    assert_dropout_in_training_only(ours, x, decoder_padding_mask=padding)


def test_cached_decoding_is_keras_hubs():
    """With a key/value cache (generation) the block is keras-hub's own call: same output and cache."""
    reference, ours = pair()
    x, _, _ = inputs(4)
    cache = np.zeros((3, 2, LENGTH, HEADS, HIDDEN // HEADS), "float32")
    expected, expected_cache = reference(x[:, :3], self_attention_cache=cache, self_attention_cache_update_index=0)
    actual, actual_cache = ours(x[:, :3], self_attention_cache=cache, self_attention_cache_update_index=0)
    assert_all_close(actual, expected, atol=1e-6, what="cached outputs")
    assert_all_close(actual_cache, expected_cache, atol=1e-6, what="cache")


def test_keras_file_of_keras_hubs_blocks_loads(tmp_path):
    """A `.keras` file of a model whose list of blocks are keras-hub's loads into one with ours: Keras names a
    list's saved layers after their class, so our class keeps keras-hub's name."""
    x, padding, _ = inputs(5)

    def model(block_class):
        features, mask = keras.Input((LENGTH, HIDDEN)), keras.Input((LENGTH,), dtype="int32")

        class Blocks(keras.layers.Layer):
            def __init__(self):
                super().__init__()
                # dropout 0.1: at inference keras-hub's block then takes keras' masked softmax, as ours (at
                # rate 0 it gives the all-padding sequence uniform attention, ours zeros, see the encoder's)
                self.blocks = [block_class(intermediate_dim=INTERMEDIATE, num_heads=HEADS, normalize_first=False,
                                           dropout=0.1) for _ in range(2)]

            def call(self, h, m):
                for block in self.blocks:
                    h = block(h, decoder_padding_mask=m)
                return h

        return keras.Model([features, mask], Blocks()(features, mask))

    keras.utils.set_random_seed(0)
    theirs = model(keras_hub.layers.TransformerDecoder)
    theirs.save_weights(tmp_path / "blocks.weights.h5")
    keras.utils.set_random_seed(1)
    ours = model(TransformerDecoder)
    ours.load_weights(tmp_path / "blocks.weights.h5")
    assert_all_close(ours([x, padding]), theirs([x, padding]), atol=1e-5, what="outputs after loading")


def test_config_round_trip():
    _, ours = pair(dropout=0.1)
    assert_config_round_trip(ours, TransformerDecoder, "keras_pretrain>TransformerDecoder")
