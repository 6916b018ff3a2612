"""The serving SavedModels of the sentence and token tasks, strings in (issue 45, item 3), measured as
`bench_qa.qa_serving`: our SavedModel vs transformers' tokenizer + model + the same post-processing in Python, both
in ONE process, the same threads, batch-1 latency and batch-`batch` throughput in alternating rounds, paired ratios.

    KERAS_BACKEND=tensorflow python -m benchmarks.cases task_serving '{"task": "ner", "shape": "tiny", "rounds": 2}'

`task="classify"`: `SequenceClassifier(BertBackbone(...), 2)` exported by `keras_pretrain.export.export_serving`
(`text` in; `labels`, `probabilities` out) vs `BertTokenizerFast` + `BertForSequenceClassification` + softmax,
argmax and the label names in numpy. `task="ner"`: `TokenClassifier(BertBackbone(...), 9)` exported by
`export_tagging_serving` (`text` in; per word `tags`, and the entities with their offsets and scores out) vs
`BertTokenizerFast(is_split_into_words=True)` + `BertForTokenClassification` + the same post-processing in Python:
each word's tag from its first piece, the entities by conlleval's chunking (`entities` of
`keras_pretrain.tasks.token_classification.metrics`), their text, character offsets and mean word probability.
`task="regression"` (STS-B's shape): `SequenceClassifier(BertBackbone(...), 1, problem_type="regression")`
exported with `pair=True` (`text_a`, `text_b` in; `scores` out) vs
`BertForSequenceClassification(num_labels=1)` on the tokenized pairs, the scores `logits[:, 0]`.
`task="choice"` (SWAG's shape): `MultipleChoice(BertBackbone(...), 4)` exported by `export_choice_serving`
(`context` [B] and `endings` [B, 4] in; `choice`, `probabilities` out) vs `BertForMultipleChoice` on the 4 B
tokenized (context, ending) pairs folded to [B, 4, seq], softmax and argmax in numpy. Its batch counts examples:
`batch` 8 is 32 sequences, as the other tasks' batch 32.

Same work: random weights (BERT-base or tiny), the transformers model converted from ours
(`keras_pretrain.convert.to_huggingface`: same weights; its tanh GELU loaded as the fused `gelu_pytorch_tanh`),
both tokenizers reading one WordPiece vocabulary learned from the bundled corpus, sentences of the corpus's English
lines that fit one window, every sequence padded to `seq` on both sides (checked: the SavedModel's encoder output
shape), the predictions compared (labels, or every word's tag). Export and conversion are untimed.
"""

import itertools
import os
import statistics
import time

import numpy as np

from benchmarks.bench_qa import SERVING_NOTE, _dims, _english_words
from benchmarks.fixtures import TANH_GELU, Skip, write_vocab
from benchmarks.harness import paired, ratio_text, set_threads
from benchmarks.machine import keras_backend, peak_rss_mb
from benchmarks.report import cases, fmt, table

TASKS = ("classify", "ner", "regression", "choice")
CHOICES = 4  # SWAG's
LABELS = {"classify": ("negative", "positive"), "regression": ("score",), "choice": None,
          "ner": ("O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC")}


def sentences(count, hf_tokenizer, seq, seed=0, words=(8, 40)):
    """`count` sentences of consecutive corpus words (`words` words each, drawn), each fitting one window of `seq`
    (at most `seq - 2` pieces: no truncation, no second window on either side)."""
    rs = np.random.RandomState(seed)
    corpus = _english_words()
    out = []
    while len(out) < count:
        start, length = rs.randint(0, len(corpus) - words[1]), rs.randint(words[0], words[1] + 1)
        text = " ".join(corpus[start:start + length])
        if len(hf_tokenizer(text, add_special_tokens=False)["input_ids"]) <= seq - 2:
            out.append(text)
    return out


