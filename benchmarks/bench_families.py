"""Each family's own pretraining step, ours vs transformers (PyTorch) and keras-hub (issue "Performance for
every family", item 1).

    python -m benchmarks.cases family_step '{"family": "xlnet", "shape": "tiny", "rounds": 1}'

One process per (family, backend), by issue 45's rules (`benchmarks.harness`): the same threads for every
library (`threads`, default 1, set and printed: `set_threads`), ours (on KERAS_BACKEND) and every reference built
first, each runs one untimed warm-up step (it compiles), then `rounds` (>= 5) rounds each time one step of every
implementation, the order rotating between rounds. The ratios are paired: the median over rounds of reference
step / ours step (> 1: ours faster) with its min and max, so load changes on a shared machine hit both alike. Same
work everywhere: base sizes, batch 8, seq 128, float32, the family's objective and dropout (0.1; ALBERT 0, as its
config), AdamW(1e-4, weight decay 0.01) (ours: `keras_pretrain.optimizers.AdamW`; keras-hub: Keras' AdamW;
transformers: torch's), fixed random numpy batches, 15% of the tokens predicted by the masked-LM families (20 of
128), the losses only (no metrics on the Keras sides: the references compute none); transformers' masked-LM
decoders run on the hidden states gathered at the predicted positions, [B x P, H], as
ours (`fixtures.hf_mlm_loss`), and the trainable parameter counts of ours and transformers are checked equal and
printed (`harness.same_params`). With `torch_compile`, the transformers step also runs under `torch.compile`,
reported beside eager.

Work that differs, reported in each result's `notes`: keras-hub's `AlbertMaskedLM` has no SOP head (its
parameters printed beside); the torch ELMo is written here (see `_torch_elmo`).

Cost: base sizes take minutes per case on 2 cores (GPT: ~35 s per step each with 2 threads); ELMo base holds two
407M-parameter softmaxes with their AdamW state (estimated ~15 GB, not run here).
"""

import math
import time

import numpy as np

from benchmarks.fixtures import ENCODERS, GPT, TANH_GELU, TINY, gather_rows, hf_mlm_loss, keras_hub_build_first
from benchmarks.fixtures import mlm_batch, torch_train_step
from benchmarks.harness import QUICK_NO_TARGET, add_compiled_reference, best_matmul, mfu, ratio_text, same_params
from benchmarks.harness import matmul_shape_ceiling, time_steps, with_threads
from benchmarks.report import ceiling_text, failed, fmt, table

IMPLS = ("ours", "transformers", "keras_hub")
ERNIE = dict(L=12, H=768, A=12, I=3072, V=18000)  # ERNIE 1.0 base (relu, 513 positions, LayerNorm eps 1e-5)
XLNET = dict(L=12, H=768, A=12, I=3072, V=32000)  # XLNet-Base
XLNET_PREDICTIONS = 85  # targets per sequence (the original XLNet setting)
DISTILLATION = dict(temperature=2.0, alpha_ce=5.0, alpha_mlm=2.0, alpha_cos=1.0)  # the Distiller's defaults
ELMO_VOCABULARY = 793_471  # bilm-tf's 1B Word Benchmark softmax (train_elmo.py `n_tokens_vocab`)
ELMO_SAMPLES = 8192  # bilm-tf's `n_negative_samples_batch`


# --- Shared helpers -------------------------------------------------------------------------------------


def _dims(family, shape):
    """The sizes of `family` at `shape` ("base" or "tiny"): L, H, A, I, V (+ E for ALBERT; ELMo: L, H, C, V, S)."""
    if shape not in ("base", "tiny"):
        raise ValueError(f"shape must be 'base' or 'tiny', got {shape!r}")
    return DIMS[family](shape)


def _transformer_dims(base, factorised_embedding=False, feed_forward_4h=False):
    """`dims(shape)` of a transformer family: its `base` sizes, or TINY's, which keep the factorised embedding
    `E` only for a family that has one and set the feed-forward to 4 H where the reference fixes it there."""

    def dims(shape):
        if shape == "base":
            return dict(base)
        sizes = dict(TINY)
        if not factorised_embedding:
            del sizes["E"]
        if feed_forward_4h:
            sizes["I"] = 4 * sizes["H"]
        return sizes

    return dims


def _elmo_dims(shape):
    """ELMo's sizes at `shape`: layers, hidden (projection) and LSTM cell sizes, softmax words, samples."""
    config, vocabulary_size, num_sampled = _elmo_config(shape)
    return dict(L=config["num_layers"], H=config["hidden_dim"], C=config["lstm_dim"], V=vocabulary_size,
                S=num_sampled)


def _elmo_config(shape):
    """(ElmoBackbone config, softmax vocabulary, sampled candidates) of ELMo at `shape`.

    base: bilm-tf's original model (the `elmo_original` preset: 2 x LSTMP 4096 -> 512, 2048-channel char CNN,
    2 highway layers) with its 1B Word Benchmark softmax and 8192 samples; tiny: the family's demo
    configuration, 1000 words, 128 samples. Dropout 0.1 (the family's).
    """
    from keras_pretrain import families

    family = families.get("elmo")
    if shape == "tiny":
        config, vocabulary_size, num_sampled = dict(family.demo_config), 1000, 128
    else:
        config = dict(family.presets["elmo_original"]["config"])
        vocabulary_size, num_sampled = ELMO_VOCABULARY, ELMO_SAMPLES
    config["dropout"] = family.dropout
    return config, vocabulary_size, num_sampled


