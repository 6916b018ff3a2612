"""Weight-name maps for ERNIE (Hugging Face `ErnieModel` layout): BERT's plus task types."""

import dataclasses

from keras_pretrain.checkpoints.names import hf_prefix
from keras_pretrain.models import conversion
from keras_pretrain.models.bert import bert_convert


def backbone_config(config, source):
    kwargs = bert_convert.hf_backbone_config(config, source)
    kwargs["use_task_id"] = bool(config.get("use_task_id", False))
    kwargs["task_type_vocab_size"] = config.get("task_type_vocab_size", 3)
    return kwargs


def load_hf_backbone(backbone, loader, model_prefix="ernie."):
    bert_convert.load_hf_backbone(backbone, loader, model_prefix)
    if backbone.task_type_embedding is not None:
        p = hf_prefix(loader, model_prefix)
        loader.assign(backbone.task_type_embedding.embeddings, p + "embeddings.task_type_embeddings.weight")


def load_hf_pretrainer(pretrainer, loader, model_prefix="ernie."):
    load_hf_backbone(pretrainer.backbone, loader, model_prefix)
    bert_convert.load_hf_heads(pretrainer, loader)


def prepare(loader, kwargs, pretrainer):
    """The next-sentence head only when the folder has one (`ErnieForPreTraining`)."""
    return {"sentence_head": "cls.seq_relationship.weight" in loader}


def after_load(model, loader, pretrainer):
    if pretrainer and hf_prefix(loader, "ernie.") + "pooler.dense.weight" not in loader:
        # ErnieForMaskedLM has no pooler: ours stays as initialised (the MLM head never reads it).
        loader.problems = [p for p in loader.problems if ".pooler.dense." not in p]


HF_SPEC = dataclasses.replace(
    bert_convert.HF_SPEC,
    backbone="keras_pretrain.models.ernie.ernie_backbone:ErnieBackbone",
    pretrainer="keras_pretrain.models.ernie.ernie_pretrainer:ErniePretrainer",
    config=backbone_config, load_backbone=load_hf_backbone, prepare=prepare, after_load=after_load,
    heads=("cls.*", "classifier.*"),
)


def hf_config(folder):
    return conversion.hf_config(HF_SPEC, folder)


def convert_huggingface(folder, pretrainer=False, lowercase=None):
    """A Hugging Face ERNIE folder -> `ErniePretrainer` or `ErnieBackbone`.

    With `pretrainer=True` the next-sentence head is loaded when the folder
    has one (`ErnieForPreTraining`), left out otherwise (`ErnieForMaskedLM`,
    which also has no pooler).
    """
    return conversion.convert_huggingface(HF_SPEC, folder, pretrainer, lowercase)
