"""XLNet's sequence classifier: the generic one with XLNet's summary (last token, projection)."""

import keras

from keras_pretrain.models.xlnet.xlnet_backbone import RefusesInputMask
from keras_pretrain.models.xlnet.xlnet_backbone import XLNetBackbone
from keras_pretrain.models.xlnet.xlnet_preprocessor import XLNetPreprocessor
from keras_pretrain.tasks import SequenceClassifier


@keras.saving.register_keras_serializable(package="keras_pretrain")
class XLNetClassifier(RefusesInputMask, SequenceClassifier):
    """Classifies one sequence or a pair from the state of the last token.

    As `transformers`' `XLNetForSequenceClassification` with its defaults (`summary_type="last"`,
    `summary_use_proj`, tanh, `summary_last_dropout`): `logits = W_out dropout(tanh(W_s h[:, -1] + b_s)) +
    b_out`. XLNet inputs end with `<cls>` and are padded on the left, so the last position is always the class
    token. It refuses an `input_mask` input (the original code's is 1 at padding; see `refuse_input_mask`).

    Args:
        backbone: an `XLNetBackbone`.
        num_classes: int.
        preprocessor: optional preprocessor (`XLNetPreprocessor`: strings -> left-padded inputs).
        dropout: float, after the summary (`summary_last_dropout`).
    """

    backbone_cls = XLNetBackbone
    preprocessor_cls = XLNetPreprocessor
