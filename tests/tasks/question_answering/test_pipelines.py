"""The SQuAD pipeline is what the tokenizer declares (`squad_pipeline`), else its keras-hub base type's default,
and the recipe and the serving export both take it from `pipelines.for_tokenizer`."""

import types

import keras_hub
import pytest

from keras_pretrain.tasks.question_answering import pipelines

pytestmark = pytest.mark.one_backend

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat"]


def test_each_tokenizer_class_declares_its_pipeline():
    from keras_pretrain.models.albert import AlbertTokenizer
    from keras_pretrain.models.bert import BertTokenizer
    from keras_pretrain.models.roberta import RobertaTokenizer
    from keras_pretrain.models.xlnet import XLNetTokenizer

    declared = {BertTokenizer: pipelines.WORDPIECE, RobertaTokenizer: pipelines.BYTE_LEVEL,
                AlbertTokenizer: pipelines.SENTENCEPIECE, XLNetTokenizer: pipelines.XLNET}
    for cls, pipeline in declared.items():
        assert pipelines.PIPELINES[cls.squad_pipeline] is pipeline, cls


def test_the_declaration_wins_over_the_base_type():
    from keras_pretrain.models.bert import BertTokenizer

    assert pipelines.for_tokenizer(BertTokenizer(vocabulary=VOCABULARY)) is pipelines.WORDPIECE

    class Declares(keras_hub.tokenizers.WordPieceTokenizer):
        squad_pipeline = "xlnet"

    assert pipelines.for_tokenizer(Declares(vocabulary=VOCABULARY)) is pipelines.XLNET
    assert pipelines.for_tokenizer(types.SimpleNamespace(squad_pipeline="sentencepiece")) is pipelines.SENTENCEPIECE


def test_keras_hub_base_types_default_and_others_have_none(tmp_path):
    from tests.models.roberta.fixtures import write_bpe_files

    assert pipelines.for_tokenizer(keras_hub.tokenizers.WordPieceTokenizer(vocabulary=VOCABULARY)) is \
        pipelines.WORDPIECE
    bpe = keras_hub.models.RobertaTokenizer(*write_bpe_files(tmp_path))  # keras-hub's: no declaration
    assert not hasattr(bpe, "squad_pipeline")
    assert pipelines.for_tokenizer(bpe) is pipelines.BYTE_LEVEL
    assert pipelines.for_tokenizer(object()) is None
    assert pipelines.for_tokenizer(types.SimpleNamespace(squad_pipeline="nothing")) is None


def test_the_pipelines_heads_and_layouts():
    assert [p.special_tokens for p in (pipelines.WORDPIECE, pipelines.BYTE_LEVEL, pipelines.SENTENCEPIECE,
                                       pipelines.XLNET)] == [3, 4, 3, 3]
    assert not pipelines.WORDPIECE.answer_class("v2.0") and not pipelines.BYTE_LEVEL.answer_class("v2.0")
    assert not pipelines.SENTENCEPIECE.answer_class("v1.1") and pipelines.SENTENCEPIECE.answer_class("v2.0")
    assert pipelines.XLNET.answer_class("v1.1") and pipelines.XLNET.answer_class("v2.0")


def test_the_recipe_and_the_serving_export_take_the_same_pipeline():
    from keras_pretrain.models.bert import BertTokenizer
    from keras_pretrain.tasks.question_answering import serving
    from recipes import finetune_squad_beam

    tokenizer = BertTokenizer(vocabulary=VOCABULARY)
    layout = serving.check_tokenizer(tokenizer)
    assert layout.pipeline is pipelines.for_tokenizer(tokenizer)
    assert isinstance(layout, serving.LAYOUTS[pipelines.for_tokenizer(tokenizer).name])
    for name, layout_class in serving.LAYOUTS.items():
        assert layout_class.pipeline is pipelines.PIPELINES[name]
        assert layout_class.special == layout_class.pipeline.special
    assert finetune_squad_beam.beam_layout(pipelines.XLNET, "v1.1") == "xlnet"
    assert finetune_squad_beam.beam_layout(pipelines.SENTENCEPIECE, "v2.0") == "albert"
    assert finetune_squad_beam.beam_layout(pipelines.SENTENCEPIECE, "v1.1") is None
    assert finetune_squad_beam.beam_layout(None, "v2.0") is None
