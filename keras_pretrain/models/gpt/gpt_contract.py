"""GPT-1's TF-Hub contract: `logits` over the (tied) vocabulary, and in-graph greedy generation."""

from keras_pretrain.export import contracts
from keras_pretrain.export import tracing
from keras_pretrain.models.gpt.gpt_causal_lm import cached_step
from keras_pretrain.models.gpt.gpt_causal_lm import empty_cache


class GPTContract(contracts.Contract):
    """GPT-1: `logits` over the (tied) vocabulary, and in-graph greedy generation."""

    name = "gpt"
    required = ("input_word_ids", "input_mask")
    optional = ()
    backbone_inputs_needed = ("token_ids", "padding_mask")
    mlm = False
    segment_ids = False
    serving_requires = "tensorflow"
    serving_takes_strings = False

    def outputs(self, backbone, inputs, training=None, scalar_mix=None):
        outputs = backbone(self.backbone_inputs(backbone, inputs), training=training)
        sequence = outputs["sequence_output"]
        return {
            "logits": backbone.token_embedding(sequence, reverse=True),
            "sequence_output": sequence,
            "encoder_outputs": list(outputs["encoder_outputs"]),
        }

    def extra_endpoints(self, tf, root, backbone, signatures, specs, concrete):
        inputs = [
            tf.TensorSpec([None, None], tf.int32, name="input_word_ids"),
            tf.TensorSpec([None, None], tf.int32, name="input_mask"),
            tf.TensorSpec([], tf.int32, name="max_length"),
        ]
        root.generate = tracing.tf_function(
            tf,
            lambda input_word_ids, input_mask, max_length: gpt_generate(
                tf, backbone, input_word_ids, input_mask, max_length
            ),
            input_signature=inputs,
        )
        signatures["generate"] = root.generate.get_concrete_function()


GPT_CONTRACT = contracts.register(GPTContract())


def gpt_generate(tf, backbone, token_ids, padding_mask, max_length):
    """Greedy continuation of right-padded prompts to `max_length` tokens, in-graph.

    Each step is the model's own (`keras_pretrain.models.gpt.gpt_causal_lm.cached_step`).
    """
    token_ids = tf.cast(token_ids, tf.int32)
    padding_mask = tf.cast(padding_mask, tf.int32)
    tf.debugging.assert_less_equal(
        max_length,
        tf.constant(backbone.max_sequence_length, tf.int32),
        message=f"max_length exceeds the model's {backbone.max_sequence_length} positions",
    )
    width = tf.shape(token_ids)[1]
    pad = tf.maximum(max_length - width, 0)
    ids = tf.pad(token_ids, [[0, 0], [0, pad]])[:, :max_length]
    keep = tf.pad(padding_mask, [[0, 0], [0, pad]])[:, :max_length] > 0
    cache = empty_cache(backbone, tf.shape(ids)[0], max_length, backbone.compute_dtype)
    _, _, cache = cached_step(backbone, ids, cache, 0)  # the prompts, in one pass
    start = tf.maximum(tf.reduce_min(tf.reduce_sum(tf.cast(keep, tf.int32), axis=1)), 1)
    positions = tf.range(max_length)[None, :]

    def body(index, ids, cache):
        logits, _, cache = cached_step(backbone, ids[:, index - 1 : index], cache, index - 1)
        chosen = tf.argmax(logits[:, 0, :], axis=-1, output_type=tf.int32)
        new = tf.where(keep[:, index], ids[:, index], chosen)
        ids = tf.where(positions == index, new[:, None], ids)
        return index + 1, ids, cache

    _, ids, _ = tf.while_loop(
        lambda index, ids, cache: index < max_length, body, (start, ids, cache)
    )
    return {"output_ids": ids}
