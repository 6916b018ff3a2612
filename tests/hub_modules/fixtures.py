"""Tiny models and tokenizers of every family, for the module tests.

`build(family, folder)` returns `(model, tokenizer, inputs)`: a randomly
initialised tiny model (a pretrainer where the family has an MLM head), its
tokenizer (vocabulary files written into `folder`) and a batch of TF-Hub
style inputs with padding in row 0 (char ids with `<S>`/`</S>` for ELMo).
"""

import io

import keras
import numpy as np

MIXED_TEXT = "The cat sat on the mat. 猫坐在垫子上 unknownword!"
WORDPIECE = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat", ".", "!",
             "unknown", "##word", "猫", "坐", "在", "垫", "子", "上"]
SP_TEXT = ["The cat sat on the mat.", "猫坐在垫子上。", "Another sentence about a cat and a mat!",
           "XLNet uses SentencePiece 猫 子", "Quick brown foxes jump over lazy dogs near the river bank.",
           "Whole words, pieces and characters: tokenizers split everything.", "我是中国人，你好世界。",
           "Numbers 12 345 and symbols # $ % appear sometimes."] * 20
ELMO_SENTENCES = [["The", "cat", "sat"], ["猫", "坐", "在", "垫子", "上", "!"]]
BATCH, LENGTH, PAD_FROM = 2, 10, 7
TRANSFORMER = dict(num_layers=2, num_heads=2, hidden_dim=16, intermediate_dim=32)


def _sentencepiece(vocab_size, **specials):
    import sentencepiece as spm

    buffer = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(SP_TEXT), model_writer=buffer, vocab_size=vocab_size, model_type="unigram",
        character_coverage=1.0, hard_vocab_limit=False, minloglevel=2, **specials,
    )
    return buffer.getvalue()


def _xlnet_proto():
    return _sentencepiece(
        96, unk_id=0, bos_id=1, eos_id=2, pad_id=5, unk_piece="<unk>", bos_piece="<s>",
        eos_piece="</s>", pad_piece="<pad>",
        control_symbols=["<cls>", "<sep>"], user_defined_symbols=["<mask>", "<eod>", "<eop>"],
    )


def _albert_proto():
    return _sentencepiece(
        96, pad_id=0, unk_id=1, bos_id=-1, eos_id=-1, pad_piece="<pad>", unk_piece="<unk>",
        control_symbols=["[CLS]", "[SEP]", "[MASK]"],
    )


