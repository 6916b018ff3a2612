"""Serving-side cases (issue 22): int8 weight quantization of our encoders (`model.quantize("int8")`).

Float32 and int8 copies of the same backbone (same weights) in one process, batch-32 forward passes timed in
alternating rounds; the error is the max abs difference of the pooled outputs on the same inputs.
"""

import os
import statistics
import time

import numpy as np

from benchmarks.fixtures import ENCODERS, TINY, Skip, corpus_lines, hf_encoder, our_backbone, our_encoder, write_vocab
from benchmarks.machine import keras_backend, peak_rss_mb
from benchmarks.report import cases, fmt, table


def encoder_int8(family="bert", tiny=False, seq=128, batch=32, rounds=3):
    """Batch-`batch` throughput of our `family` backbone in float32 and after `quantize("int8")`."""
    import keras

    d = dict(TINY if tiny else ENCODERS[family])
    keras.utils.set_random_seed(0)
    try:
        model, names, params = our_encoder(family, d, outputs=("sequence_output", "pooled_output"))
    except KeyError:  # no pooler (RoBERTa, DistilBERT): the first token's vector, as their classifiers take
        model, names, params = our_encoder(family, d)
        model = keras.Model(model.inputs, [model.output, model.output[:, 0]])
    quantized = keras.models.clone_model(model)
    quantized.set_weights(model.get_weights())
    quantized.quantize("int8")
    rs = np.random.RandomState(0)
    x = {name: (rs.randint(5, d["V"], size=(batch, seq)).astype("int32") if name == "token_ids" else
                np.ones((batch, seq), "int32") if name == "padding_mask" else np.zeros((batch, seq), "int32"))
         for name in names}
    models = {"float32": model, "int8": quantized}
    outputs = {k: m.predict_on_batch(x) for k, m in models.items()}  # compiles
    times = {k: [] for k in models}
    for r in range(rounds):
        for k in (("float32", "int8") if r % 2 == 0 else ("int8", "float32")):
            start = time.perf_counter()
            models[k].predict_on_batch(x)
            times[k].append(time.perf_counter() - start)
    pooled = {k: np.asarray(v[1], "float32") for k, v in outputs.items()}
    sequence = {k: np.asarray(v[0], "float32") for k, v in outputs.items()}
    medians = {k: statistics.median(t) for k, t in times.items()}
    return {"family": family, "backend": keras_backend(), "params": int(params), "batch": batch, "seq": seq,
            "times": times, "float32_s": medians["float32"], "int8_s": medians["int8"],
            "speedup": medians["float32"] / medians["int8"],
            "float32_tokens_per_s": batch * seq / medians["float32"], "int8_tokens_per_s": batch * seq / medians["int8"],
            "pooled_max_abs_diff": float(np.max(np.abs(pooled["int8"] - pooled["float32"]))),
            "pooled_max_abs": float(np.max(np.abs(pooled["float32"]))),
            "sequence_max_abs_diff": float(np.max(np.abs(sequence["int8"] - sequence["float32"])))}


def report(by, quick):
    """(markdown sections, targets) of the serving group: int8 (labels "int8 ...") and strings-in serving
    (labels "saved_model {family}", `saved_model_serving`), a table each and one target per serving family."""

    sections, targets = [], []
    rows = []
    for label, r in cases(by, "serving", "int8", rows, 4):
        rows.append([f"{r['family']} ({r['backend']})", fmt(r["float32_tokens_per_s"]), fmt(r["int8_tokens_per_s"]),
                     f"{r['speedup']:.2f}x", f"{r['pooled_max_abs_diff']:.2e} (of {r['pooled_max_abs']:.2f})",
                     f"{r['sequence_max_abs_diff']:.2e}"])
    if rows:
        sections.append("### int8 weight quantization (`quantize(\"int8\")`, batch 32, seq 128, random weights; "
                        "float32 and int8 copies in one process, rounds alternating)\n\n"
                        + table(["encoder", "float32 tokens/s", "int8 tokens/s", "speed-up",
                                 "pooled output max abs diff", "sequence output max abs diff"], rows))
    serving_sections, serving_targets = _serving_report(by, quick)
    return sections + serving_sections, targets + serving_targets