def _keras_params(model):
    """Trainable parameters of a Keras model (each variable once; no optimizer or memory state)."""
    seen = {id(v): v for v in model.trainable_weights}
    return int(sum(np.prod(v.shape) for v in seen.values()))


def _torch_params(model):
    return int(sum(p.numel() for p in model.parameters() if p.requires_grad))


# Losses only, no metrics, on the Keras sides (ours, keras-hub): the references compute none (the same work).
# GPT-1's default perplexity and accuracy are two more passes over the [B * T, 40478] logits (~2% of its step).
LOSSES_ONLY = {"metrics": None, "weighted_metrics": None}


def _ours_optimizer():
    from keras_pretrain.optimizers import AdamW

    return AdamW(1e-4, weight_decay=0.01)


def _keras_step(model, x, y=None, sample_weight=None):
    """`step()` running the model's own `train_on_batch` (its compiled train step); returns the loss."""

    def step():
        return float(model.train_on_batch(x, y, sample_weight=sample_weight, return_dict=True)["loss"])

    return step


def _torch_step(model, loss_fn):
    """`step()`: `loss_fn()` (forward with labels), backward, torch AdamW step, zero_grad; returns the loss
    (`fixtures.torch_train_step`: the step also has `.model` and `.compiled()`)."""
    return torch_train_step(model, loss_fn)


def _t(array, dtype="int64"):
    import torch

    return torch.from_numpy(np.ascontiguousarray(array).astype(dtype))


