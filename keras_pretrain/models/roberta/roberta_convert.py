"""Weight-name maps for RoBERTa: Hugging Face layout -> ours (BERT's blocks, `lm_head`)."""

from keras_pretrain.checkpoints.names import HF
from keras_pretrain.checkpoints.names import hf_prefix
from keras_pretrain.models import conversion
from keras_pretrain.models.bert.bert_convert import hf_backbone_config
from keras_pretrain.models.bert.bert_convert import load_backbone
from keras_pretrain.models.block_weights import load_masked_lm_head

HF_IGNORE = ("lm_head.decoder.weight", "lm_head.decoder.bias", "*position_ids")


def backbone_config(config, source, use_pooler=False):
    kwargs = hf_backbone_config(config, source)
    kwargs["layer_norm_epsilon"] = config.get("layer_norm_eps", 1e-5)
    kwargs["padding_id"] = config.get("pad_token_id", 1)
    kwargs["use_pooler"] = use_pooler
    return kwargs


def hf_config(folder, use_pooler=False):
    kwargs = conversion.hf_config(HF_SPEC, folder)
    kwargs["use_pooler"] = use_pooler
    return kwargs


def load_hf_backbone(backbone, loader, model_prefix="roberta."):
    load_backbone(backbone, loader, HF, hf_prefix(loader, model_prefix))


def load_hf_heads(pretrainer, loader):
    h = "lm_head."
    load_masked_lm_head(
        loader, pretrainer.masked_lm_head, *HF.dense(h, "dense"),
        *HF.dense(h, "layer_norm"), h + "bias", HF.linear,
    )


def load_hf_pretrainer(pretrainer, loader, model_prefix="roberta."):
    load_hf_backbone(pretrainer.backbone, loader, model_prefix)
    load_hf_heads(pretrainer, loader)


def prepare(loader, kwargs, pretrainer):
    """The pooler is loaded (`use_pooler=True`) when the backbone's weights hold one."""
    has_pooler = hf_prefix(loader, "roberta.") + "pooler.dense.weight" in loader
    kwargs["use_pooler"] = has_pooler and not pretrainer
    if pretrainer and has_pooler:
        loader.ignore += ("*pooler.*",)
    return {}


def bpe_tokenizer(paths, lowercase, options):
    from keras_pretrain.models.roberta.roberta_tokenizer import RobertaTokenizer

    return RobertaTokenizer(vocabulary=paths[0], merges=paths[1])


HF_SPEC = conversion.HFSpec(
    backbone="keras_pretrain.models.roberta.roberta_backbone:RobertaBackbone",
    pretrainer="keras_pretrain.models.roberta.roberta_pretrainer:RobertaPretrainer",
    config=backbone_config, load_backbone=load_hf_backbone, load_heads=load_hf_heads, prepare=prepare,
    ignore=HF_IGNORE, heads=("lm_head.*", "classifier.*"),
    tokenizer_files=("vocab.json", "merges.txt"), tokenizer=bpe_tokenizer, tokenizer_options=False,
)


def hf_tokenizer(folder):
    """Our `RobertaTokenizer` from `vocab.json` + `merges.txt` (None if absent)."""
    return conversion.load_tokenizer(HF_SPEC, folder)


def convert_huggingface(folder, pretrainer=False):
    """A Hugging Face RoBERTa folder -> `RobertaPretrainer` or `RobertaBackbone`.

    The pooler is loaded (`use_pooler=True`) when the backbone's weights hold
    one (`RobertaModel`); `RobertaForMaskedLM` folders have none.
    """
    return conversion.convert_huggingface(HF_SPEC, folder, pretrainer)
