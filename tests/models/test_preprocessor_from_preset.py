"""`<Family>Preprocessor.from_preset(folder)` packs to the model's own positions (issue 23, item 7)."""

import numpy as np
import pytest

from tests.hub_modules.fixtures import TRANSFORMER
from tests.hub_modules.fixtures import WORDPIECE

POSITIONS = 13  # not 512, not the keras-hub default: the backbone's own


def _backbone(family):
    if family == "albert":
        from keras_pretrain.models.albert import AlbertBackbone

        return AlbertBackbone(vocabulary_size=96, embedding_dim=8, max_sequence_length=POSITIONS, **TRANSFORMER)
    if family == "ernie":
        from keras_pretrain.models.ernie import ErnieBackbone

        return ErnieBackbone(vocabulary_size=len(WORDPIECE), max_sequence_length=POSITIONS, **TRANSFORMER)
    if family == "distil_bert":
        from keras_pretrain.models.distil_bert import DistilBertBackbone

        return DistilBertBackbone(vocabulary_size=len(WORDPIECE), max_sequence_length=POSITIONS, **TRANSFORMER)
    from keras_pretrain.models.bert import BertBackbone

    return BertBackbone(vocabulary_size=len(WORDPIECE), max_sequence_length=POSITIONS, **TRANSFORMER)


def _tokenizer(kind):
    if kind == "sentencepiece":  # the published ALBERT's
        from keras_pretrain.models.albert import AlbertTokenizer
        from tests.hub_modules.fixtures import _albert_proto

        return AlbertTokenizer(proto=_albert_proto())
    from keras_pretrain.models.bert import BertTokenizer  # what a pretraining run saves (any family)

    return BertTokenizer(vocabulary=WORDPIECE, lowercase=True)


@pytest.mark.parametrize(
    "family, preprocessor, tokenizer",
    [
        ("albert", "AlbertPreprocessor", "wordpiece"),
        ("albert", "AlbertPreprocessor", "sentencepiece"),
        ("bert", "BertPreprocessor", "wordpiece"),
        ("ernie", "BertPreprocessor", "wordpiece"),
        ("distil_bert", "BertPreprocessor", "wordpiece"),
    ],
)
def test_from_preset_defaults_to_the_models_positions(tmp_path, family, preprocessor, tokenizer):
    import keras_pretrain.models.albert as albert
    import keras_pretrain.models.bert as bert

    cls = getattr(albert if preprocessor.startswith("Albert") else bert, preprocessor)
    backbone, tok = _backbone(family), _tokenizer(tokenizer)
    preset = str(tmp_path / "preset")
    backbone.save_to_preset(preset)
    tok.save_to_preset(preset)

    loaded = cls.from_preset(preset)
    assert loaded.sequence_length == POSITIONS
    texts = ["the cat sat on the mat . " * 4, "猫坐在垫子上"]
    x = loaded(texts)
    assert np.asarray(x["token_ids"]).shape == (2, POSITIONS)
    x = {k: np.asarray(v) for k, v in x.items() if k in backbone.input}
    if "task_type_ids" in backbone.input:
        x["task_type_ids"] = np.zeros_like(x["token_ids"])
    out = backbone.predict(x, verbose=0)  # failed before: 512 ids against 13 positions
    assert np.asarray(out["sequence_output"]).shape[:2] == (2, POSITIONS)

    # An explicit length still wins; a saved preprocessor.json keeps its own.
    assert cls.from_preset(preset, sequence_length=8).sequence_length == 8
    cls(tokenizer=loaded.tokenizer, sequence_length=9).save_to_preset(preset)
    assert cls.from_preset(preset).sequence_length == 9