def _serving_report(by, quick):
    """The strings-in table (results of `saved_model_serving`, labels "saved_model {family}") and targets."""

    def rate(x):  # sentences/s: BERT-base on 2 cores does ~1
        return fmt(x, 2 if x < 10 else 1)

    rows, targets, notes, threads, repeats = [], [], [], set(), set()
    for label, r in cases(by, "serving", "saved_model", rows, 8):
        w, ratios, n = r["ways"], r["ratios"], r["batch"]
        tp = f"b{n}_seq_per_s"
        size = "tiny" if r.get("tiny") else "base"
        threads.add(str(r.get("torch_threads")))
        repeats.add(tuple(r.get("repeats", (7, 3))))
        vs_hf = ratios["saved_model_vs_transformers_throughput"]
        vs_predict = ratios["saved_model_vs_predict_throughput"]
        diff = f"{r['saved_model_vs_predict_max_abs_diff']:.1e} (of {r['sequence_max_abs']:.1f})"
        rows.append([
            f"{r['family']} {size} ({fmt(r['params'] / 1e6, 1)}M, {r['vocab']['kind'].split()[0]} "
            f"{fmt(r['vocab']['size'])})",
            fmt(w["saved_model"]["b1_ms"], 1), fmt(w["predict"]["b1_ms"], 1), fmt(w["transformers"]["b1_ms"], 1),
            f"{rate(w['saved_model'][tp])} ({fmt(w['saved_model'][f'b{n}_tokens_per_s'])})",
            rate(w["predict"][tp]), rate(w["transformers"][tp]),
            f"{vs_hf:.2f}x / {ratios['saved_model_vs_transformers_latency']:.2f}x",
            f"{vs_predict:.2f}x / {ratios['saved_model_vs_predict_latency']:.2f}x", diff,
        ])
        notes += [f"{r['family']}: {note}" for note in r.get("notes", [])[1:]]
        targets.append((f"Serving {r['family']}{' (tiny)' if r.get('tiny') else ''}: SavedModel strings-in end to end "
                        f"(in-graph preprocessor + encoder) batch-{n} throughput >= 1.2x transformers tokenizer + "
                        "model (strings in)",
                        f"{vs_hf:.2f}x ({rate(w['saved_model'][tp])} vs {rate(w['transformers'][tp])} sentences/s; "
                        f"SavedModel vs predict_on_batch max abs diff {r['saved_model_vs_predict_max_abs_diff']:.1e})",
                        vs_hf >= 1.2))
    if not rows:
        return [], []
    text = ("### Serving strings in: exported SavedModel vs `predict_on_batch` vs transformers (random weights, "
            "corpus sentences padded / truncated to 128, batch-1 latency and batch-32 throughput medians of "
            f"{' or '.join(f'{a} and {b}' for a, b in sorted(repeats))} rounds, the three ways in one process, "
            "rounds alternating)\n\n"
            "(a) SavedModel: `keras_pretrain.export` preprocessor + encoder reloaded with `tf.saved_model.load`, "
            "strings in, tokenization in-graph; (b) `predict_on_batch` on ids tokenized beforehand (no tokenization "
            "timed); (c) transformers' Rust tokenizer from the same vocabulary files + the torch model under "
            f"`inference_mode` (torch threads: {', '.join(sorted(threads))}), strings in. Ratios: throughput / "
            "latency speed-up. The diff compares (a) and (b) on the same sentences (same weights, same ids). "
            + SAVED_MODEL_NOTE + "\n\n"
            + table(["encoder (params, vocabulary)", "(a) SavedModel b1 ms", "(b) predict b1 ms",
                     "(c) transformers b1 ms", "(a) b32 sentences/s (tokens/s)", "(b) b32 sentences/s",
                     "(c) b32 sentences/s", "(a) vs (c) b32 / b1", "(a) vs (b) b32 / b1",
                     "(a)-(b) sequence output max abs diff"], rows))
    if notes:
        text += "\n\n" + "\n".join(f"- {note}" for note in notes)
    return [text], targets


# --- Strings in: the exported SavedModel (in-graph preprocessor) vs predict_on_batch vs transformers -------

SERVING_WAYS = ("saved_model", "predict", "transformers")
SAVED_MODEL_NOTE = ("SavedModel export runs on the TensorFlow backend only (keras_pretrain.export raises ExportError "
                    "under JAX / PyTorch; hub_modules.export writes the SavedModels from a TensorFlow subprocess), so "
                    "this case runs with KERAS_BACKEND=tensorflow and (b) is TensorFlow's predict_on_batch.")


