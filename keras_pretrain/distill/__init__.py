"""Knowledge distillation: the `Distiller` task and student initialisation from a teacher."""

from keras_pretrain.distill.distiller import Distiller
from keras_pretrain.distill.initialization import DISTILBERT_LAYERS
from keras_pretrain.distill.initialization import initialize_student_from_teacher
