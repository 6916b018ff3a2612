"""Which SQuAD pipeline a tokenizer takes: the one place that decides it, for the recipe (`recipes.finetune --task
squad-*`: its features, head and post-processing) and for the serving export (`serving.check_tokenizer`: its
in-graph layout), so that the two cannot disagree.

Each tokenizer class declares its pipeline by name with a class attribute, `squad_pipeline` (our
`BertTokenizer`: "wordpiece", `RobertaTokenizer`: "byte_level", `AlbertTokenizer`: "sentencepiece",
`XLNetTokenizer`: "xlnet"); a tokenizer that declares none takes the default of its keras-hub base type, chosen
here only (keras-hub's WordPiece tokenizers: "wordpiece", its byte-level BPE ones: "byte_level"); any other has
no pipeline (`for_tokenizer` is None).

The pipelines:

- `WORDPIECE`: bert `run_squad.py` (`squad.read_squad`, `features_wordpiece`, the span head,
  `predictions.write_predictions`): `[CLS] Q [SEP] D [SEP]`, the doc in segment 1, each context word tokenized
  alone;
- `BYTE_LEVEL`: the same algorithm on RoBERTa's byte-level BPE: `<s> Q </s></s> D </s>`, one segment, each
  context word tokenized after a space, spans decoded from their bytes (`predictions.byte_level_text`), cased;
- `SENTENCEPIECE`: albert `squad_utils` (`squad.read_squad_examples`, `features_sentencepiece`): the span head and
  `write_predictions_sentencepiece` for v1.1, the answer-class head and `write_predictions_beam(layout="albert")`
  for v2.0;
- `XLNET`: xlnet `run_squad.py` (`features_xlnet`, `P <sep> Q <sep> <cls>`): the answer-class head and
  `write_predictions_beam(layout="xlnet")` for v1.1 and v2.0.

`register(pipeline)` adds one (a new tokenizer then declares its name).
"""

import dataclasses

from keras_pretrain.tasks.question_answering import predictions


@dataclasses.dataclass(frozen=True)
class Pipeline:
    """One SQuAD pipeline: its features' token layout, its reading and its heads.

    Attributes:
        name: what a tokenizer's `squad_pipeline` names.
        special: `(name, token)` of the special tokens looked up in the vocabulary (`cls`, `sep`, `pad`).
        separators: the separator tokens between the question and the doc (RoBERTa's `</s></s>`: 2).
        doc_segment: the doc's segment id (RoBERTa has one type: 0).
        raw_context: the authors read the context as raw text aligned by character (albert's and xlnet's
            `read_squad_examples`), not as run_squad's whitespace words.
        prefix_space: each context word is tokenized after a space (byte-level BPE: `Ġword`).
        cased: `get_final_text` keeps the case whatever the vocabulary (byte-level BPE).
        tokens_to_text: the text of a span's tokens (`predictions.wordpiece_text` / `byte_level_text`; None
            where the answer is sliced from the raw context).
        answer_class_versions: the SQuAD versions trained and served with the answer-class head
            (`BeamQuestionAnswering`); the others with the span head.
        beam_layout: the answer-class post-processing (`predictions.write_predictions_beam`'s `layout`).
    """

    name: str
    special: tuple = ()
    separators: int = 1
    doc_segment: int = 1
    raw_context: bool = False
    prefix_space: bool = False
    cased: bool = False
    tokens_to_text: object = None
    answer_class_versions: tuple = ()
    beam_layout: str = None

    @property
    def special_tokens(self):
        """The special tokens of a window (`[CLS] Q [SEP] D [SEP]`: 3; `<s> Q </s></s> D </s>`: 4)."""
        return 2 + self.separators

    def answer_class(self, version):
        """Whether SQuAD `version` ("v1.1", "v2.0") takes the answer-class head in this pipeline."""
        return version in self.answer_class_versions


WORDPIECE = Pipeline("wordpiece", special=(("cls", "[CLS]"), ("sep", "[SEP]"), ("pad", "[PAD]")),
                     tokens_to_text=predictions.wordpiece_text)
BYTE_LEVEL = Pipeline("byte_level", special=(("cls", "<s>"), ("sep", "</s>"), ("pad", "<pad>")), separators=2,
                      doc_segment=0, prefix_space=True, cased=True, tokens_to_text=predictions.byte_level_text)
SENTENCEPIECE = Pipeline("sentencepiece", special=(("cls", "[CLS]"), ("sep", "[SEP]")), raw_context=True,
                         answer_class_versions=("v2.0",), beam_layout="albert")
XLNET = Pipeline("xlnet", raw_context=True, answer_class_versions=("v1.1", "v2.0"), beam_layout="xlnet")

PIPELINES = {}


def register(pipeline):
    """Makes `pipeline` the one tokenizers declaring `pipeline.name` take; returns it."""
    PIPELINES[pipeline.name] = pipeline
    return pipeline


for _pipeline in (WORDPIECE, BYTE_LEVEL, SENTENCEPIECE, XLNET):
    register(_pipeline)


def declared(tokenizer):
    """The pipeline name `tokenizer` declares (`squad_pipeline`), else its keras-hub base type's default, else
    None."""
    name = getattr(tokenizer, "squad_pipeline", None)
    if name is not None:
        return name
    import keras_hub

    if isinstance(tokenizer, keras_hub.tokenizers.BytePairTokenizer):
        return BYTE_LEVEL.name
    if isinstance(tokenizer, keras_hub.tokenizers.WordPieceTokenizer):
        return WORDPIECE.name
    return None


def for_tokenizer(tokenizer):
    """The `Pipeline` of `tokenizer` (see the module docstring), or None when it has none."""
    return PIPELINES.get(declared(tokenizer))
