"""The official SQuAD evaluations, v1.1 and v2.0: kept under this name for its users; the code is
`keras_pretrain.tasks.question_answering.evaluation`."""

from keras_pretrain.tasks.question_answering.evaluation import answer_tokens  # noqa: F401
from keras_pretrain.tasks.question_answering.evaluation import apply_no_answer_threshold  # noqa: F401
from keras_pretrain.tasks.question_answering.evaluation import best_threshold  # noqa: F401
from keras_pretrain.tasks.question_answering.evaluation import compute_exact  # noqa: F401
from keras_pretrain.tasks.question_answering.evaluation import compute_f1  # noqa: F401
from keras_pretrain.tasks.question_answering.evaluation import evaluate  # noqa: F401
from keras_pretrain.tasks.question_answering.evaluation import evaluate_v1  # noqa: F401
from keras_pretrain.tasks.question_answering.evaluation import evaluate_v2  # noqa: F401
from keras_pretrain.tasks.question_answering.evaluation import exact_match_score  # noqa: F401
from keras_pretrain.tasks.question_answering.evaluation import f1_score  # noqa: F401
from keras_pretrain.tasks.question_answering.evaluation import has_answer  # noqa: F401
from keras_pretrain.tasks.question_answering.evaluation import is_v2  # noqa: F401
from keras_pretrain.tasks.question_answering.evaluation import normalize_answer  # noqa: F401
from keras_pretrain.tasks.question_answering.evaluation import questions  # noqa: F401
from keras_pretrain.tasks.question_answering.evaluation import raw_scores  # noqa: F401
from keras_pretrain.tasks.question_answering.evaluation import read_dataset  # noqa: F401
from keras_pretrain.tasks.question_answering.evaluation import read_na_probs  # noqa: F401
from keras_pretrain.tasks.question_answering.evaluation import read_predictions  # noqa: F401
from keras_pretrain.tasks.question_answering.evaluation import summary  # noqa: F401