def _mlm_data(batch, seq, vocab, sentence_pairs=False):
    """A fixed masked-LM batch: ours' inputs, the targets, transformers' (B, T) labels (-100 elsewhere)."""
    predictions = math.ceil(0.15 * seq)
    ids, positions, labels, weights = mlm_batch(batch, seq, vocab, predictions)
    segments = np.zeros_like(ids)
    if sentence_pairs:
        segments[:, seq // 2:] = 1
    full_labels = np.full(ids.shape, -100, "int64")
    np.put_along_axis(full_labels, positions, labels, axis=1)
    sentence = (np.arange(batch) % 2).astype("int32")  # half the pairs in order / IsNext
    return dict(ids=ids, segments=segments, mask=np.ones_like(ids), positions=positions, labels=labels,
                weights=weights, full_labels=full_labels, sentence=sentence, predictions=predictions)


def _encoder_x(backbone, d, positions_name):
    """The inputs `backbone` declares (token ids, segment ids, padding mask) plus the masked positions."""
    x = {"token_ids": d["ids"], "segment_ids": d["segments"], "padding_mask": d["mask"]}
    return {**{k: v for k, v in x.items() if k in backbone.input}, positions_name: d["positions"]}


def _ours_mlm(pretrainer, d, sentence_output=None):
    """The train step of one of our `MaskedLMPretrainer`s on `_mlm_data` `d`."""
    pretrainer.compile(optimizer=_ours_optimizer(), **LOSSES_ONLY)  # the family's default losses
    x = _encoder_x(pretrainer.backbone, d, "masked_lm_positions")
    y, sw = {"mlm": d["labels"]}, {"mlm": d["weights"]}
    if sentence_output:
        y[sentence_output], sw[sentence_output] = d["sentence"], np.ones(len(d["sentence"]), "float32")
    return _keras_step(pretrainer, x, y, sw), _keras_params(pretrainer)


def _keras_hub_mlm(task_cls, backbone, d):
    """The train step of a keras-hub `*MaskedLM` (its default loss and metric, Keras' AdamW)."""
    import keras

    model = task_cls(backbone)
    model.compile(optimizer=keras.optimizers.AdamW(1e-4, weight_decay=0.01), **LOSSES_ONLY)
    x = _encoder_x(backbone, d, "mask_positions")
    keras_hub_build_first(model, x, d["labels"], d["weights"])  # its step traced once, as ours (untimed warm-up)
    return _keras_step(model, x, d["labels"], d["weights"]), _keras_params(model)


def _hf_mlm(model, encoder, mlm_head, d, extra=None, sentence_head=None):
    """The train step of a transformers masked-LM model doing ours' work: `encoder`'s hidden states gathered at
    the predicted positions before `mlm_head` ([B x P, H] in: `fixtures.hf_mlm_loss`), the mean cross-entropy
    over the predictions, plus `sentence_head`'s (NSP / SOP, on the pooled output) against the sentence labels."""
    inputs = {"input_ids": _t(d["ids"]), "attention_mask": _t(d["mask"])}
    inputs.update(extra or {})
    loss_fn = hf_mlm_loss(encoder, mlm_head, inputs, d["positions"], d["labels"], sentence_head,
                          d["sentence"] if sentence_head is not None else None)
    return _torch_step(model, loss_fn), _torch_params(model)


MLM_DECODER_NOTE = ("transformers' MLM decoder gathered at the predicted positions ([B x P, H] in), as ours: the "
                    "same work")


# --- One builder per family: (objective, {impl: builder}, notes) ----------------------------------------


def _albert(dims, batch, seq, shape):
    d = _mlm_data(batch, seq, dims["V"], sentence_pairs=True)
    sizes = dict(vocabulary_size=dims["V"], num_layers=dims["L"], num_heads=dims["A"], hidden_dim=dims["H"],
                 intermediate_dim=dims["I"], embedding_dim=dims["E"])

    def ours():
        from keras_pretrain.models.albert import AlbertBackbone
        from keras_pretrain.models.albert import AlbertPretrainer

        # dropout 0: the family's config (ALBERT v2 and the published configs train without dropout).
        return _ours_mlm(AlbertPretrainer(AlbertBackbone(**sizes, dropout=0.0)), d, "sop")

    def transformers():
        import transformers as t

        config = t.AlbertConfig(vocab_size=dims["V"], embedding_size=dims["E"], hidden_size=dims["H"],
                                num_hidden_layers=dims["L"], num_attention_heads=dims["A"],
                                intermediate_size=dims["I"], hidden_act=TANH_GELU, hidden_dropout_prob=0.0,
                                attention_probs_dropout_prob=0.0)
        model = t.AlbertForPreTraining(config)
        return _hf_mlm(model, model.albert, model.predictions, d, {"token_type_ids": _t(d["segments"])},
                       sentence_head=model.sop_classifier)

    def keras_hub():
        import keras_hub as kh

        return _keras_hub_mlm(kh.models.AlbertMaskedLM, kh.models.AlbertBackbone(**sizes, dropout=0.0), d)

    notes = [MLM_DECODER_NOTE, "keras-hub AlbertMaskedLM: MLM only (no SOP head), so its step does less work",
             "dropout 0 everywhere (ALBERT's config)"]
    return f"MLM ({d['predictions']} of {seq}) + SOP", dict(ours=ours, transformers=transformers,
                                                            keras_hub=keras_hub), notes


def _roberta(dims, batch, seq, shape):
    d = _mlm_data(batch, seq, dims["V"])
    sizes = dict(vocabulary_size=dims["V"], num_layers=dims["L"], num_heads=dims["A"], hidden_dim=dims["H"],
                 intermediate_dim=dims["I"], dropout=0.1)

    def ours():
        from keras_pretrain.models.roberta import RobertaBackbone
        from keras_pretrain.models.roberta import RobertaPretrainer

        return _ours_mlm(RobertaPretrainer(RobertaBackbone(**sizes)), d)

    def transformers():
        import transformers as t

        config = t.RobertaConfig(vocab_size=dims["V"], hidden_size=dims["H"], num_hidden_layers=dims["L"],
                                 num_attention_heads=dims["A"], intermediate_size=dims["I"],
                                 max_position_embeddings=514, type_vocab_size=1, layer_norm_eps=1e-5,
                                 pad_token_id=1)
        model = t.RobertaForMaskedLM(config)
        return _hf_mlm(model, model.roberta, model.lm_head, d)

    def keras_hub():
        import keras_hub as kh

        return _keras_hub_mlm(kh.models.RobertaMaskedLM, kh.models.RobertaBackbone(**sizes), d)

    return f"MLM ({d['predictions']} of {seq})", dict(ours=ours, transformers=transformers,
                                                      keras_hub=keras_hub), [MLM_DECODER_NOTE]


def _ernie(dims, batch, seq, shape):
    d = _mlm_data(batch, seq, dims["V"], sentence_pairs=True)

    def ours():
        from keras_pretrain.models.ernie import ErnieBackbone
        from keras_pretrain.models.ernie import ErniePretrainer

        backbone = ErnieBackbone(vocabulary_size=dims["V"], num_layers=dims["L"], num_heads=dims["A"],
                                 hidden_dim=dims["H"], intermediate_dim=dims["I"], dropout=0.1,
                                 layer_norm_epsilon=1e-5)  # relu, 513 positions: ErnieBackbone's defaults
        return _ours_mlm(ErniePretrainer(backbone), d, "nsp")  # NSP head on: ErniePretrainer's default

    def transformers():
        import transformers as t

        config = t.ErnieConfig(vocab_size=dims["V"], hidden_size=dims["H"], num_hidden_layers=dims["L"],
                               num_attention_heads=dims["A"], intermediate_size=dims["I"], hidden_act="relu",
                               max_position_embeddings=513, layer_norm_eps=1e-5)
        model = t.ErnieForPreTraining(config)
        return _hf_mlm(model, model.ernie, model.cls.predictions, d, {"token_type_ids": _t(d["segments"])},
                       sentence_head=model.cls.seq_relationship)

    return f"MLM ({d['predictions']} of {seq}) + NSP", dict(ours=ours, transformers=transformers), [
        MLM_DECODER_NOTE, "keras-hub has no ERNIE"]


def _distil_bert(dims, batch, seq, shape):
    d = _mlm_data(batch, seq, dims["V"])
    # DistilBERT's setting: the student has half the teacher's layers (base: 6 from BERT-base's 12).
    student_layers, teacher_layers = dims["L"], 2 * dims["L"]
    common = dict(vocabulary_size=dims["V"], num_heads=dims["A"], hidden_dim=dims["H"],
                  intermediate_dim=dims["I"], dropout=0.1)
    temperature = DISTILLATION["temperature"]

    def ours():
        from keras_pretrain.distill import Distiller
        from keras_pretrain.models.bert import BertBackbone
        from keras_pretrain.models.bert import BertPretrainer
        from keras_pretrain.models.distil_bert import DistilBertBackbone
        from keras_pretrain.models.distil_bert import DistilBertPretrainer

        teacher = BertPretrainer(BertBackbone(num_layers=teacher_layers, **common), sentence_head=False)
        student = DistilBertPretrainer(DistilBertBackbone(num_layers=student_layers, **common))
        distiller = Distiller(teacher, student, **DISTILLATION)
        distiller.compile(optimizer=_ours_optimizer())  # its losses; it has no metrics
        x = {"token_ids": d["ids"], "segment_ids": d["segments"], "padding_mask": d["mask"],
             "masked_lm_positions": d["positions"]}
        return _keras_step(distiller, x, d["labels"], d["weights"]), _keras_params(student)

    def transformers():
        import torch
        import torch.nn.functional as F
        import transformers as t

        teacher = t.BertForMaskedLM(t.BertConfig(
            vocab_size=dims["V"], hidden_size=dims["H"], num_hidden_layers=teacher_layers,
            num_attention_heads=dims["A"], intermediate_size=dims["I"], hidden_act=TANH_GELU)).eval()
        teacher.requires_grad_(False)
        student = t.DistilBertForMaskedLM(t.DistilBertConfig(
            vocab_size=dims["V"], dim=dims["H"], n_layers=student_layers, n_heads=dims["A"],
            hidden_dim=dims["I"], dropout=0.1, attention_dropout=0.1))
        ids, mask, segments = _t(d["ids"]), _t(d["mask"]), _t(d["segments"])
        positions = _t(d["positions"])
        labels, weights = _t(d["labels"]), _t(d["weights"], "float32")

        def student_head(hidden):  # DistilBertForMaskedLM's head, on [B x P, H]
            return student.vocab_projector(student.vocab_layer_norm(student.activation(student.vocab_transform(
                hidden))))

        def loss_fn():  # the Distiller's loss (keras_pretrain.distill.distiller), term by term
            with torch.no_grad():
                t_hidden = teacher.bert(input_ids=ids, token_type_ids=segments, attention_mask=mask).last_hidden_state
                t_logits = teacher.cls(gather_rows(t_hidden, positions))  # the decoders at the predictions only
            s_hidden = student.distilbert(input_ids=ids, attention_mask=mask).last_hidden_state
            s_logits = student_head(gather_rows(s_hidden, positions))  # [B x P, V]
            log_t = F.log_softmax(t_logits / temperature, -1)
            kl = (log_t.exp() * (log_t - F.log_softmax(s_logits / temperature, -1))).sum(-1) * temperature ** 2
            ce = (kl * weights.reshape(-1)).sum() / weights.sum().clamp(min=1.0)
            nll = F.cross_entropy(s_logits, labels.reshape(-1), reduction="none")
            mlm = (nll * weights.reshape(-1)).sum() / weights.sum().clamp(min=1.0)
            cos = 1.0 - F.cosine_similarity(s_hidden, t_hidden, dim=-1, eps=1e-8)
            cos = (cos * mask).sum() / mask.sum().clamp(min=1)
            return DISTILLATION["alpha_ce"] * ce + DISTILLATION["alpha_mlm"] * mlm + DISTILLATION["alpha_cos"] * cos

        return _torch_step(student, loss_fn), _torch_params(student)

    objective = (f"distillation L{teacher_layers} -> L{student_layers}: {DISTILLATION['alpha_ce']:g} KL*T^2 "
                 f"(T={temperature:g}) + {DISTILLATION['alpha_mlm']:g} MLM ({d['predictions']} of {seq}) + "
                 f"{DISTILLATION['alpha_cos']:g} cosine")
    notes = ["params: the student's (trained); the teacher is frozen, forward only, without dropout",
             "transformers: teacher and student decoders gathered at the predicted positions ([B x P, H] in), as "
             "ours: the same work",
             "keras-hub: no distillation task (skipped)"]
    return objective, dict(ours=ours, transformers=transformers), notes


def _xlnet(dims, batch, seq, shape):
    from keras_pretrain.data.permutation import PermutationLanguageModeling

    rs = np.random.RandomState(0)
    ids = rs.randint(10, dims["V"], size=(batch, seq)).astype("int32")
    segments = np.zeros_like(ids)
    segments[:, seq // 2:] = 1
    mem_len, reuse_len = seq, seq // 2  # build_xlnet_pretrainer's defaults
    sampler = PermutationLanguageModeling(seq, num_predict=XLNET_PREDICTIONS, span_sampler="original",
                                          perm_size=reuse_len)
    features = sampler(ids, segment_ids=segments, rng=np.random.default_rng(0))
    assert features["target_weights"].min() == 1.0, "every sequence should have all 85 targets"

    def ours():
        from keras_pretrain.pretraining.permutation_lm import build_xlnet_pretrainer

        model = build_xlnet_pretrainer(dims["V"], batch_size=batch, seq_length=seq, dropout=0.1,
                                       num_layers=dims["L"], num_heads=dims["A"], hidden_dim=dims["H"],
                                       intermediate_dim=dims["I"])
        model.compile(optimizer=_ours_optimizer(), **LOSSES_ONLY)
        return _keras_step(model, dict(features)), _keras_params(model)

    def transformers():
        import transformers as t

        config = t.XLNetConfig(vocab_size=dims["V"], d_model=dims["H"], n_layer=dims["L"], n_head=dims["A"],
                               d_inner=dims["I"], ff_activation="gelu", untie_r=True, attn_type="bi",
                               mem_len=mem_len, reuse_len=reuse_len, use_mems_train=True, dropout=0.1)
        model = t.XLNetLMHeadModel(config)
        inputs = {"input_ids": _t(ids), "token_type_ids": _t(segments), "attention_mask": _t(features["padding_mask"]),
                  "perm_mask": _t(features["perm_mask"], "float32"),
                  "target_mapping": _t(features["target_mapping"], "float32"),
                  "labels": _t(features["target_ids"])}
        state = {"mems": None}

        def loss_fn():  # carries the memories from step to step, as ours (transformers detaches them)
            out = model(**inputs, mems=state["mems"], use_mems=True)
            state["mems"] = out.mems
            return out.loss

        return _torch_step(model, loss_fn), _torch_params(model)

    objective = (f"permutation LM, two-stream, {XLNET_PREDICTIONS} targets of {seq}, memories {mem_len} "
                 f"(reuse {reuse_len})")
    return objective, dict(ours=ours, transformers=transformers), ["keras-hub has no XLNet"]


def _gpt(dims, batch, seq, shape):
    rs = np.random.RandomState(0)
    ids = rs.randint(5, dims["V"], size=(batch, seq)).astype("int32")

    def ours():
        from keras_pretrain.models.gpt import GPTBackbone
        from keras_pretrain.models.gpt import GPTCausalLM

        backbone = GPTBackbone(vocabulary_size=dims["V"], num_layers=dims["L"], num_heads=dims["A"],
                               hidden_dim=dims["H"], intermediate_dim=dims["I"], dropout=0.1)
        model = GPTCausalLM(backbone)
        model.compile(optimizer=_ours_optimizer(), **LOSSES_ONLY)  # its default loss
        return _keras_step(model, {"token_ids": ids, "padding_mask": np.ones_like(ids)}), _keras_params(model)

    def transformers():
        import transformers as t

        config = t.OpenAIGPTConfig(vocab_size=dims["V"], n_positions=512, n_embd=dims["H"], n_layer=dims["L"],
                                   n_head=dims["A"], afn="gelu", resid_pdrop=0.1, embd_pdrop=0.1, attn_pdrop=0.1)
        model = t.OpenAIGPTLMHeadModel(config)
        inputs = {"input_ids": _t(ids), "attention_mask": _t(np.ones_like(ids)), "labels": _t(ids)}
        return _torch_step(model, lambda: model(**inputs).loss), _torch_params(model)

    return f"causal LM ({seq - 1} next-token predictions per row)", dict(ours=ours, transformers=transformers), [
        "keras-hub has no GPT-1 (its GPT2CausalLM is another architecture)"]


def _elmo_batch(batch, seq, vocabulary_size, max_characters=50):
    """Word ids, their ELMo character ids (spelled by their base-26 digits) and the two LMs' targets."""
    from keras_pretrain.models.elmo.elmo_pretrainer import lm_targets
    from keras_pretrain.models.elmo.elmo_tokenizer import BOW_CHAR
    from keras_pretrain.models.elmo.elmo_tokenizer import EOW_CHAR
    from keras_pretrain.models.elmo.elmo_tokenizer import PAD_CHAR

    ids = np.random.RandomState(0).randint(4, vocabulary_size, size=(batch, seq)).astype("int32")
    letters = 5
    digits = (ids[..., None] // 26 ** np.arange(letters)) % 26  # (B, T, 5)
    length = np.maximum(1, np.ceil(np.log(ids + 1) / np.log(26)).astype("int32"))[..., None]
    chars = np.full((batch, seq, max_characters), PAD_CHAR, "int32")
    chars[..., 0] = BOW_CHAR
    place = np.arange(letters)
    chars[..., 1:1 + letters] = np.where(place < length, ord("a") + 1 + digits,
                                         np.where(place == length, EOW_CHAR, PAD_CHAR))
    chars[..., 1 + letters] = np.where(length[..., 0] == letters, EOW_CHAR, PAD_CHAR)
    next_ids, previous_ids = lm_targets(ids)
    return chars, next_ids.astype("int32"), previous_ids.astype("int32")


def _torch_elmo(config, vocabulary_size, num_sampled):
    """ELMo's biLM in plain PyTorch, the same network and loss as `ElmoBiLM` with a sampled softmax.

    Char CNN (16-dim embedding, one `Conv1d` per filter, max over characters, relu), highway layers
    (carry bias -2), projection to D; forward and backward LMs as two separate stacks of single-layer
    `nn.LSTM(D, C, proj_size=D)` (dropout on each layer's input, residual from the second layer; the
    backward LM reads the flipped sequence: the benchmark batch has no padding); output dropout; one softmax
    (V x D + bias) shared by both directions, trained with `num_sampled` log-uniform candidates drawn per
    direction and step (the inverse-CDF draw ours uses), log Q subtracted, accidental hits removed. Simplifications:
    no cell / projection clipping (`nn.LSTM` has none); `nn.LSTM`'s second bias (`bias_hh`) is held at zero and
    not trained, so the trainable parameters equal ours; padding is not handled (none in the batch).
    """
    import torch
    from torch import nn

    D, C, V, S = config["hidden_dim"], config["lstm_dim"], vocabulary_size, num_sampled
    filters = config["filters"]
    channels = sum(n for _, n in filters)
    log_v = math.log(V + 1.0)

    class ElmoBiLM(nn.Module):
        def __init__(self):
            super().__init__()
            self.char_embedding = nn.Embedding(config.get("num_characters", 262), config.get("char_embedding_dim", 16))
            dim = self.char_embedding.embedding_dim
            self.convolutions = nn.ModuleList(nn.Conv1d(dim, n, w) for w, n in filters)
            self.highways = nn.ModuleList(nn.Linear(channels, 2 * channels) for _ in range(config["num_highway"]))
            for highway in self.highways:
                nn.init.constant_(highway.bias[:channels], -2.0)  # the carry gate's bias
            self.projection = nn.Linear(channels, D)
            self.lstms = nn.ModuleList(nn.ModuleList(nn.LSTM(D, C, proj_size=D, batch_first=True)
                                                     for _ in range(config["num_layers"])) for _ in range(2))
            for lstm in (lstm for stack in self.lstms for lstm in stack):  # one bias per gate, as our LSTMP:
                nn.init.zeros_(lstm.bias_hh_l0)  # nn.LSTM's second bias held at zero, not trained
                lstm.bias_hh_l0.requires_grad_(False)
            self.dropout = nn.Dropout(config["dropout"])
            self.softmax_weight = nn.Parameter(torch.randn(V, D) / math.sqrt(D))
            self.softmax_bias = nn.Parameter(torch.zeros(V))

        def tokens(self, chars):
            b, t, c = chars.shape
            x = self.char_embedding(chars.reshape(b * t, c)).transpose(1, 2)  # (B*T, 16, 50)
            x = torch.cat([torch.relu(conv(x).amax(-1)) for conv in self.convolutions], -1)
            for highway in self.highways:
                gate, transform = highway(x).chunk(2, -1)
                gate = torch.sigmoid(gate)
                x = gate * torch.relu(transform) + (1.0 - gate) * x
            return self.projection(x).reshape(b, t, D)

        def direction(self, x, lstms):
            for i, lstm in enumerate(lstms):
                y = lstm(self.dropout(x))[0]
                x = y + x if i > 0 else y
            return self.dropout(x)

        def nll(self, hidden, labels):
            def log_expected(ids):  # log(S * Q(ids)), Q log-uniform
                ids = ids.float()
                return torch.log(S * (torch.log(ids + 2.0) - torch.log(ids + 1.0)) / log_v)

            # S candidates drawn with replacement per call (as ours: one draw per direction and step).
            sampled = (torch.floor(torch.exp(torch.rand(S) * log_v)) - 1.0).long().clamp(0, V - 1)
            hidden, labels = hidden.reshape(-1, D), labels.reshape(-1)
            true = (hidden * self.softmax_weight[labels]).sum(-1) + self.softmax_bias[labels] - log_expected(labels)
            logits = hidden @ self.softmax_weight[sampled].T + self.softmax_bias[sampled] - log_expected(sampled)
            logits = logits.masked_fill(labels[:, None] == sampled[None, :], -1e30)
            nll = torch.logsumexp(torch.cat([true[:, None], logits], -1), -1) - true
            real = (labels != 0).float()
            return (nll * real).sum() / real.sum().clamp(min=1.0)

        def forward(self, chars, next_ids, previous_ids):
            x = self.tokens(chars)
            forward = self.direction(x, self.lstms[0])
            backward = self.direction(x.flip(1), self.lstms[1]).flip(1)
            return self.nll(forward, next_ids) + self.nll(backward, previous_ids)

    return ElmoBiLM()


def _elmo(dims, batch, seq, shape):
    config, V, S = _elmo_config(shape)
    chars, next_ids, previous_ids = _elmo_batch(batch, seq, V, config.get("max_characters", 50))

    def ours():
        from keras_pretrain.models.elmo import ElmoBackbone
        from keras_pretrain.models.elmo import ElmoBiLM

        model = ElmoBiLM(ElmoBackbone(**config), vocabulary_size=V, num_sampled=S, seed=0)
        model.compile(optimizer=_ours_optimizer(), **LOSSES_ONLY)  # its default losses (forward + backward)
        x = {"char_ids": chars, "next_token_ids": next_ids, "previous_token_ids": previous_ids}
        return _keras_step(model, x), _keras_params(model)

    def transformers():
        model = _torch_elmo(config, V, S)
        inputs = (_t(chars), _t(next_ids), _t(previous_ids))
        return _torch_step(model, lambda: model(*inputs)), _torch_params(model)

    objective = f"forward + backward LM, sampled softmax ({S} log-uniform candidates of {V:,} words)"
    notes = ["transformers has no ELMo: the reference is plain PyTorch written in benchmarks/bench_families.py "
             "(nn.LSTM with proj_size, no cell / projection clipping)", "keras-hub has no ELMo",
             "the MFU ceiling is the reference's matmul shapes' (its LSTM weight gradients: one rank-B product per "
             "step); ours on JAX multiplies them once over all steps after the backward loop "
             "(layers/backend_kernels.projected_recurrence), so it can pass that ceiling"]
    return objective, dict(ours=ours, transformers=transformers), notes


# Per family: its builder, `(dims, batch, seq, shape) -> (objective, {impl: builder}, notes)` (only ELMo's reads
# `shape`: its configuration, the family's demo or published one, holds more than `dims`), and its sizes.
BUILDERS = {"albert": _albert, "roberta": _roberta, "ernie": _ernie, "distil_bert": _distil_bert,
            "xlnet": _xlnet, "gpt": _gpt, "elmo": _elmo}
DIMS = {
    "albert": _transformer_dims(ENCODERS["albert"], factorised_embedding=True),
    "roberta": _transformer_dims(ENCODERS["roberta"]),
    "ernie": _transformer_dims(ERNIE),
    "distil_bert": _transformer_dims(ENCODERS["distil_bert"]),
    "xlnet": _transformer_dims(XLNET),
    "gpt": _transformer_dims(GPT, feed_forward_4h=True),  # transformers' OpenAIGPT fixes the feed-forward at 4 H
    "elmo": _elmo_dims,
}


# --- The case -------------------------------------------------------------------------------------------


def family_step(family, shape="base", batch=8, seq=128, rounds=5, refs=None, threads=1, torch_compile=False):
    """Times one training step of `family`'s pretraining objective: ours vs its references, one process.

    Args:
        family: a name of `keras_pretrain.families` with a builder here (`BUILDERS`).
        shape: "base" (the published base sizes) or "tiny" (`benchmarks.fixtures.TINY`; ELMo: the family's
            demo configuration), seconds per family and backend.
        batch, seq: batch size and sequence length.
        rounds: timed rounds (>= 5 for a reported ratio); each times one step of every implementation, the
            order rotating.
        refs: the references to build, a subset of ("transformers", "keras_hub"); None: every one the family
            has (keras-hub: ALBERT and RoBERTa only).
        threads: threads per library (`benchmarks.harness.set_threads`, printed in the result).
        torch_compile: also time the transformers step with `torch.compile` (forward and backward by inductor,
            the same model and optimizer), beside eager; "not available: <reason>" where it does not run.

    Returns:
        A JSON-serialisable dict: family, backend, shape, batch, seq, objective, rounds, threads (the settings);
        per implementation (`ours`, `transformers`, `transformers_compiled`, `keras_hub`) {step_s (median),
        times, first_step_s, build_s, params, loss_first, loss_last} (or {error}); `vs_transformers`,
        `vs_transformers_compiled` and `vs_keras_hub` ({median, min, max, per_round} of reference step / ours
        step: > 1 = ours faster; None when not measured); params (the printed check); notes; peak_rss_mb.
    """
    if family not in BUILDERS:
        raise ValueError(f"no pretraining step for family {family!r}; known: {', '.join(BUILDERS)}")
    return with_threads(threads, _family_step, family, shape, batch, seq, rounds, refs, torch_compile)


def _family_step(settings, family, shape, batch, seq, rounds, refs, torch_compile):
    import keras
    import torch

    backend = keras.config.backend()
    dims = _dims(family, shape)
    objective, builders, notes = BUILDERS[family](dims, batch, seq, shape)
    if isinstance(refs, str):
        refs = [ref for ref in refs.split(",") if ref]
    wanted = ("transformers", "keras_hub") if refs is None else tuple(refs)
    result = {"family": family, "backend": backend, "shape": shape, "batch": batch, "seq": seq,
              "objective": objective, "rounds": rounds, "dims": dims, "threads": settings,
              "torch_threads": torch.get_num_threads(), "dropout": "the family's (ALBERT 0, others 0.1)",
              "optimizer": "AdamW(lr 1e-4, weight decay 0.01)", "dtype": "float32"}
    steps = {}
    for impl in [i for i in IMPLS if i in builders and (i == "ours" or i in wanted)]:
        keras.utils.set_random_seed(0)
        torch.manual_seed(0)
        start = time.perf_counter()
        try:
            steps[impl], params = builders[impl]()
        except Exception as e:  # noqa: BLE001 - a reference that cannot be built here is reported, not fatal
            if impl == "ours":
                raise  # our own failure is the case's error
            result[impl] = {"error": f"{type(e).__name__}: {e}"}
            notes.append(f"{impl} not measured: {type(e).__name__}: {str(e)[:200]}")
            continue
        result[impl] = {"params": params, "build_s": time.perf_counter() - start}
    # The same network: ours and transformers' trainable parameters equal (keras-hub's printed beside).
    counts = {impl: result[impl]["params"] for impl in ("ours", "transformers") if impl in steps}
    result["params"] = same_params(counts)
    if "keras_hub" in steps:
        result["params"] += f"; keras-hub {result['keras_hub']['params']:,}"
    if torch_compile and "transformers" in steps:
        start = time.perf_counter()
        if add_compiled_reference(steps, result, notes):
            result["transformers_compiled"] = {"params": result["transformers"]["params"],
                                               "compile_s": time.perf_counter() - start}
    result = time_steps(result, steps, rounds, batch * seq, notes, count_flops="transformers")
    for ref in ("transformers", "transformers_compiled", "keras_hub"):
        result.setdefault(f"vs_{ref}", None)
    calls = result.pop("matmul_calls", None)
    if "transformers" in steps and rounds:
        _add_mfu(result, backend, shape, calls)
    return result


def _add_mfu(result, backend, shape, calls=None):
    """Model FLOPs utilization (issue 45): the FLOPs of one step, counted on the transformers step (the same
    work as ours; `time_steps` counts them on its warm-up step with `harness.torch_step_flops`), per second of
    each side's median step, over the best float32 matmul rate this process reaches with its threads (our
    backend's and PyTorch's matmul, after the steps). With that step's matmul `calls`, also the ceiling of its
    matmul shapes (`harness.matmul_shape_ceiling`: each timed alone with PyTorch): why a family whose matmuls are
    small (ELMo's recurrence, XLNet's attention) cannot reach the target."""
    flops = result["model_flops"]
    gflops, library = best_matmul((backend, "torch"), n=2048 if shape == "base" else 512)
    result.update(matmul_best_gflops=gflops, matmul_library=library,
                  mfu={impl: mfu(flops, result[impl].get("step_s"), gflops)
                       for impl in ("ours", "transformers", "transformers_compiled", "keras_hub")
                       if isinstance(result.get(impl), dict) and result[impl].get("step_s")},
                  mfu_ceiling=matmul_shape_ceiling(calls, flops, gflops))


# --- Report ---------------------------------------------------------------------------------------------


def _median(p):
    """The median of a paired ratio (a dict; a float from an older result)."""
    return p["median"] if isinstance(p, dict) else p


def _mfu_text(r):
    """'41% / 30% (1.23 TFLOP; 95.1 GFLOP/s torch)' of a result with `mfu`; '-' without."""
    shares = r.get("mfu")
    if not shares:
        return "-"
    percent = " / ".join(f"{100 * shares[impl]:.0f}%" if shares.get(impl) else "-"
                         for impl in ("ours", "transformers"))
    ceiling = r.get("mfu_ceiling")
    bound = (f"; its matmul shapes' ceiling {100 * ceiling['ceiling']:.0f}% ({ceiling['shapes']} shapes, "
             f"{100 * ceiling['matmul_share']:.0f}% of the FLOPs; slowest: {ceiling['slowest']})") if ceiling else ""
    return (f"{percent} ({r['model_flops'] / 1e12:.3g} TFLOP; {r['matmul_best_gflops']:.1f} GFLOP/s "
            f"{r['matmul_library']}{bound})")


def report(by, quick):
    """(markdown sections, targets) of the families group.

    Args:
        by: dict (group, label) -> result; group "families", label f"{family} {backend}".
        quick: the run is `--quick` (tiny shapes).

    Returns:
        `([section], [(target, measured, passed), ...])`: one table (a row per family and backend) and, per
        family, ">= 1.2x transformers" and (ALBERT, RoBERTa) ">= 1.2x keras-hub", measured on the family's
        best backend (the one where our step is fastest), every backend's ratio in the measured text (base-size
        results only: none from a `--quick` run).
    """
    def step(impl):
        return fmt(impl["step_s"], 3) if impl.get("step_s") else impl.get("error", "-")[:80]

    def paired_text(p):
        return ratio_text(p) if isinstance(p, dict) else (f"{p:.2f}x" if p else "-")

    rows, measured, shapes = [], {}, set()
    for (group, label), r in by.items():
        if group != "families":
            continue
        family, _, backend = label.partition(" ")
        problem = failed(r)
        if problem:
            rows.append([family, backend, problem] + ["-"] * 11)
            continue
        shapes.add(f"{r['shape']}, batch {r['batch']}, seq {r['seq']}")
        ours, hf, kh = r["ours"], r.get("transformers", {}), r.get("keras_hub", {})
        compiled = r.get("transformers_compiled")
        vs_hf, vs_kh = r.get("vs_transformers"), r.get("vs_keras_hub")
        shares = r.get("mfu") or {}
        if r["shape"] == "base":  # the targets read base-size steps only (not --quick's tiny ones)
            measured.setdefault(family, {})[backend] = (ours.get("step_s"), _median(vs_hf), _median(vs_kh),
                                                        shares.get("ours"), shares.get("transformers"),
                                                        (r.get("mfu_ceiling") or {}).get("ceiling"))
        threads = r.get("threads")
        rows.append([
            family, backend, r["objective"], threads["threads"] if isinstance(threads, dict) else "default",
            step(ours), step(hf), paired_text(vs_hf),
            ("-" if compiled is None else f"{step(compiled)}, {paired_text(r.get('vs_transformers_compiled'))}"),
            step(kh), paired_text(vs_kh),
            r.get("params") or f"{fmt(ours.get('params'))} / {fmt(hf.get('params'))}",
            _mfu_text(r), r.get("rounds", "-"), "; ".join(r.get("notes", [])),
        ])
        rows[-1] = [str(cell).replace("|", "/") for cell in rows[-1]]
    if not rows:
        return [], []
    targets = []
    for family, per_backend in measured.items():
        best = min(per_backend, key=lambda b: per_backend[b][0] or float("inf"))
        for index, ref, need in ((1, "transformers", 1.2), (2, "keras-hub", 1.2)):
            ratios = {b: v[index] for b, v in per_backend.items() if v[index]}
            if best not in ratios:
                continue
            others = ", ".join(f"{b} {v:.2f}x" for b, v in sorted(ratios.items()))
            targets.append((f"{family} pretraining step: ours >= {need}x {ref} (best backend)",
                            f"{ratios[best]:.2f}x ({best}); {others}"
                            + (ceiling_text(per_backend[best][4], need) if ref == "transformers" else ""),
                            ratios[best] >= need))
        share = per_backend[best][3]
        if share is not None:
            ceiling = per_backend[best][5]
            targets.append((f"{family} pretraining step: MFU >= 60% of the best matmul of the run (ours, best "
                            "backend, base size)", f"{100 * share:.0f}% ({best})"
                            + (f"; the ceiling of its matmul shapes {100 * ceiling:.0f}%" if ceiling else ""),
                            share >= 0.6))
    title = ("### Each family's pretraining step (its own objective; AdamW, float32; ours, transformers and "
             "keras-hub in one process, the same threads per library, rounds rotating the order; ratios = median "
             "of per-round reference / ours (min-max); transformers' MLM decoders gathered at the predicted "
             f"positions; {'; '.join(sorted(shapes)) or '-'})")
    if quick:
        title += f"\n\n(--quick: tiny shapes, {QUICK_NO_TARGET})"
    header = ["family", "backend", "objective", "threads per library", "ours step s", "transformers step s",
              "ours vs transformers (paired)", "torch.compile step s, ours vs it", "keras-hub step s",
              "ours vs keras-hub (paired)", "params", "MFU ours / transformers (FLOPs per step; best matmul)",
              "rounds", "notes"]
    return [title + "\n\n" + table(header, rows)], targets
