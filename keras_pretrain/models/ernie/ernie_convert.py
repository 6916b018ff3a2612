"""Weight-name maps for ERNIE (Hugging Face `ErnieModel` layout): BERT's plus task types."""

import os

from keras_pretrain.checkpoints.huggingface import read_json
from keras_pretrain.layers.activations import HF_ACTIVATIONS
from keras_pretrain.models.bert import bert_convert


def hf_config(folder):
    path = os.path.join(folder, "config.json")
    config = read_json(path)
    kwargs = bert_convert.backbone_config(config, path, HF_ACTIVATIONS)
    kwargs["use_task_id"] = bool(config.get("use_task_id", False))
    kwargs["task_type_vocab_size"] = config.get("task_type_vocab_size", 3)
    return kwargs


def load_hf_backbone(backbone, loader, model_prefix="ernie."):
    bert_convert.load_hf_backbone(backbone, loader, model_prefix)
    if backbone.task_type_embedding is not None:
        p = bert_convert.hf_prefix(loader, model_prefix)
        loader.assign(backbone.task_type_embedding.embeddings, p + "embeddings.task_type_embeddings.weight")


def load_hf_pretrainer(pretrainer, loader, model_prefix="ernie."):
    bert_convert.load_hf_pretrainer(pretrainer, loader, model_prefix)
    if pretrainer.backbone.task_type_embedding is not None:
        p = bert_convert.hf_prefix(loader, model_prefix)
        loader.assign(pretrainer.backbone.task_type_embedding.embeddings,
                      p + "embeddings.task_type_embeddings.weight")


def convert_huggingface(folder, pretrainer=False, lowercase=None):
    """A Hugging Face ERNIE folder -> `ErniePretrainer` or `ErnieBackbone`.

    With `pretrainer=True` the next-sentence head is loaded when the folder
    has one (`ErnieForPreTraining`), left out otherwise (`ErnieForMaskedLM`,
    which also has no pooler).
    """
    from keras_pretrain.checkpoints.huggingface import hf_loader
    from keras_pretrain.models.ernie.ernie_backbone import ErnieBackbone
    from keras_pretrain.models.ernie.ernie_pretrainer import ErniePretrainer

    backbone = ErnieBackbone(**hf_config(folder))
    ignore = bert_convert.HF_IGNORE if pretrainer else bert_convert.HF_IGNORE + ("cls.*", "classifier.*")
    loader = hf_loader(folder, ignore=ignore)
    if pretrainer:
        sentence_head = "cls.seq_relationship.weight" in loader
        model = ErniePretrainer(backbone, sentence_head=sentence_head)
        has_pooler = bert_convert.hf_prefix(loader, "ernie.") + "pooler.dense.weight" in loader
        load_hf_pretrainer(model, loader)
        if not has_pooler:
            # ErnieForMaskedLM has no pooler: ours stays as initialised (the MLM head never reads it).
            loader.problems = [p for p in loader.problems if ".pooler.dense." not in p]
    else:
        model = backbone
        load_hf_backbone(backbone, loader)
    loader.finish()
    return model, bert_convert.hf_tokenizer(folder, lowercase)

