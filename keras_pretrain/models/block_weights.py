"""Weight placing for blocks several families share (keras-hub layers).

The checkpoint readers (`keras_pretrain.checkpoints`) return arrays by name;
these functions put them onto the layers' variables.

Each function takes a `WeightLoader`, the Keras layer and a dict of
checkpoint names for the canonical parts of the block, plus `linear`, the
transform of dense kernels (`torch_linear` for PyTorch layouts, None for TF1
layouts that are already [in, out]). BERT's layout of a whole encoder
(embeddings, `encoder/layer_i`, pooler) and of its pretraining heads, which
ALBERT, ERNIE and RoBERTa checkpoints share, is placed here too.
"""

from keras_pretrain.checkpoints.names import HF
from keras_pretrain.checkpoints.names import bert_block_names
from keras_pretrain.checkpoints.weights import torch_linear

BLOCK_KEYS = (
    "query", "query_bias", "key", "key_bias", "value", "value_bias",
    "attention_output", "attention_output_bias",
    "attention_norm", "attention_norm_bias",
    "intermediate", "intermediate_bias", "output", "output_bias",
    "output_norm", "output_norm_bias",
)


def load_dense(loader, dense, kernel, bias, linear=None):
    loader.assign(dense.kernel, kernel, linear)
    loader.assign(dense.bias, bias)


def load_layer_norm(loader, norm, gamma, beta):
    loader.assign(norm.gamma, gamma)
    loader.assign(norm.beta, beta)


def load_attention(loader, attention, names, linear=None):
    """keras `MultiHeadAttention` (per-head einsum kernels) from dense ones."""
    for part, layer in (
        ("query", attention._query_dense),
        ("key", attention._key_dense),
        ("value", attention._value_dense),
    ):
        loader.assign(layer.kernel, names[part], linear, reshape=True)
        loader.assign(layer.bias, names[part + "_bias"], reshape=True)
    out = attention._output_dense
    loader.assign(out.kernel, names["attention_output"], linear, reshape=True)
    loader.assign(out.bias, names["attention_output_bias"])


def load_transformer_encoder(loader, layer, names, linear=None):
    """keras-hub `TransformerEncoder` (post-LN or pre-LN) from a name map."""
    load_attention(loader, layer._self_attention_layer, names, linear)
    load_layer_norm(
        loader,
        layer._self_attention_layer_norm,
        names["attention_norm"],
        names["attention_norm_bias"],
    )
    load_dense(
        loader,
        layer._feedforward_intermediate_dense,
        names["intermediate"],
        names["intermediate_bias"],
        linear,
    )
    load_dense(
        loader,
        layer._feedforward_output_dense,
        names["output"],
        names["output_bias"],
        linear,
    )
    load_layer_norm(
        loader,
        layer._feedforward_layer_norm,
        names["output_norm"],
        names["output_norm_bias"],
    )


def load_masked_lm_head(loader, head, dense, dense_bias, gamma, beta, bias, linear=None):
    """keras-hub `MaskedLMHead` (tied output embedding)."""
    load_dense(loader, head._intermediate_dense, dense, dense_bias, linear)
    load_layer_norm(loader, head._intermediate_layer_norm, gamma, beta)
    loader.assign(head._bias, bias)


def load_bert_embeddings(backbone, loader, layout, e):
    """Word, position and token-type tables and their LayerNorm under `e`.

    BERT, ALBERT, ERNIE and RoBERTa (whose position table is a plain
    `Embedding`) name them alike.
    """
    loader.assign(backbone.token_embedding.embeddings, layout.embedding(e, "word_embeddings"))
    position = backbone.position_embedding
    table = position.position_embeddings if hasattr(position, "position_embeddings") else position.embeddings
    loader.assign(table, layout.embedding(e, "position_embeddings"))
    loader.assign(backbone.segment_embedding.embeddings, layout.embedding(e, "token_type_embeddings"))
    load_layer_norm(loader, backbone.embeddings_layer_norm, *layout.norm(loader, e, "LayerNorm"))


def load_bert_encoder(backbone, loader, layout, p):
    """A BERT-style backbone (embeddings, `encoder/layer_i`, pooler) under `p`."""
    load_bert_embeddings(backbone, loader, layout, layout.scope(p, "embeddings"))
    for i, layer in enumerate(backbone.transformer_layers):
        block = layout.scope(p, layout.item("encoder/layer", i))
        load_transformer_encoder(loader, layer, bert_block_names(loader, layout, block), layout.linear)
    if backbone.pooled_dense is not None:  # RoBERTa's is optional
        load_dense(loader, backbone.pooled_dense, *layout.dense(p, "pooler/dense"), layout.linear)


def load_bert_heads(pretrainer, loader, layout):
    """The masked-LM and next-sentence heads (`cls/predictions`, `cls/seq_relationship`)."""
    t = layout.scope("", "cls/predictions/transform")
    bias = "cls/predictions/bias" if layout is HF else "cls/predictions/output_bias"
    load_masked_lm_head(
        loader, pretrainer.masked_lm_head, *layout.dense(t, "dense"),
        *layout.norm(loader, t, "LayerNorm"), layout.name("", bias), layout.linear,
    )
    if pretrainer.sentence_head is not None:
        if layout is HF:
            names = layout.dense("", "cls/seq_relationship")
        else:  # output_weights is [2, H]: the transpose of a Dense kernel.
            names = ("cls/seq_relationship/output_weights", "cls/seq_relationship/output_bias")
        load_dense(loader, pretrainer.sentence_head, *names, torch_linear)
