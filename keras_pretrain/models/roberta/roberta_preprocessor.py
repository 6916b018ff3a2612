"""RoBERTa's keras-hub preprocessor: strings (one or two segments) -> `token_ids`, `padding_mask`."""

import keras
import keras_hub

from keras_pretrain.models.preset_preprocessor import PresetPreprocessorMixin
from keras_pretrain.models.preset_preprocessor import check_file_exists
from keras_pretrain.models.preset_preprocessor import get_preset_loader
from keras_pretrain.models.roberta.roberta_backbone import RobertaBackbone
from keras_pretrain.models.roberta.roberta_tokenizer import RobertaTokenizer


@keras.saving.register_keras_serializable(package="keras_pretrain")
class RobertaPreprocessor(PresetPreprocessorMixin, keras_hub.models.RobertaTextClassifierPreprocessor):
    """Strings (one or two segments) -> `token_ids`, `padding_mask`, in-graph.

    keras-hub's `RobertaTextClassifierPreprocessor` on our `RobertaTokenizer`: it packs `<s> A </s>` and
    `<s> A </s></s> B </s>`, trims the segments round-robin to `sequence_length` minus the special tokens
    (the 2 / 4 of `keras_pretrain.data.packing.ROBERTA`), pads with `<pad>` on the right, and returns no
    segment ids (RoBERTa has one token type; `RobertaBackbone` takes `token_ids` and `padding_mask`). These
    are the ids and mask of the family's text preprocessor (`keras_pretrain.models.text_preprocessor`). Eager calls,
    `tf.function` and `tf.data` run the same TensorFlow ops (the tokenizer's and keras-hub's packer's).

    Call it on a batch of strings, or on a pair as `preprocessor((first, second), y=None)` (keras-hub reads
    a bare 2-tuple as `(x, y)`). `RobertaPreprocessor.from_preset(folder)` packs to the backbone's
    `max_sequence_length` less its `padding_id + 1` offset rows (514 positions: 512 tokens) unless
    `sequence_length` is given.

    Args:
        tokenizer: a `RobertaTokenizer` (or `FairseqRobertaTokenizer`).
        sequence_length: int. Packed length.
        truncate: "round_robin" (the family's packing) or "waterfall".

    Example:
    ```python
    preprocessor = RobertaPreprocessor(RobertaTokenizer(vocabulary=vocab, merges=merges), sequence_length=32)
    classifier = RobertaClassifier(backbone, num_classes=2, preprocessor=preprocessor)
    classifier.fit(["a good film", "a bad film"], [1, 0])
    ```
    """

    backbone_cls = RobertaBackbone
    tokenizer_cls = RobertaTokenizer

    @classmethod
    def from_preset(cls, preset, config_file="preprocessor.json", **kwargs):
        if "sequence_length" not in kwargs and not check_file_exists(preset, config_file):
            length = _preset_length(get_preset_loader(preset))
            if length:
                kwargs["sequence_length"] = length
        return super().from_preset(preset, config_file=config_file, **kwargs)

    @classmethod
    def _add_missing_kwargs(cls, loader, kwargs):
        # keras-hub's `RobertaClassifier.from_preset` / `TextClassifier.from_preset` build the preprocessor
        # here (not through `from_preset`): the same default length.
        length = _preset_length(loader)
        if "sequence_length" not in kwargs and length:
            kwargs["sequence_length"] = length
        return super()._add_missing_kwargs(loader, kwargs)

    def __init__(self, tokenizer, sequence_length=512, truncate="round_robin", **kwargs):
        # One code path (TF ops) eagerly and in graphs: the packed ids cannot differ (see `RobertaTokenizer`).
        kwargs.setdefault("_allow_python_workflow", False)
        super().__init__(tokenizer, sequence_length=sequence_length, truncate=truncate, **kwargs)

    def build(self, input_shape):
        self.packer = keras_hub.layers.MultiSegmentPacker(
            start_value=self.tokenizer.start_token_id, end_value=self.tokenizer.end_token_id,
            sep_value=[self.tokenizer.end_token_id] * 2, pad_value=self.tokenizer.pad_token_id,
            truncate=self.truncate, sequence_length=self.sequence_length, _allow_python_workflow=False,
        )
        self.built = True


def _preset_length(loader):
    """The preset backbone's token capacity: `max_sequence_length` less the `padding_id + 1` offset rows."""
    config = loader.config.get("config") or {}
    if not config.get("max_sequence_length"):
        return None
    return int(config["max_sequence_length"]) - int(config.get("padding_id", 1)) - 1