def _encoder_inputs(vocabulary_size, types=True, left_pad=False):
    rng = np.random.default_rng(0)
    ids = rng.integers(5, vocabulary_size, (BATCH, LENGTH)).astype("int32")
    mask = np.ones((BATCH, LENGTH), "int32")
    types_ = np.zeros((BATCH, LENGTH), "int32")
    types_[:, LENGTH // 2:] = 1
    if left_pad:
        mask[0, : LENGTH - PAD_FROM] = 0
    else:
        mask[0, PAD_FROM:] = 0
    ids = ids * mask
    types_ = types_ * mask
    inputs = {"input_word_ids": ids, "input_mask": mask}
    if types:
        inputs["input_type_ids"] = types_
    return inputs


def build(family, folder):
    keras.utils.set_random_seed(1)
    if family == "bert":
        from keras_pretrain.models.bert import BertBackbone, BertPretrainer, BertTokenizer

        backbone = BertBackbone(vocabulary_size=len(WORDPIECE), max_sequence_length=16, **TRANSFORMER)
        return BertPretrainer(backbone), BertTokenizer(vocabulary=WORDPIECE, lowercase=True), _encoder_inputs(20)
    if family == "albert":
        from keras_pretrain.models.albert import AlbertBackbone, AlbertPretrainer, AlbertTokenizer

        backbone = AlbertBackbone(vocabulary_size=96, embedding_dim=8, max_sequence_length=16, **TRANSFORMER)
        return AlbertPretrainer(backbone), AlbertTokenizer(proto=_albert_proto()), _encoder_inputs(96)
    if family == "ernie":
        from keras_pretrain.models.bert import BertTokenizer
        from keras_pretrain.models.ernie import ErnieBackbone, ErniePretrainer

        backbone = ErnieBackbone(vocabulary_size=len(WORDPIECE), max_sequence_length=16, use_task_id=True,
                                 **TRANSFORMER)
        return ErniePretrainer(backbone), BertTokenizer(vocabulary=WORDPIECE, lowercase=True), _encoder_inputs(20)
    if family == "distil_bert":
        from keras_pretrain.models.bert import BertTokenizer
        from keras_pretrain.models.distil_bert import DistilBertBackbone, DistilBertPretrainer

        backbone = DistilBertBackbone(vocabulary_size=len(WORDPIECE), max_sequence_length=16, **TRANSFORMER)
        return DistilBertPretrainer(backbone), BertTokenizer(vocabulary=WORDPIECE, lowercase=True), _encoder_inputs(20)
    if family == "roberta":
        from keras_pretrain.models.roberta import RobertaBackbone, RobertaPretrainer, RobertaTokenizer
        from tests.models.roberta.fixtures import write_bpe_files

        vocab, merges = write_bpe_files(folder)
        tokenizer = RobertaTokenizer(vocabulary=vocab, merges=merges)
        backbone = RobertaBackbone(vocabulary_size=tokenizer.vocabulary_size(), max_sequence_length=18,
                                   **TRANSFORMER)
        inputs = _encoder_inputs(tokenizer.vocabulary_size())
        inputs["input_word_ids"] = np.where(inputs["input_mask"] > 0, inputs["input_word_ids"], 1).astype("int32")
        return RobertaPretrainer(backbone), tokenizer, inputs
    if family == "xlnet":
        from keras_pretrain.models.xlnet import XLNetBackbone, XLNetTokenizer

        backbone = XLNetBackbone(vocabulary_size=96, mem_len=6, **TRANSFORMER)
        return backbone, XLNetTokenizer(proto=_xlnet_proto()), _encoder_inputs(96, left_pad=True)
    if family == "gpt":
        from keras_pretrain.models.gpt import GPTBackbone, GPTCausalLM, learn_bpe

        tokenizer = learn_bpe(SP_TEXT, 60, min_frequency=2)
        backbone = GPTBackbone(vocabulary_size=tokenizer.vocabulary_size(), max_sequence_length=16, **TRANSFORMER)
        return GPTCausalLM(backbone), tokenizer, _encoder_inputs(tokenizer.vocabulary_size(), types=False)
    if family == "elmo":
        from keras_pretrain.models.elmo import ElmoBackbone, ElmoEmbedder, character_ids

        backbone = ElmoBackbone(num_layers=2, hidden_dim=8, lstm_dim=16, filters=[[1, 4], [2, 8]], num_highway=1,
                                char_embedding_dim=4)
        embedder = ElmoEmbedder(backbone)
        embedder.build((None, None, 50))
        embedder.scalar_mix.scalar_weights.assign(np.array([0.3, -0.2, 0.5], "float32"))
        embedder.scalar_mix.gamma.assign(0.7)
        return embedder, None, {"char_ids": character_ids(ELMO_SENTENCES)}
    raise ValueError(family)


def reference_outputs(family, model, inputs):
    """The Keras model's outputs under the module's names (computed here, not by contracts.py)."""
    from tests.testing import to_numpy

    backbone = getattr(model, "backbone", model)
    if family == "elmo":
        out = to_numpy(backbone({"char_ids": inputs["char_ids"]}))
        lengths = out["padding_mask"].sum(1) - 2
        real = (np.arange(out["padding_mask"].shape[1] - 2)[None] < lengths[:, None]).astype("float32")[..., None]
        layers = [x[:, 1:-1] * real for x in out["encoder_outputs"]]
        w = to_numpy(model.scalar_mix.scalar_weights)
        w = np.exp(w) / np.exp(w).sum()
        elmo = float(to_numpy(model.scalar_mix.gamma)) * sum(wj * x for wj, x in zip(w, layers)) * real
        return {"word_emb": out["token_output"][:, 1:-1] * real, "lstm_outputs1": layers[1],
                "lstm_outputs2": layers[2], "elmo": elmo, "default": elmo.sum(1) / lengths[:, None]}
    x = {"token_ids": inputs["input_word_ids"], "padding_mask": inputs["input_mask"]}
    if family in ("bert", "albert", "ernie", "xlnet"):
        x["segment_ids"] = inputs["input_type_ids"]
    if family == "ernie":
        x["task_type_ids"] = inputs.get("input_task_ids", np.zeros_like(inputs["input_word_ids"]))
    out = to_numpy(backbone(x))
    if family == "gpt":
        return {"logits": to_numpy(model(x)), "sequence_output": out["sequence_output"]}
    if family == "xlnet":
        return {"sequence_output": out["sequence_output"], "default": out["sequence_output"][:, -1],
                "mems": np.stack(out["mems"], axis=1)}
    pooled = out.get("pooled_output", out["sequence_output"][:, 0])
    result = {"sequence_output": out["sequence_output"], "pooled_output": pooled, "default": pooled,
              "encoder_outputs": out["encoder_outputs"]}
    if hasattr(model, "masked_lm_head") and keras.config.backend() == "tensorflow":  # for the SavedModel's mlm
        positions = np.array([[1, 2], [3, 5]], "int32")
        result["mlm_logits"] = to_numpy(model({**x, "masked_lm_positions": positions})["mlm"])
    return result


def ernie_task_outputs(backbone, inputs):
    """(TF-Hub inputs with task ids 1 / 2, the backbone's sequence_output on them)."""
    from tests.testing import to_numpy

    tasks = np.ones_like(inputs["input_word_ids"])
    tasks[1] = 2
    x = {"token_ids": inputs["input_word_ids"], "padding_mask": inputs["input_mask"],
         "segment_ids": inputs["input_type_ids"], "task_type_ids": tasks}
    return {**inputs, "input_task_ids": tasks}, to_numpy(backbone(x)["sequence_output"])


def tokenizer_ids(tokenizer, text):
    """Our Python-side tokenizer's ids of one text."""
    if hasattr(tokenizer, "tokenize_to_pieces"):  # GPT's Python BPE
        return tokenizer.tokenize(text)
    return [int(i) for i in np.asarray(tokenizer(text))]
