"""Encoder SavedModels with TF-Hub (TF2 reusable SavedModel) signatures.

`export_encoder(model, path)` writes the encoder of any family; what it takes
and returns is the family's contract (`keras_pretrain.export.contracts`):

- BERT-like (bert, albert, ernie) and RoBERTa-like (roberta, distil_bert):
  `obj(inputs, training=False)` with `inputs` a dict of `input_word_ids`,
  `input_mask`, `input_type_ids` (int32 [B, T]; RoBERTa / DistilBERT also
  accept the dict without `input_type_ids`, and ignore it; ERNIE with task
  embeddings also accepts `input_task_ids`) returns `pooled_output` [B, H],
  `sequence_output` [B, T, H], `encoder_outputs` (list, one [B, T, H] per
  layer) and `default` (= `pooled_output`). RoBERTa / DistilBERT have no
  pooler in pretraining: their `pooled_output` is the first token's (`<s>` /
  `[CLS]`) hidden state, unless the backbone was built with a pooler.
  `obj.mlm(inputs)` (when `model` is a pretrainer) also takes
  `masked_lm_positions` [B, P] and adds `mlm_logits` [B, P, V] and, when the
  pretrainer has a sentence head, `<name>_logits` [B, 2] (`sop_logits` for
  ALBERT, `nsp_logits` for BERT / ERNIE).
- GPT: `obj(inputs)` with `input_word_ids`, `input_mask` returns `logits`
  [B, T, V], `sequence_output`, `encoder_outputs`; `obj.generate(
  input_word_ids, input_mask, max_length)` continues right-padded prompts
  greedily, in-graph (`tf.while_loop` over the key/value cache), returning
  `output_ids` [B, max_length] (the prompt tokens kept).
- XLNet: `obj(inputs)` with `input_word_ids`, `input_mask`, `input_type_ids`
  and optionally `mems` (float [B, L, M, H], the previous segment's
  memories) returns `sequence_output`, `default` (the last position, where
  XLNet's inputs put `<cls>`) and `mems` (the new memories [B, L, M', H]).
- ELMo: `obj(strings)` (sentences, tokens separated by spaces) and
  `obj.tokens(tokens, sequence_len)` (a [B, T] string tensor padded with ""
  and the lengths), as the TF-Hub ELMo module, return `word_emb` [B, T, D],
  `lstm_outputs1` ... `lstm_outputs<L>` [B, T, 2D], `elmo` [B, T, 2D] (the
  module's trainable `ScalarMix` of the L + 1 layers), `default` [B, 2D]
  (mean of `elmo` over the tokens) and `sequence_len` [B]. Character ids and
  `<S>` / `</S>` are computed in-graph; the boundaries are removed from the
  outputs. Only the mix is trainable (as TF-Hub's ELMo).

`obj(..., training=True)` (dropout on) is traced for the contract's main
input dict (the strings for ELMo); `obj.mlm`, `obj.tokens`, `obj.generate`
and the other input structures are inference-only (training=False).

Every encoder object has `variables`, `trainable_variables` and
`regularization_losses` (so `tensorflow_hub.KerasLayer` can fine-tune it;
`obj.mlm` has its own lists, with the heads),
the endpoint `serve` (= `obj.__call__`, `keras.layers.TFSMLayer`'s default)
and signatures for `saved_model_cli` (flat dicts: `encoder_outputs` become
`encoder_outputs_0`, ...): `serving_default`, plus `mlm` (masked-LM
pretrainers), `generate` (GPT), `with_memories` (XLNet), `default` and
`tokens` (ELMo; `serving_default` = `default`).

Export runs on the TensorFlow backend (the SavedModel holds TF graphs);
under JAX or PyTorch these functions raise a clear error
(`hub_modules.export` runs them in a TensorFlow subprocess).
"""

import os

from keras_pretrain.export.tracing import ExportError  # noqa: F401 (keras_pretrain.export.ExportError)
from keras_pretrain.export.tracing import require_tensorflow_backend
from keras_pretrain.export.tracing import set_variables
from keras_pretrain.export.tracing import tracing_context

# TF-Hub input name -> our input name.
TFHUB_INPUTS = {
    "input_word_ids": "token_ids",
    "input_mask": "padding_mask",
    "input_type_ids": "segment_ids",
}


def export_encoder(model, path, include_mlm=True, contract=None, scalar_mix=None, assets=(), family=None):
    """Writes `model` (backbone or task) as a TF-Hub TF2 encoder SavedModel.

    Args:
        model: a backbone, or a task with `.backbone` (a masked-LM pretrainer
            adds the `mlm` sub-object; an `ElmoEmbedder` gives its mix).
        path: the output folder.
        include_mlm: bool. Export the `mlm` sub-object when the model has a
            masked-LM head.
        contract: the `keras_pretrain.export.contracts.Contract` (or its name); default the family's
            (`keras_pretrain.families.family_of(model).contract`).
        scalar_mix: ELMo only: the `ScalarMix` of the `elmo` output (default
            the model's own, else an even mix).
        assets: files copied into the SavedModel's `assets/` (GPT ships its
            `vocab.json` / `merges.txt` there: its BPE runs in Python only).
        family: a family name, instead of `contract`: that family's contract.
    """
    from keras_pretrain import families
    from keras_pretrain.errors import ConfigError
    from keras_pretrain.export import contracts

    tf = require_tensorflow_backend()
    try:
        if contract is not None:
            contract = contracts.get(contract)
        else:
            contract = (families.get(family) if family else families.family_of(model)).contract
    except ConfigError as e:
        raise ExportError(f"{type(model).__name__}: no module contract: {e}") from None
    backbone = getattr(model, "backbone", model)
    missing = contract.missing_backbone_inputs(backbone)
    if missing:
        raise ExportError(
            f"{type(backbone).__name__}: the {contract.name!r} contract expects the "
            f"inputs {list(contract.backbone_inputs_needed)}; found {contracts.input_names(backbone)}."
        )
    scalar_mix = scalar_mix or contract.module_scalar_mix(model, backbone)
    layers = [backbone] + ([scalar_mix] if scalar_mix is not None else [])
    mlm_layers = contract.mlm_layers(model, backbone, include_mlm)
    root = tf.train.Checkpoint()  # plain trackable: list attributes allowed
    signatures = {}
    with tracing_context(tf):
        contract.write_endpoints(tf, root, model, backbone, signatures, mlm_layers, scalar_mix=scalar_mix)
    set_variables(root, layers, trainable=contract.trainable_layers(layers, scalar_mix))
    root.asset_files = [tf.saved_model.Asset(os.fspath(p)) for p in assets]
    tf.saved_model.save(root, path, signatures=signatures)
    return path

