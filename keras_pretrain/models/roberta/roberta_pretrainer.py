"""RoBERTa pretraining task: masked LM only (dynamic masking, FULL-SENTENCES).

`MaskedLMPretrainer` is BERT's pretrainer generalised to any backbone inputs
(RoBERTa and DistilBERT have no segment ids, ERNIE may have task ids) and an
optional sentence head; RoBERTa, DistilBERT and ERNIE pretrainers subclass it.
"""

import keras

from keras_pretrain.layers.activations import get_activation
from keras_pretrain.layers.masked_lm import MaskedLMHead
from keras_pretrain.models.bert.bert_backbone import bert_kernel_initializer
from keras_pretrain.models.bert.bert_pretrainer import PADDING_MASK
from keras_pretrain.models.bert.bert_pretrainer import SEGMENT_IDS
from keras_pretrain.models.bert.bert_pretrainer import TOKEN_IDS
from keras_pretrain.models.bert.bert_pretrainer import BertPretrainer
from keras_pretrain.models.task import Task
from keras_pretrain.models.task import feature
from keras_pretrain.models.task import ones_like
from keras_pretrain.optimizers import AdamW

# Feature names accepted for each backbone input.
INPUT_ALIASES = {
    "token_ids": TOKEN_IDS,
    "segment_ids": SEGMENT_IDS,
    "padding_mask": PADDING_MASK,
    "task_type_ids": ("task_type_ids", "task_ids"),
}


def backbone_inputs(backbone, features):
    """The inputs `backbone` takes, picked from a feature dict (any alias).

    Missing `segment_ids` / `task_type_ids` default to zeros (one segment,
    task 0). Works inside tf.data graphs and on NumPy arrays.
    """
    x = {}
    for name in backbone.input:
        aliases = INPUT_ALIASES.get(name, (name,))
        if any(a in features for a in aliases):
            x[name] = feature(features, *aliases)
        elif name in ("segment_ids", "task_type_ids"):
            x[name] = ones_like(feature(features, *TOKEN_IDS), "int32") * 0
        else:
            feature(features, *aliases)  # raises, naming what is missing
    return x


@keras.saving.register_keras_serializable(package="keras_pretrain")
class MaskedLMPretrainer(BertPretrainer):
    """Masked LM (+ optional sentence head) over any encoder backbone.

    BERT's pretraining network (`BertPretrainer`: keras-hub `MaskedLMHead`
    with tied embeddings at the gathered `masked_lm_positions`, optional 2-way
    sentence head on `pooled_output`), built over whatever inputs the backbone
    declares instead of BERT's three. Losses, metrics and feature-dict
    handling are `BertPretrainer`'s.

    Args:
        backbone: an encoder backbone with `token_embedding`,
            `vocabulary_size`, `activation`, `layer_norm_epsilon`.
        preprocessor: optional keras-hub preprocessor.
        sentence_head: bool. Add a 2-way head on `pooled_output` (the
            backbone must have one).

    Outputs: dict with `mlm` logits [B, P, V] (and the sentence logits).
    """

    default_sentence_head = False

    def mlm_activation(self, backbone):
        """The activation of the MLM head's transform (the backbone's)."""
        return backbone.activation

    def __init__(self, backbone, preprocessor=None, sentence_head=None, **kwargs):
        if sentence_head is None:
            sentence_head = self.default_sentence_head
        # === Layers ===
        self.backbone = backbone
        self.preprocessor = preprocessor
        init = lambda: bert_kernel_initializer(  # noqa: E731
            getattr(backbone, "initializer_range", 0.02)
        )
        self.masked_lm_head = MaskedLMHead(
            vocabulary_size=backbone.vocabulary_size,
            token_embedding=backbone.token_embedding,
            intermediate_activation=get_activation(self.mlm_activation(backbone)),
            layer_norm_epsilon=backbone.layer_norm_epsilon,
            kernel_initializer=init(),
            dtype=backbone.dtype_policy,
            name="mlm_head",
        )
        self.sentence_head = None
        if sentence_head:
            self.sentence_head = keras.layers.Dense(
                2,
                kernel_initializer=init(),
                dtype=backbone.dtype_policy,
                name=f"{self.sentence_output}_head",
            )

        # === Functional Model ===
        inputs = dict(backbone.input)
        inputs["masked_lm_positions"] = keras.Input(
            shape=(None,), dtype="int32", name="masked_lm_positions"
        )
        outputs = backbone({k: inputs[k] for k in backbone.input})
        results = {
            "mlm": self.masked_lm_head(
                outputs["sequence_output"],
                mask_positions=inputs["masked_lm_positions"],
            )
        }
        if self.sentence_head is not None:
            results[self.sentence_output] = self.sentence_head(
                outputs["pooled_output"]
            )
        # BertPretrainer.__init__ builds BERT's fixed inputs: skip it.
        Task.__init__(self, inputs=inputs, outputs=results, **kwargs)

        # === Config ===
        self.use_sentence_head = bool(sentence_head)

    def adapt_features(self, features):
        x = backbone_inputs(self.backbone, features)
        x["masked_lm_positions"] = features["masked_lm_positions"]
        y = {"mlm": features["masked_lm_ids"]}
        weights = features.get("masked_lm_weights")
        if weights is None:
            weights = ones_like(features["masked_lm_ids"])
        sample_weight = {"mlm": weights}
        if self.sentence_head is not None:
            labels = features[self.sentence_label]
            y[self.sentence_output] = labels
            sample_weight[self.sentence_output] = ones_like(labels)
        return x, y, sample_weight


@keras.saving.register_keras_serializable(package="keras_pretrain")
class RobertaPretrainer(MaskedLMPretrainer):
    """Masked LM on top of a `RobertaBackbone` (RoBERTa has no NSP).

    The LM head is fairseq's / Hugging Face's `lm_head`: dense + exact GELU
    (whatever the encoder's activation) + LayerNorm, then the tied word
    embeddings plus a bias, at the gathered `masked_lm_positions`.

    Train it on FULL-SENTENCES inputs with dynamic masking (a new mask every
    epoch), both from `keras_pretrain.data`:

    ```python
    dataset = pretraining_dataset(paths, tokenizer, objective="full_sentences",
                                  dynamic=True, seq_length=512)
    RobertaPretrainer(backbone).fit(dataset)
    ```

    `fit()` takes datasets of feature dicts (`input_ids`, `input_mask`,
    `masked_lm_positions`, `masked_lm_ids`, `masked_lm_weights`; other
    entries such as `segment_ids` / `next_sentence_labels` are ignored).

    Args:
        backbone: a `RobertaBackbone`.
        preprocessor: optional keras-hub preprocessor.

    Outputs: dict with `mlm` logits [B, P, V].
    """

    def mlm_activation(self, backbone):
        return "gelu"

    def __init__(self, backbone, preprocessor=None, **kwargs):
        kwargs.pop("sentence_head", None)
        super().__init__(backbone, preprocessor, sentence_head=False, **kwargs)

    def _config(self):
        return {}

    def default_compile_args(self):
        args = super().default_compile_args()
        # RoBERTa's Adam: beta2 0.98, eps 1e-6.
        args["optimizer"] = AdamW(
            1e-4, weight_decay=0.01, beta_2=0.98, epsilon=1e-6
        )
        return args