def fits(hf_tokenizer, seq, first, second=None):
    """Whether `first` (and `second`) fit one window of `seq` with their specials (no truncation on either side)."""
    pieces = sum(len(hf_tokenizer(text, add_special_tokens=False)["input_ids"]) for text in (first, second) if text)
    return pieces <= seq - (3 if second else 2)


def examples(task, count, hf_tokenizer, seq, seed=0):
    """`count` inputs of `task`, each fitting one window of `seq`: a sentence ("classify", "ner"), a pair (a, b)
    ("regression") or (context, 4 endings) ("choice")."""
    if task in ("classify", "ner"):
        return sentences(count, hf_tokenizer, seq, seed)
    pool = _sentence_pool(hf_tokenizer, seq, seed, words=(4, max(4, min(24, seq // 4))))
    out = []
    while len(out) < count:
        if task == "regression":
            a, b = next(pool), next(pool)
            if fits(hf_tokenizer, seq, a, b):
                out.append((a, b))
            continue
        context, endings = next(pool), [next(pool) for _ in range(CHOICES)]
        if all(fits(hf_tokenizer, seq, context, ending) for ending in endings):
            out.append((context, endings))
    return out


def _sentence_pool(hf_tokenizer, seq, seed, words):
    """Endless `sentences` (drawn 64 at a time, each chunk its own seed)."""
    for chunk in itertools.count():
        yield from sentences(64, hf_tokenizer, seq, seed=seed * 100_003 + chunk, words=words)


def task_serving(task="classify", shape="base", seq=128, batch=None, rounds=5, latency_rounds=None, threads=1,
                 vocab_size=30522):
    """Strings in: our task serving SavedModel vs transformers' tokenizer + model + the same Python post-processing.

    Args:
        task: "classify" (sentence classification, 2 labels), "ner" (token classification, CoNLL's 9 tags),
            "regression" (sentence pairs, one score) or "choice" (a context and 4 endings).
        shape: "base" (BERT-base, random weights) or "tiny" (a smoke run).
        seq: the packed length (both sides pad to it).
        batch: the throughput batch (examples per call; default 32, "choice" 8: 32 sequences either way).
        rounds: timed throughput rounds; latency_rounds: timed batch-1 rounds (default `rounds`), one sentence per
            round (the same for both sides), after one untimed call of each side per batch size.
        threads: threads per library (`set_threads`).
        vocab_size: the WordPiece vocabulary learned from the corpus (`benchmarks.fixtures.write_vocab`).

    Returns:
        A JSON-serialisable dict: latency (b1 ms) and throughput (examples/s, key `sentences_per_s`) per side with
        their times,
        `vs_transformers` {latency, throughput}: {median, min, max, per_round} of transformers time / ours; how many
        predictions agree; notes.
    """
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")
    if keras_backend() != "tensorflow":
        raise Skip(SERVING_NOTE)
    batch = batch or (8 if task == "choice" else 32)
    settings, restore = set_threads(threads)
    try:
        return _task_serving(task, shape, seq, batch, rounds, latency_rounds or rounds, settings, vocab_size)
    finally:
        restore()


def _our_model(task, d):
    from keras_pretrain.models.bert import BertBackbone
    from keras_pretrain.tasks import MultipleChoice
    from keras_pretrain.tasks import SequenceClassifier
    from keras_pretrain.tasks import TokenClassifier

    backbone = BertBackbone(vocabulary_size=d["V"], num_layers=d["L"], num_heads=d["A"], hidden_dim=d["H"],
                            intermediate_dim=d["I"], max_sequence_length=512)
    if task == "classify":
        return SequenceClassifier(backbone, len(LABELS[task]))
    if task == "regression":
        return SequenceClassifier(backbone, 1, problem_type="regression")
    if task == "choice":
        return MultipleChoice(backbone, num_choices=CHOICES)
    return TokenClassifier(backbone, len(LABELS[task]))


def _export(task, model, path, tokenizer, seq):
    from keras_pretrain.tasks.classification.serving import export_serving
    from keras_pretrain.tasks.multiple_choice.serving import export_choice_serving
    from keras_pretrain.tasks.token_classification.serving import export_tagging_serving

    if task in ("classify", "regression"):
        return export_serving(model, path, tokenizer, labels=list(LABELS[task]), pair=task == "regression",
                              seq_length=seq)
    if task == "choice":
        return export_choice_serving(model, path, tokenizer, seq_length=seq)
    return export_tagging_serving(model, path, tokenizer, list(LABELS[task]), seq_length=seq)


def word_tags(logits, word_ids, labels):
    """Per word (its first piece, as transformers' `aggregation_strategy="first"`): (tag, probability)."""
    probabilities = np.exp(logits - logits.max(-1, keepdims=True))
    probabilities /= probabilities.sum(-1, keepdims=True)
    tags, seen = [], set()
    for position, word in enumerate(word_ids):
        if word is None or word in seen:
            continue
        seen.add(word)
        best = int(np.argmax(logits[position]))
        tags.append((labels[best], float(probabilities[position, best])))
    return tags


def word_entities(text, words, tags):
    """The entities of one sentence from its words' (tag, probability): conlleval's chunks
    (`keras_pretrain.tasks.token_classification.metrics.entities`) with their text, character offsets in `text`
    and mean probability."""
    from keras_pretrain.tasks.token_classification.metrics import entities

    offsets, cursor = [], 0
    for word in words:
        start = text.index(word, cursor)
        offsets.append((start, start + len(word)))
        cursor = start + len(word)
    out = []
    for kind, first, end in entities([tag for tag, _ in tags]):
        a, b = offsets[first][0], offsets[end - 1][1]
        out.append((text[a:b], kind, a, b, float(np.mean([p for _, p in tags[first:end]]))))
    return out


def _task_serving(task, shape, seq, batch, rounds, latency_rounds, settings, vocab_size):
    import tempfile

    import keras
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the SavedModel's ops, before tf.saved_model.load)
    import torch
    import transformers as t

    from keras_pretrain.convert import to_huggingface
    from keras_pretrain.export.serving import preprocessor_of
    from keras_pretrain.models.bert import BertTokenizer

    started = time.perf_counter()
    keras.utils.set_random_seed(0)  # before any tokenizer exists (see bench_serving.saved_model_serving)
    d = _dims(shape)
    labels = LABELS[task]
    result = {"task": task, "backend": keras.config.backend(), "shape": shape, "dims": d, "seq": seq,
              "batch": batch, "rounds": rounds, "latency_rounds": latency_rounds, "threads": settings}
    notes = [SERVING_NOTE]
    hf_class = {"ner": "AutoModelForTokenClassification", "choice": "AutoModelForMultipleChoice"}.get(
        task, "AutoModelForSequenceClassification")
    with tempfile.TemporaryDirectory() as tmp:
        vocab = write_vocab(os.path.join(tmp, "vocab.txt"), vocab_size)
        ours_tok = BertTokenizer(vocabulary=vocab, lowercase=True)
        hf_tok = t.BertTokenizerFast(vocab=vocab, do_lower_case=True)  # transformers 5 ignores `vocab_file`
        d["V"] = max(d["V"], int(ours_tok.vocabulary_size()))
        texts = examples(task, batch, hf_tok, seq)
        model = _our_model(task, d)
        result["params"] = int(model.count_params())
        begin = time.perf_counter()
        path = _export(task, model, os.path.join(tmp, task, "1"), ours_tok, seq)
        serve = tf.saved_model.load(path).signatures["serving_default"]
        result["export_load_s"] = time.perf_counter() - begin
        begin = time.perf_counter()
        folder = to_huggingface(model, os.path.join(tmp, "hf"), tokenizer=ours_tok)
        hf = getattr(t, hf_class).from_pretrained(folder, hidden_act=TANH_GELU).eval()
        result["convert_load_s"] = time.perf_counter() - begin
        result["transformers_class"] = type(hf).__name__
        result["transformers_params"] = int(sum(p.numel() for p in hf.parameters()))

    if task in ("classify", "regression"):  # the SavedModel's packed length: the same padding as transformers'
        encode = preprocessor_of(model, ours_tok).serving_encoder(tf, model.backbone, seq)
        columns = [texts[:2]] if task == "classify" else [[a for a, _ in texts[:2]], [b for _, b in texts[:2]]]
        packed = tf.function(encode)(*[tf.constant(c) for c in columns])["token_ids"]
        result["ours_packed_shape"] = [int(n) for n in packed.shape]
        if result["ours_packed_shape"] != [2, seq]:
            raise AssertionError(f"our SavedModel packs {result['ours_packed_shape']}, transformers [2, {seq}]")

    def ours(xs):
        if task == "regression":
            return list(serve(text_a=tf.constant([a for a, _ in xs]),
                              text_b=tf.constant([b for _, b in xs]))["scores"].numpy())
        if task == "choice":
            return list(serve(context=tf.constant([c for c, _ in xs]),
                              endings=tf.constant([e for _, e in xs]))["choice"].numpy())
        out = serve(text=tf.constant(xs))
        if task == "classify":
            return [label.decode("utf-8") for label in out["labels"].numpy()]
        return [[tag.decode("utf-8") for tag in row[:len(x.split())]] for row, x in zip(out["tags"].numpy(), xs)]

    def transformers_(xs):
        if task in ("regression", "choice"):
            firsts = [a for a, b in xs for _ in (b if task == "choice" else [b])]
            seconds = [b for _, bs in xs for b in (bs if task == "choice" else [bs])]
            enc = hf_tok(firsts, seconds, truncation=True, max_length=seq, padding="max_length", return_tensors="pt")
            if task == "choice":
                enc = {k: v.view(len(xs), CHOICES, seq) for k, v in enc.items()}
            with torch.inference_mode():
                logits = hf(**enc).logits.numpy()
            if task == "regression":
                return list(logits[:, 0])
            probabilities = np.exp(logits - logits.max(-1, keepdims=True))
            probabilities /= probabilities.sum(-1, keepdims=True)
            return list(probabilities.argmax(-1))
        if task == "classify":
            enc = hf_tok(xs, truncation=True, max_length=seq, padding="max_length", return_tensors="pt")
            with torch.inference_mode():
                logits = hf(**enc).logits.numpy()
            probabilities = np.exp(logits - logits.max(-1, keepdims=True))
            probabilities /= probabilities.sum(-1, keepdims=True)
            return [labels[i] for i in probabilities.argmax(-1)]
        words = [x.split() for x in xs]
        enc = hf_tok(words, is_split_into_words=True, truncation=True, max_length=seq, padding="max_length",
                     return_tensors="pt")
        with torch.inference_mode():
            logits = hf(**enc).logits.numpy()
        out = []
        for i, x in enumerate(xs):
            tags = word_tags(logits[i], enc.word_ids(i), labels)
            word_entities(x, words[i], tags)  # the entities, as our SavedModel returns them
            out.append([tag for tag, _ in tags])
        return out

    sides = {"ours": ours, "transformers": transformers_}
    times, first, predictions = {}, {}, {}
    for key, size, count in ((f"b{batch}", batch, rounds), ("b1", 1, latency_rounds)):
        for name, fn in sides.items():  # untimed: tracing, allocator warm-up
            begin = time.perf_counter()
            out = fn(texts[:size])
            first[f"{name}_{key}_s"] = time.perf_counter() - begin
            if size == batch:
                predictions[name] = out
        names = list(sides)
        times[key] = {name: [] for name in names}
        for r in range(count):
            index = 0 if size == batch else r % batch  # batch 1: one sentence per round, the same for both
            for name in names[r % 2:] + names[:r % 2]:
                begin = time.perf_counter()
                sides[name](texts[index:index + size])
                times[key][name].append(time.perf_counter() - begin)
    b1, bn = times["b1"], times[f"b{batch}"]
    for name in names:
        result[name] = {"b1_ms": 1000 * statistics.median(b1[name]),
                        "sentences_per_s": batch / statistics.median(bn[name]), "b1_times": b1[name],
                        f"b{batch}_times": bn[name]}
    result["first_calls_s"] = first
    result["vs_transformers"] = {"latency": paired(b1["transformers"], b1["ours"]),
                                 "throughput": paired(bn["transformers"], bn["ours"])}
    if task in ("classify", "choice"):
        same = sum(int(o) == int(h) if task == "choice" else o == h
                   for o, h in zip(predictions["ours"], predictions["transformers"]))
        result["agreement"] = f"{same}/{batch} {'choices' if task == 'choice' else 'labels'}"
    elif task == "regression":
        gap = float(np.max(np.abs(np.subtract(predictions["ours"], predictions["transformers"]))))
        result["agreement"] = f"max score difference {gap:.1e}"
    else:
        pairs = [(o, h) for ours_row, hf_row in zip(predictions["ours"], predictions["transformers"])
                 for o, h in zip(ours_row, hf_row)]
        result["agreement"] = f"{sum(o == h for o, h in pairs)}/{len(pairs)} word tags"
        notes.append("transformers' side: each word's first piece (word_ids), softmax and argmax in numpy, then "
                     "the entities (conlleval chunks, their text, offsets and mean probability) in Python; ours "
                     "does the same in its graph, plus windows for long sentences (none here)")
    if task == "choice":
        notes.append(f"multiple choice: an example is a context and {CHOICES} endings ({CHOICES} packed pairs); "
                     f"batch {batch} examples = {batch * CHOICES} sequences; transformers' side: softmax and argmax "
                     "over the choices in numpy")
    if task == "regression":
        notes.append("regression: an example is a sentence pair (STS-B); transformers' side: the score logits[:, 0]")
    result["notes"] = notes
    result["peak_rss_mb"] = peak_rss_mb()
    result["case_wall_s"] = time.perf_counter() - started
    return result


# --- Report ---------------------------------------------------------------------------------------------


def report(by, quick):
    """(markdown sections, targets) of the task-serving results: group "serving", labels "task {task}". Target
    (base size): batch throughput >= 1x transformers' (as the SQuAD serving case: the issue names no ratio)."""
    rows, notes, targets = [], {}, []
    for label, r in cases(by, "serving", "task", rows, 8):
        o, h, vs = r["ours"], r["transformers"], r["vs_transformers"]
        notes.update(dict.fromkeys(r.get("notes", [])))
        rows.append([r["task"], f"{r['shape']} ({fmt(r['params'] / 1e6, 1)}M)", fmt(o["b1_ms"]), fmt(h["b1_ms"]),
                     ratio_text(vs["latency"]), fmt(o["sentences_per_s"], 1), fmt(h["sentences_per_s"], 1),
                     ratio_text(vs["throughput"]), r["agreement"], r["threads"]["threads"]])
        if r["shape"] == "base":
            targets.append((f"{r['task']} serving (strings in): SavedModel batch-{r['batch']} throughput >= 1x "
                            "transformers tokenizer + model + Python post-processing (the issue names no ratio)",
                            f"throughput {ratio_text(vs['throughput'])}, latency {ratio_text(vs['latency'])}",
                            vs["throughput"]["median"] >= 1.0))
    sections = []
    if rows:
        sections.append("### Task serving: strings in (seq 128; our SavedModel vs BertTokenizerFast + "
                        "BertFor{Sequence,Token}Classification / BertForMultipleChoice (same weights) + the same "
                        "post-processing in Python; "
                        "one process, rounds alternating; ratios = median of per-round transformers / ours "
                        "(min-max))\n\n"
                        + table(["task", "model", "ours b1 ms", "transformers b1 ms", "latency ratio",
                                 "ours examples/s", "transformers examples/s", "throughput ratio",
                                 "predictions that agree", "threads per side"], rows)
                        + ("\n\n" + "\n".join(f"- {note}" for note in notes) if notes else ""))
    return sections, targets
