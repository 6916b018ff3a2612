"""TF-Hub-style modules for keras_pretrain models, every family, every backend.

A module folder (`export(model, out_dir, tokenizer=...)`):

    metadata.json    family, contract, backbone class + config, versions
                     (written last: a folder without it is incomplete)
    model.keras      the model (task or backbone): rebuilds on any backend
    tokenizer/       tokenizer.json + assets/ (vocab.txt / .spm / vocab.json +
                     merges.txt; GPT's Python BPE: vocab.json + merges.txt)
    encoder/         SavedModel with TF-Hub (TF2) signatures for the family's
                     contract (keras_pretrain.export.contracts / savedmodel)
    preprocessor/    SavedModel: strings -> encoder inputs, in-graph (families
                     with an in-graph tokenizer: BERT, ALBERT, ERNIE,
                     DistilBERT, RoBERTa, XLNet; not GPT, not ELMo, whose
                     encoder takes strings)
    classifier/1/    a classifier's serving SavedModel (TensorFlow Serving's
                     NAME/VERSION layout): strings -> logits, probabilities,
                     label_ids, labels, the tokenizer in the same graph
                     (keras_pretrain.export.serving; GPT: token ids in);
                     metadata.json's `serving` entry describes it

- `load(path)` returns a Keras layer (`HubEncoder`) with the module's input
  and output names, trainable in `model.fit` on TensorFlow, JAX and PyTorch;
  `load(path, savedmodel=True)` wraps `encoder/` in `keras.layers.TFSMLayer`
  (TensorFlow only). The SavedModels also load with `tf.saved_model.load`,
  `tensorflow_hub.KerasLayer` and serve under `saved_model_cli run`
  (`python -m keras_pretrain.export.saved_model_cli` for the preprocessors,
  which need the tensorflow-text ops).
- `load_model(path)` the saved model itself, `load_tokenizer(path)` its
  tokenizer, `read_metadata(path)` the checked metadata.
- `resolve(handle)` maps a registry handle (published ALBERT archives, ...) to
  a local file, never downloading.
"""

from hub_modules.exporting import export
from hub_modules.loading import HubEncoder
from hub_modules.loading import load
from hub_modules.loading import load_model
from hub_modules.loading import load_tokenizer
from hub_modules.loading import read_metadata
from hub_modules.registry import HANDLES
from hub_modules.registry import resolve