def _serving_sentences(count):
    """`count` non-empty lines of corpus/pretrain.txt, evenly spaced over the file (English and Chinese)."""
    lines = corpus_lines()
    step = max(1, len(lines) // count)
    return lines, [lines[i * step % len(lines)] for i in range(count)]


def _wordpiece(folder, lines, vocab_size, fast):
    """WordPiece: the quick vocabulary of `benchmarks.fixtures.write_vocab` from `lines` (specials, every character
    and its `##` form, then frequent words; so it can exceed `vocab_size`), lower-cased."""
    from keras_pretrain.models.bert import BertTokenizer

    path = write_vocab(os.path.join(folder, "vocab.txt"), vocab_size, lines)
    ours = BertTokenizer(vocabulary=path, lowercase=True)
    hf = fast(vocab=path, do_lower_case=True)  # transformers 5 ignores `vocab_file`
    return ours, hf, "wordpiece vocab.txt"


def _sentencepiece(folder, lines, vocab_size, fast):
    """SentencePiece: a unigram model trained on the corpus lines with ALBERT's specials (as the test fixtures'
    `_albert_proto`); transformers converts the same `spiece.model` to its Rust (fast) tokenizer."""
    import io

    import sentencepiece as spm

    from keras_pretrain.models.albert import AlbertTokenizer

    buffer = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_writer=buffer, vocab_size=vocab_size, model_type="unigram",
        character_coverage=0.9995, hard_vocab_limit=False, minloglevel=2, pad_id=0, unk_id=1, bos_id=-1,
        eos_id=-1, pad_piece="<pad>", unk_piece="<unk>", control_symbols=["[CLS]", "[SEP]", "[MASK]"])
    path = os.path.join(folder, "spiece.model")
    with open(path, "wb") as f:
        f.write(buffer.getvalue())
    ours = AlbertTokenizer(proto=path)
    hf = fast.from_pretrained(folder)  # converted from spiece.model
    return ours, hf, "sentencepiece unigram spiece.model"


