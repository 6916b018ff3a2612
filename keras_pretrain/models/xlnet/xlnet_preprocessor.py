"""XLNet's keras-hub preprocessor: strings (one or two segments) -> `token_ids`, `segment_ids`, `padding_mask`."""

import keras
import keras_hub

from keras_pretrain.models.preset_preprocessor import PresetPreprocessorMixin
from keras_pretrain.models.preset_preprocessor import preprocessing_function
from keras_pretrain.models.preset_preprocessor import sequence_length_property
from keras_pretrain.models.xlnet.xlnet_backbone import XLNetBackbone
from keras_pretrain.models.xlnet.xlnet_tokenizer import XLNetTokenizer

try:
    import tensorflow as tf
except ImportError:  # pragma: no cover - TF is a hard dependency
    tf = None

CLS_SEGMENT = 2  # `<cls>`'s segment id (the original `SEG_ID_CLS`; `keras_pretrain.data.packing.XLNET`)
PAD_SEGMENT = 0  # the segment id at padded positions (`keras_pretrain.data.packing.XLNET_PAD_SEGMENT`)


@keras.saving.register_keras_serializable(package="keras_pretrain")
class XLNetPreprocessor(PresetPreprocessorMixin, keras_hub.models.TextClassifierPreprocessor):
    """Strings (one or two segments) -> `token_ids`, `segment_ids`, `padding_mask`, in-graph.

    Packs XLNet's way (`keras_pretrain.data.packing.XLNET`, the original `run_classifier.py`):
    `A <sep> <cls>` and `A <sep> B <sep> <cls>`, segment ids 0 for `A <sep>`, 1 for `B <sep>` and 2 for
    `<cls>`, padded on the LEFT with `<pad>` (segment id 0, `padding_mask` 0), so the last position is
    always `<cls>`, the token `XLNetClassifier` reads. Segments are trimmed round-robin to
    `sequence_length` minus the 2 / 3 special tokens. `padding_mask` is 1 at real tokens (not the
    original `input_mask`, which is 1 at padding). These are the inputs of the family's text
    preprocessor (`keras_pretrain.models.text_preprocessor`).

    Call it on a batch of strings, or on a pair as `preprocessor((first, second), y=None)` (keras-hub reads
    a bare 2-tuple as `(x, y)`). XLNet has relative positions: `from_preset` uses keras-hub's default
    length (512) unless `sequence_length` is given.

    Args:
        tokenizer: an `XLNetTokenizer`.
        sequence_length: int. Packed length.
        truncate: "round_robin" (the family's packing) or "waterfall".

    Example:
    ```python
    preprocessor = XLNetPreprocessor(XLNetTokenizer(proto="spiece.model"), sequence_length=128)
    preprocessor(["a good film"])["token_ids"][0, -2:]  # <sep> <cls>
    ```
    """

    backbone_cls = XLNetBackbone
    tokenizer_cls = XLNetTokenizer

    def __init__(self, tokenizer, sequence_length=512, truncate="round_robin", **kwargs):
        # One code path (TF ops) eagerly and in graphs: the packed inputs cannot differ.
        kwargs.setdefault("_allow_python_workflow", False)
        super().__init__(tokenizer, sequence_length=sequence_length, truncate=truncate, **kwargs)
        self.mask_packer = None

    def build(self, input_shape):
        self.built = True
        ids = {name: self.tokenizer.token_to_id(getattr(self.tokenizer, f"{name}_token"))
               for name in ("cls", "sep", "pad")}
        self.pad_id = ids["pad"]

        def packer(sep, end, pad):
            return keras_hub.layers.MultiSegmentPacker(
                start_value=[], end_value=end, sep_value=sep, pad_value=pad, truncate=self.truncate,
                sequence_length=self.sequence_length, padding_side="left", _allow_python_workflow=False,
                dtype="int32",
            )

        self.packer = packer([ids["sep"]], [ids["sep"], ids["cls"]], ids["pad"])
        self.mask_packer = packer([1], [1, 1], 0)  # the same layout on ones: 1 at every real position

    @preprocessing_function
    def call(self, x, y=None, sample_weight=None):
        x = x if isinstance(x, tuple) else (x,)
        segments = tuple(self._ids(self.tokenizer(segment)) for segment in x)
        token_ids, segment_ids = self.packer(segments)
        padding_mask, _ = self.mask_packer(tuple(tf.ones_like(s) for s in segments))
        # keras-hub gives the end tokens the last segment's id; XLNet's `<cls>` (always last) has its own.
        last = tf.one_hot(tf.shape(segment_ids)[-1] - 1, tf.shape(segment_ids)[-1], dtype=tf.int32)
        segment_ids = segment_ids * (1 - last) + CLS_SEGMENT * last
        segment_ids = segment_ids * padding_mask + PAD_SEGMENT * (1 - padding_mask)
        x = {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": padding_mask}
        return keras.utils.pack_x_y_sample_weight(x, y, sample_weight)

    @staticmethod
    def _ids(ids):
        if not isinstance(ids, tf.RaggedTensor):
            ids = tf.RaggedTensor.from_tensor(ids) if ids.shape.rank == 2 else ids
        return tf.cast(ids, tf.int32)

    sequence_length = sequence_length_property("packer", "mask_packer")
