"""Knowledge distillation of a masked LM (DistilBERT's triple loss) as a Keras task."""

import keras
from keras import ops

from keras_pretrain.errors import ConfigError
from keras_pretrain.losses import cosine_embedding_loss
from keras_pretrain.losses import distillation_kl
from keras_pretrain.losses import masked_lm_loss
from keras_pretrain.models.task import backbone_inputs
from keras_pretrain.models.task import SubclassedTask
from keras_pretrain.models.task import ones_like


def _mlm_outputs(pretrainer, x, training):
    """(MLM logits at the masked positions, last hidden states) of an MLM pretrainer."""
    backbone = pretrainer.backbone
    inputs = {k: x[k] for k in backbone.input}
    hidden = backbone(inputs, training=training)["sequence_output"]
    logits = pretrainer.masked_lm_head(hidden, mask_positions=x["masked_lm_positions"], training=training)
    return logits, hidden


@keras.saving.register_keras_serializable(package="keras_pretrain")
class Distiller(SubclassedTask):
    """Trains `student` to imitate `teacher` on masked-LM data (Sanh et al., 2019).

    Loss = `alpha_ce` * KL(softmax(teacher/T) || softmax(student/T)) * T^2 over the masked
    positions (weights `masked_lm_weights`) + `alpha_mlm` * the student's masked-LM cross-entropy
    + `alpha_cos` * (1 - cos) between the student's and the teacher's last hidden states over real
    tokens (`padding_mask`). The teacher is frozen (`trainable=False`) and always run with
    `training=False` (no dropout). The loss lives in `compute_loss`, which Keras calls with `x` on
    every backend, so the teacher runs there.

    Any pair of our MLM pretrainers (`.backbone` + `.masked_lm_head`: `BertPretrainer`,
    `DistilBertPretrainer`, `RobertaPretrainer`, `ErniePretrainer`, ...) with the same
    vocabulary works; each reads the inputs its backbone declares (missing segment ids are
    zeros). The cosine term needs equal hidden sizes.

    Args:
        teacher: the teacher pretrainer (trained).
        student: the student pretrainer.
        temperature: float T.
        alpha_ce, alpha_mlm, alpha_cos: float weights of the three losses.

    `fit()` takes masked-LM feature dicts (`input_ids`, `input_mask`, `segment_ids`,
    `masked_lm_positions`, `masked_lm_ids`, `masked_lm_weights`). Metrics: `ce_loss` (the
    T^2-scaled KL), `mlm_loss`, `cos_loss`, `mlm_accuracy` (the student's).

    Example:
    ```python
    student = DistilBertPretrainer(DistilBertBackbone(...))
    initialize_student_from_teacher(teacher, student, layers=(0, 2, 4, 7, 9, 11))
    distiller = Distiller(teacher, student)
    distiller.fit(dataset)
    ```

    Reference: https://arxiv.org/abs/1910.01108
    """

    def __init__(self, teacher, student, temperature=2.0, alpha_ce=5.0, alpha_mlm=2.0, alpha_cos=1.0,
                 **kwargs):
        t_vocab, s_vocab = teacher.backbone.vocabulary_size, student.backbone.vocabulary_size
        if t_vocab != s_vocab:
            raise ConfigError(f"Distiller: teacher vocabulary ({t_vocab}) and student vocabulary "
                              f"({s_vocab}) differ; they must be the same.")
        t_hidden, s_hidden = teacher.backbone.hidden_dim, student.backbone.hidden_dim
        if alpha_cos and t_hidden != s_hidden:
            raise ConfigError(f"Distiller: the cosine loss needs equal hidden sizes, teacher has {t_hidden}, "
                              f"student {s_hidden}; use alpha_cos=0.")
        super().__init__(**kwargs)
        # Assigned after Model.__init__ so that every backend (torch too) tracks them.
        self.backbone = student.backbone
        self.preprocessor = None
        self.teacher = teacher
        self.student = student
        teacher.trainable = False
        self.temperature = float(temperature)
        self.alpha_ce = float(alpha_ce)
        self.alpha_mlm = float(alpha_mlm)
        self.alpha_cos = float(alpha_cos)
        self._mlm_loss = masked_lm_loss()
        self.ce_tracker = keras.metrics.Mean(name="ce_loss")
        self.mlm_tracker = keras.metrics.Mean(name="mlm_loss")
        self.cos_tracker = keras.metrics.Mean(name="cos_loss")
        self.accuracy_tracker = keras.metrics.SparseCategoricalAccuracy(name="mlm_accuracy")

    def call(self, inputs, training=False):
        logits, hidden = _mlm_outputs(self.student, inputs, training)
        return {"mlm": logits, "sequence_output": hidden}

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        teacher_logits, teacher_hidden = _mlm_outputs(self.teacher, x, training=False)
        teacher_logits = ops.stop_gradient(teacher_logits)
        teacher_hidden = ops.stop_gradient(teacher_hidden)
        weights = sample_weight if sample_weight is not None else ops.ones_like(y, "float32")
        ce = distillation_kl(teacher_logits, y_pred["mlm"], self.temperature, mask=weights)
        mlm = self._mlm_loss(y, y_pred["mlm"], sample_weight=weights)
        cos = cosine_embedding_loss(y_pred["sequence_output"], teacher_hidden, mask=x["padding_mask"])
        self.ce_tracker.update_state(ce)
        self.mlm_tracker.update_state(mlm)
        self.cos_tracker.update_state(cos)
        self.accuracy_tracker.update_state(y, y_pred["mlm"], sample_weight=weights)
        return self.alpha_ce * ce + self.alpha_mlm * mlm + self.alpha_cos * cos

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        return self.get_metrics_result()

    def is_feature_dict(self, x):
        return "masked_lm_ids" in x

    def adapt_features(self, features):
        x = {}
        for model in (self.teacher, self.student):
            x.update(backbone_inputs(model.backbone, features))
        x["masked_lm_positions"] = features["masked_lm_positions"]
        weights = features.get("masked_lm_weights")
        if weights is None:
            weights = ones_like(features["masked_lm_ids"])
        return x, features["masked_lm_ids"], weights

    def default_compile_args(self):
        # DistilBERT: Adam lr 5e-4, eps 1e-6, gradient clipping 5.0.
        return {"optimizer": keras.optimizers.Adam(5e-4, epsilon=1e-6, clipnorm=5.0)}

    def compile(self, optimizer="auto", **kwargs):
        kwargs.pop("loss", None)
        kwargs.pop("weighted_metrics", None)
        kwargs.pop("metrics", None)
        if optimizer == "auto":
            optimizer = self.default_compile_args()["optimizer"]
        keras.Model.compile(self, optimizer=optimizer, **kwargs)

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "teacher": keras.saving.serialize_keras_object(self.teacher),
            "student": keras.saving.serialize_keras_object(self.student),
            "temperature": self.temperature,
            "alpha_ce": self.alpha_ce,
            "alpha_mlm": self.alpha_mlm,
            "alpha_cos": self.alpha_cos,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["teacher"] = keras.saving.deserialize_keras_object(config["teacher"])
        config["student"] = keras.saving.deserialize_keras_object(config["student"])
        return cls(**config)
