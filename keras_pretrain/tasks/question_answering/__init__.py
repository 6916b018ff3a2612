"""Span question answering (SQuAD), in one place: the heads, the authors' feature pipelines, the doc-stride
windows, the post-processing, the official evaluation and the strings-in serving graphs.

- `span_head`: `SpanQuestionAnswering` (start / end logits, transformers' `*ForQuestionAnswering`), `SpanLoss`;
- `beam_head`: `BeamQuestionAnswering` (XLNet's and ALBERT v2's answer class and beam), `AnswerClassLoss`;
- `squad`: SQuAD JSON files -> examples, and the example / feature records;
- `windows`: THE doc-stride rule (`doc_spans`), the max-context check and the length check;
- `features_wordpiece` (bert `run_squad.py`, WordPiece and byte-level BPE), `features_sentencepiece` (albert
  `squad_utils`), `features_xlnet` (xlnet `run_squad.py`): examples -> features and TFRecord files;
- `predictions`: the answers from the logits or the beam (`write_predictions` and its variants);
- `evaluation`: the official SQuAD v1.1 / v2.0 evaluation;
- `serving`, `serving_sentencepiece`: question and context strings in, the answer out, in one TensorFlow graph;
- `pipelines`: which feature pipeline and answer layout a tokenizer takes (its `squad_pipeline` declaration).

Only the heads are imported here (the package is `keras_pretrain.tasks`' question-answering task); the other
modules are imported by name.
"""

from keras_pretrain.tasks.question_answering.beam_head import BEAM_OUTPUTS
from keras_pretrain.tasks.question_answering.beam_head import CLS
from keras_pretrain.tasks.question_answering.beam_head import CLS_INDEX
from keras_pretrain.tasks.question_answering.beam_head import FAMILY_CLS_POSITION
from keras_pretrain.tasks.question_answering.beam_head import IS_IMPOSSIBLE
from keras_pretrain.tasks.question_answering.beam_head import P_MASK
from keras_pretrain.tasks.question_answering.beam_head import AnswerClassLoss
from keras_pretrain.tasks.question_answering.beam_head import BeamQuestionAnswering
from keras_pretrain.tasks.question_answering.span_head import END
from keras_pretrain.tasks.question_answering.span_head import END_POSITIONS
from keras_pretrain.tasks.question_answering.span_head import FAMILY_DROPOUT
from keras_pretrain.tasks.question_answering.span_head import START
from keras_pretrain.tasks.question_answering.span_head import START_POSITIONS
from keras_pretrain.tasks.question_answering.span_head import SpanLoss
from keras_pretrain.tasks.question_answering.span_head import SpanQuestionAnswering
from keras_pretrain.tasks.question_answering.span_head import for_backbone
from keras_pretrain.tasks.question_answering.span_head import span_targets
