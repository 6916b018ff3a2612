"""Weight-name maps for ERNIE (Hugging Face `ErnieModel` layout): BERT's plus task types."""

import dataclasses

from keras_pretrain.checkpoints.names import hf_prefix
from keras_pretrain.models import conversion
from keras_pretrain.models import huggingface_export
from keras_pretrain.models.bert import bert_convert


def backbone_config(config, source):
    kwargs = bert_convert.hf_backbone_config(config, source)
    kwargs["use_task_id"] = bool(config.get("use_task_id", False))
    kwargs["task_type_vocab_size"] = config.get("task_type_vocab_size", 3)
    return kwargs


def hf_checks(kwargs, config_path, shapes):
    """BERT's size checks under `ernie.`, and the task-type table when the config uses one."""
    from keras_pretrain.checkpoints.checks import heads_divide

    heads_divide(config_path, "num_attention_heads", kwargs["num_heads"], "hidden_size", kwargs["hidden_dim"])
    p = hf_prefix(shapes, "ernie.")
    sizes, layers = bert_convert.size_checks(kwargs, bert_convert.HF, p)
    if kwargs["use_task_id"]:
        sizes.append(("task_type_vocab_size", kwargs["task_type_vocab_size"],
                      [(p + "embeddings.task_type_embeddings.weight", 0)]))
    return sizes, layers


def load_hf_backbone(backbone, loader, model_prefix="ernie."):
    bert_convert.load_hf_backbone(backbone, loader, model_prefix)
    if backbone.task_type_embedding is not None:
        p = hf_prefix(loader, model_prefix)
        loader.assign(backbone.task_type_embedding.embeddings, p + "embeddings.task_type_embeddings.weight")


def load_hf_pretrainer(pretrainer, loader, model_prefix="ernie."):
    load_hf_backbone(pretrainer.backbone, loader, model_prefix)
    bert_convert.load_hf_heads(pretrainer, loader)


def to_hf_config(backbone):
    config = bert_convert.to_hf_config(backbone)
    config.update(use_task_id=bool(backbone.use_task_id),
                  task_type_vocab_size=backbone.task_type_vocab_size)
    return config


# BERT's spec (the next-sentence head and the pooler only when the folder has them), ERNIE's names.
HF_SPEC = dataclasses.replace(
    bert_convert.HF_SPEC,
    backbone="keras_pretrain.models.ernie.ernie_backbone:ErnieBackbone",
    pretrainer="keras_pretrain.models.ernie.ernie_pretrainer:ErniePretrainer",
    config=backbone_config, load_backbone=load_hf_backbone, after_load=bert_convert.forgive_missing_pooler("ernie."),
    heads=("cls.*", "classifier.*"),
    model_type="ernie", architecture="Ernie", prefix="ernie.", to_config=to_hf_config,
    tasks=(conversion.sequence_classification("keras_pretrain.models.ernie.ernie_classifier:ErnieClassifier",
                                              bert_convert.load_hf_classifier_head, ("classifier.*",)),
           conversion.multiple_choice(bert_convert.load_hf_classifier_head, ("classifier.*",)),
           conversion.question_answering(),
           conversion.token_classification()),
)


def hf_config(folder):
    return conversion.hf_config(HF_SPEC, folder)


def export_huggingface(model, folder, tokenizer=None):
    """ERNIE backbone, pretrainer or classifier -> a Hugging Face folder (`ErnieModel`, ...)."""
    return huggingface_export.export_huggingface(HF_SPEC, model, folder, tokenizer)


def convert_huggingface(folder, pretrainer=False, lowercase=None, task=False):
    """A Hugging Face ERNIE folder -> `ErniePretrainer` or `ErnieBackbone`.

    With `pretrainer=True` the next-sentence head is loaded when the folder
    has one (`ErnieForPreTraining`), left out otherwise (`ErnieForMaskedLM`,
    which also has no pooler).
    """
    from keras_pretrain.checkpoints.checks import check_hf_folder
    from keras_pretrain.checkpoints.checks import tokenizer_note

    check_hf_folder(folder, HF_SPEC, hf_checks)
    return tokenizer_note(conversion.convert_huggingface(HF_SPEC, folder, pretrainer, lowercase, task), folder, HF_SPEC)
