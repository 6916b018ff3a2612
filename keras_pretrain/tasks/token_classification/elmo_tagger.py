"""ELMo's named-entity tagger as its paper builds it (Peters et al. 2018, section 5; AllenNLP's `crf_tagger`): the
biLM's scalar mix over words -> BiLSTM -> Dense emissions -> a linear-chain CRF (or a softmax)."""

import keras
import keras_hub
from keras import ops

from keras_pretrain.errors import ConfigError
from keras_pretrain.tasks.token_classification.crf import ConditionalRandomField
from keras_pretrain.tasks.token_classification.crf import crf_loss
from keras_pretrain.tasks.token_classification.crf import crf_mask
from keras_pretrain.tasks.classification.head import character_mask
from keras_pretrain.tasks.classification.head import task_inputs
from keras_pretrain.tasks.token_classification.head import TaggingMixin
from keras_pretrain.tasks.token_classification.head import TokenAccuracy
from keras_pretrain.tasks.token_classification.head import TokenLoss


@keras.saving.register_keras_serializable(package="keras_pretrain")
class ElmoTagger(TaggingMixin, keras_hub.models.Task):
    """Tags the words of a sentence from ELMo vectors with a BiLSTM-CRF, as AllenNLP's `CrfTagger` (the model of
    Peters et al. 2018's CoNLL-2003 NER result; its `ner_elmo` configuration: 2 biLSTM layers of 200 units per
    direction, dropout 0.5, no start / end transitions):

        x = dropout(ELMo(char_ids))                      # the family's token states: the scalar mix [B, W, 2D]
        x = dropout(BiLSTM_k(... dropout(BiLSTM_1(x))))  # masked by the real words (`character_mask`)
        emissions = tag_projection(x)                    # Dense(num_classes) [B, W, C]
        tags = viterbi_decode(crf, emissions)            # or, without CRF, each word's arg-max

    The model returns `{"emissions": [B, W, C], "tags": [B, W] int32}` (tags 0 on padding words), so `predict`
    gives the decoded tags. The paper's tagger also concatenates GloVe vectors and its own character CNN to the
    ELMo vectors; here ELMo is the only input. The biLM is frozen by default (`trainable_backbone=False`, the
    feature-based use of the paper); the scalar mix always trains.

    `fit()` takes `(x, labels)` with int labels `[B, W]` (one per word: ELMo reads whole words, no sub-word
    alignment; -100 on the words to skip, such as the padding), or a feature dict with `labels` / `label_ids`.
    The loss is the task's own (`compute_loss`; a `loss` given to `compile` is not used): with the CRF, the
    negative log-likelihood of each sentence's labelled words averaged over the sentences (`crf_loss`; a -100
    word is left out of the chain; `sample_weight` weighs the sentences), else `TokenLoss` on the emissions, the
    mean cross-entropy over the labelled words as `TokenClassifier`'s. The compiled metrics receive the decoded
    tags one-hot (`TokenAccuracy`: the share of labelled words tagged right).

    Args:
        backbone: an `ElmoBackbone` (a family whose token states read characters).
        num_classes: int, the number of tags C.
        lstm_units: int, the units of each LSTM direction.
        lstm_layers: int, the stacked BiLSTM layers.
        use_crf: bool, decode and train with a CRF (else a softmax per word).
        include_start_end_transitions: bool, the CRF's start / end transition vectors.
        dropout: float, on the ELMo vectors and after each BiLSTM layer.
        trainable_backbone: bool, fine-tune the biLM too.
        preprocessor: optional preprocessor (`ElmoPreprocessor`: strings -> `char_ids`).
    """

    backbone_cls = None
    preprocessor_cls = None

    def __init__(self, backbone, num_classes, lstm_units=200, lstm_layers=2, use_crf=True,
                 include_start_end_transitions=False, dropout=0.5, trainable_backbone=False, preprocessor=None,
                 **kwargs):
        from keras_pretrain import families

        token_states = families.family_of(backbone).token_states
        if not token_states.characters:
            raise ConfigError(f"ElmoTagger: the backbone must read characters (an ELMo backbone); got "
                              f"{type(backbone).__name__}. TokenClassifier tags the tokens of the other families.")
        for name, value in (("num_classes", num_classes), ("lstm_units", lstm_units), ("lstm_layers", lstm_layers)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"ElmoTagger: {name} must be a positive int; got {value!r}.")
        if not isinstance(dropout, (int, float)) or not 0 <= dropout < 1:
            raise ConfigError(f"ElmoTagger: dropout must be a float in [0, 1); got {dropout!r}.")
        if not isinstance(use_crf, bool):
            raise ConfigError(f"ElmoTagger: use_crf must be True or False; got {use_crf!r}.")
        policy = backbone.dtype_policy
        # === Layers ===
        self.backbone = backbone
        self.preprocessor = preprocessor
        self._token_states = token_states
        self.trainable_backbone = trainable_backbone
        setattr(self, token_states.attribute, token_states.layer_class()(
            backbone, trainable_backbone=trainable_backbone, dropout=dropout, dtype=policy,
            name=token_states.layer_name))
        self.encoder_layers = [
            keras.layers.Bidirectional(keras.layers.LSTM(lstm_units, return_sequences=True, dtype=policy),
                                       dtype=policy, name=f"encoder_{i}")
            for i in range(lstm_layers)
        ]
        self.encoder_dropout = keras.layers.Dropout(dropout, dtype=policy, name="encoder_dropout")
        self.tag_projection = keras.layers.Dense(num_classes, dtype=policy, name="tag_projection")
        self.crf = None
        if use_crf:
            self.crf = ConditionalRandomField(num_classes, include_start_end_transitions, dtype=policy, name="crf")
        self.num_classes, self.use_crf = num_classes, use_crf  # before the functional init, which compiles

        # === Functional Model ===
        inputs = task_inputs(backbone, token_states)
        char_ids = inputs["char_ids"]
        mask = character_mask(char_ids)
        x = getattr(self, token_states.attribute)(char_ids)
        for layer in self.encoder_layers:
            x = self.encoder_dropout(layer(x, mask=mask))
        emissions = self.tag_projection(x)
        if use_crf:
            tags = self.crf(emissions, mask)
        else:
            tags = ops.where(mask, ops.cast(ops.argmax(emissions, axis=-1), "int32"), 0)
        super().__init__(inputs=inputs, outputs={"emissions": emissions, "tags": tags}, **kwargs)

        # === Config ===
        self.lstm_units = lstm_units
        self.lstm_layers = lstm_layers
        self.include_start_end_transitions = include_start_end_transitions
        self.dropout = dropout

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        emissions = y_pred["emissions"]
        char_ids = x["char_ids"] if isinstance(x, dict) else x
        if self.use_crf:
            loss = crf_loss(self.crf, y, emissions, character_mask(char_ids), sample_weight)
        else:
            if sample_weight is not None:
                raise ConfigError("ElmoTagger: sample weights need the CRF (use_crf=True: one weight per sentence); "
                                  "the softmax tagger marks the words to skip with the label -100.")
            tags, kept = crf_mask(y, self.num_classes, character_mask(char_ids))
            loss = TokenLoss()(ops.where(kept, tags, -100), emissions)
        for extra in self.losses:  # regularisation, if any
            loss = loss + ops.cast(ops.sum(extra), loss.dtype)
        return loss

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        decoded = ops.one_hot(y_pred["tags"], self.num_classes)
        return super().compute_metrics(x, y, decoded, sample_weight)

    def get_config(self):
        config = keras_hub.models.Task.get_config(self)
        config.update({"num_classes": self.num_classes, "lstm_units": self.lstm_units,
                       "lstm_layers": self.lstm_layers, "use_crf": self.use_crf,
                       "include_start_end_transitions": self.include_start_end_transitions,
                       "dropout": self.dropout, "trainable_backbone": self.trainable_backbone})
        return config

    def default_compile_args(self):
        return {"optimizer": self.default_optimizer(), "loss": None, "metrics": [TokenAccuracy()]}