def _byte_level_bpe(folder, lines, vocab_size, fast):
    """Byte-level BPE: `vocab.json` + `merges.txt` learned on the corpus lines by `tokenizers`' trainer (the test
    fixture's 23 merges would leave every word in bytes), RoBERTa's specials with `<pad>` = 1."""
    from tokenizers import ByteLevelBPETokenizer

    from keras_pretrain.models.roberta import RobertaTokenizer

    trainer = ByteLevelBPETokenizer()
    trainer.train_from_iterator(lines, vocab_size=vocab_size, min_frequency=2, show_progress=False,
                                special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    vocab, merges = trainer.save_model(folder)
    ours = RobertaTokenizer(vocabulary=vocab, merges=merges)
    hf = fast(vocab=vocab, merges=merges)
    return ours, hf, "byte-level BPE vocab.json + merges.txt"


# Per serving family: how its vocabulary files are made (and our tokenizer read from them), and the class of
# transformers' fast tokenizer that reads the same files.
SERVING_TOKENIZERS = {
    "bert": (_wordpiece, "BertTokenizerFast"),
    "albert": (_sentencepiece, "AlbertTokenizerFast"),
    "roberta": (_byte_level_bpe, "RobertaTokenizerFast"),
    "distil_bert": (_wordpiece, "DistilBertTokenizerFast"),
}


def _serving_tokenizers(family, folder, lines, vocab_size):
    """(ours, transformers', description) built from the same vocabulary files written into `folder`, the way
    `SERVING_TOKENIZERS` says for `family`."""
    import transformers

    if family not in SERVING_TOKENIZERS:
        raise ValueError(f"saved_model_serving: no tokenizer set up for {family!r} (bert, albert, roberta, "
                         "distil_bert)")
    build, fast = SERVING_TOKENIZERS[family]
    ours, hf, kind = build(folder, lines, vocab_size, getattr(transformers, fast))
    return ours, hf, {"kind": kind, "size": int(ours.vocabulary_size()), "transformers": type(hf).__name__}


def saved_model_serving(family="bert", tiny=False, seq=128, batch=32, repeats=(7, 3), vocab_size=8000,
                        torch_threads=None):
    """Strings in, sequence output out, three ways, rounds alternating in one process:

    (a) `saved_model`: our exported SavedModels (`keras_pretrain.export`: `export_preprocessor` +
        `export_encoder`, as `hub_modules.export` writes `preprocessor/` and `encoder/`) reloaded with
        `tf.saved_model.load`: `encoder(preprocessor(strings))`, tokenization in-graph;
    (b) `predict`: the Keras model's `predict_on_batch` on the ids our tokenizer gave once beforehand (no
        tokenization timed);
    (c) `transformers`: its Rust tokenizer from the same vocabulary files (padding to `seq`) + the model's
        forward under `torch.inference_mode`, random weights, same dims (tokenization timed).

    Batch-1 latency (median of `repeats[0]`, one corpus sentence per round) and batch-`batch` throughput
    (median of `repeats[1]`, the same `batch` sentences) after one untimed call of each; each round runs the
    three ways in a rotated order. Tokens/s counts the padded `batch * seq` positions. `torch_threads`:
    `torch.set_num_threads` for (c) (default torch's own: one per core; on a loaded 2-core machine two OpenMP
    threads can be many times slower than one; the result records `load_1min_start` / `_end`). `tiny`: TINY
    dims (the embedding grown to the tokenizer's vocabulary), for a smoke run.
    """
    import tempfile

    import keras

    if keras.config.backend() != "tensorflow":
        raise Skip(SAVED_MODEL_NOTE)
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the preprocessor's ops, before tf.saved_model.load)
    import torch

    from keras_pretrain import families
    from keras_pretrain.export import export_encoder
    from keras_pretrain.export import export_preprocessor
    from keras_pretrain.models.text_preprocessor import special_id

    started = time.perf_counter()
    # Seeded before any tokenizer exists: in eager mode `tf.random.set_seed` clears the context's caches, and
    # with them tensorflow-text's SentencePiece resource (ALBERT's tokenizer then fails with NotFoundError).
    keras.utils.set_random_seed(0)
    d = dict(TINY if tiny else ENCODERS[family])
    all_lines, sentences = _serving_sentences(batch)
    notes = [SAVED_MODEL_NOTE]
    result = {"family": family, "backend": keras_backend(), "tiny": bool(tiny), "seq": seq, "batch": batch,
              "repeats": [int(n) for n in repeats],
              "load_1min_start": os.getloadavg()[0]}
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        # tiny: the vocabulary learned from every 6th line (SentencePiece's trainer takes ~10 s on all of them).
        ours_tok, hf_tok, vocab = _serving_tokenizers(family, tmp, all_lines[::6] if tiny else all_lines, vocab_size)
        result["vocab_s"] = time.perf_counter() - start
        if vocab["size"] > d["V"]:  # the tokenizer's ids must fit the embedding (TINY's 1000 rows)
            notes.append(f"embedding rows {d['V']} -> {vocab['size']} (the tokenizer's vocabulary)")
            d["V"] = vocab["size"]
        result["vocab"] = vocab
        result["dims"] = d

        # Our backbone (random weights); (b) is a Model returning only the sequence output, as
        # benchmarks.cases.encoder_inference (transformers also returns only the last hidden states).
        backbone = our_backbone(family, d)
        names = sorted(backbone.input)
        model = keras.Model({n: backbone.input[n] for n in names}, backbone.output["sequence_output"])
        result["params"] = int(backbone.count_params())

        # (a) the SavedModels, written and reloaded.
        start = time.perf_counter()
        export_encoder(backbone, os.path.join(tmp, "encoder"), family=family)
        export_preprocessor(ours_tok, os.path.join(tmp, "preprocessor"), seq_length=seq)
        result["export_s"] = time.perf_counter() - start
        start = time.perf_counter()
        preprocessor = tf.saved_model.load(os.path.join(tmp, "preprocessor"))
        encoder = tf.saved_model.load(os.path.join(tmp, "encoder"))
        result["load_s"] = time.perf_counter() - start

        # (b)'s ids: our Keras tokenizer + the family's packing, once, outside the timing.
        packing = families.get(family).packing
        special = {k: special_id(ours_tok, *packing.special_names[k]) for k in ("cls", "sep", "pad")}
        tokens = ours_tok(tf.constant(sentences))
        if not tf.is_tensor(tokens):  # keras-hub's tokenizers return lists in eager mode
            tokens = tf.ragged.constant(tokens, dtype=tf.int32)
        packed = packing.pack_ragged(tf, [tf.cast(tokens, tf.int32)], seq, special)
        ids = {n: np.asarray(packed[n], "int32") for n in names}
        result["real_tokens_per_sentence"] = float(ids["padding_mask"].sum(1).mean())
        result["truncated_sentences"] = int((ids["padding_mask"][:, -1] > 0).sum())

        # (c) transformers, same dims, random weights.
        if torch_threads:
            torch.set_num_threads(int(torch_threads))
        torch.manual_seed(0)
        hf_model = hf_encoder(family, d)
        result["transformers_params"] = int(sum(p.numel() for p in hf_model.parameters()))
        result["torch_threads"] = torch.get_num_threads()

        def saved_model(texts, rows):
            del rows
            return encoder(preprocessor(tf.constant(texts)), training=False)["sequence_output"].numpy()

        def predict(texts, rows):
            del texts
            return model.predict_on_batch({n: v[rows] for n, v in ids.items()})

        def transformers_(texts, rows):
            del rows
            with torch.inference_mode():
                x = hf_tok(texts, padding="max_length", max_length=seq, truncation=True, return_tensors="pt")
                return hf_model(**x).last_hidden_state.numpy()

        ways = {"saved_model": saved_model, "predict": predict, "transformers": transformers_}
        times = {w: {"b1": [], f"b{batch}": []} for w in ways}
        first = {}
        for key, reps in ((f"b{batch}", repeats[1]), ("b1", repeats[0])):
            for w, fn in ways.items():  # untimed: tracing, allocator warm-up
                texts, rows = (sentences, slice(None)) if key != "b1" else (sentences[:1], slice(0, 1))
                start = time.perf_counter()
                out = fn(texts, rows)
                first[f"{w}_{key}_s"] = time.perf_counter() - start
                if key != "b1":
                    first[w] = out
            for r in range(reps):
                order = SERVING_WAYS[r % 3:] + SERVING_WAYS[:r % 3]
                i = r % batch
                texts, rows = (sentences, slice(None)) if key != "b1" else ([sentences[i]], slice(i, i + 1))
                for w in order:
                    start = time.perf_counter()
                    ways[w](texts, rows)
                    times[w][key].append(time.perf_counter() - start)

        # (a) vs (b) on the same sentences: the same weights and ids, so ~0.
        a_out, b_out = np.asarray(first["saved_model"], "float32"), np.asarray(first["predict"], "float32")
        result["saved_model_vs_predict_max_abs_diff"] = float(np.max(np.abs(a_out - b_out)))
        result["sequence_max_abs"] = float(np.max(np.abs(b_out)))
        pre_ids = preprocessor(tf.constant(sentences))
        result["preprocessor_ids_equal"] = bool(
            np.array_equal(np.asarray(pre_ids["input_word_ids"]), ids["token_ids"])
            and np.array_equal(np.asarray(pre_ids["input_mask"]), ids["padding_mask"]))
        hf_ids = hf_tok(sentences, padding="max_length", max_length=seq, truncation=True)["input_ids"]
        result["transformers_ids_equal_rows"] = int(sum(
            list(row) == list(mine) for row, mine in zip(hf_ids, ids["token_ids"].tolist())))
        if result["transformers_ids_equal_rows"] < batch:
            notes.append(f"transformers' tokenizer gives the same ids for {result['transformers_ids_equal_rows']}/"
                         f"{batch} sentences (same vocabulary files)")

    per_way = {}
    for w in SERVING_WAYS:
        b1, bn = statistics.median(times[w]["b1"]), statistics.median(times[w][f"b{batch}"])
        per_way[w] = {"b1_ms": 1000 * b1, f"b{batch}_seq_per_s": batch / bn, f"b{batch}_tokens_per_s": batch * seq / bn,
                      "first_b1_s": first[f"{w}_b1_s"], f"first_b{batch}_s": first[f"{w}_b{batch}_s"],
                      "b1_times": times[w]["b1"], f"b{batch}_times": times[w][f"b{batch}"]}
    tp = f"b{batch}_seq_per_s"
    result["ways"] = per_way
    # Flat copies of the headline numbers (the report and the brief read these names).
    for w in SERVING_WAYS:
        result[f"{w}_b1_ms"] = per_way[w]["b1_ms"]
        result[f"{w}_{tp}"] = per_way[w][tp]
    result["ratios"] = {
        "saved_model_vs_transformers_throughput": per_way["saved_model"][tp] / per_way["transformers"][tp],
        "saved_model_vs_transformers_latency": per_way["transformers"]["b1_ms"] / per_way["saved_model"]["b1_ms"],
        "saved_model_vs_predict_throughput": per_way["saved_model"][tp] / per_way["predict"][tp],
        "saved_model_vs_predict_latency": per_way["predict"]["b1_ms"] / per_way["saved_model"]["b1_ms"],
    }
    result["load_1min_end"] = os.getloadavg()[0]
    result["notes"] = notes
    result["peak_rss_mb"] = peak_rss_mb()
    result["case_wall_s"] = time.perf_counter() - started
    return result
