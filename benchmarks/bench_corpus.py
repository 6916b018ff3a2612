"""Pretraining data at corpus scale (issue 21): static builders side by side, memory on a 400 MB corpus, and
the dynamic tf.data path against a BERT-base training step.

Every builder runs as a command in a subprocess, the way a user runs it, on the same sharded corpus (the
bundled corpus/pretrain.txt, its documents reordered per shard) with the original's flags: seq 128, 20
predictions, dupe 5, masked_lm_prob 0.15. Peak RSS is the largest `ru_maxrss` among the command's processes
(Beam's worker processes included); CPU seconds are user + system of all of them.
"""

import os
import re
import subprocess
import sys
import tempfile
import time

from benchmarks.fixtures import CORPUS, build_mlm, run_command, write_corpus, write_records, write_vocab
from benchmarks.harness import median_time
from benchmarks.machine import peak_rss_mb
from benchmarks.report import failed, fmt, table

FLAGS = dict(max_seq_length=128, max_predictions_per_seq=20, masked_lm_prob=0.15, dupe_factor=5,
             random_seed=12345, short_seq_prob=0.1)


def corpus_builder(impl, shards=8, documents_per_shard=None, dupe_factor=5, workers=1):
    """Instances/s of one static builder over the same corpus: `original` (Google's script, bert-tensorflow,
    under tf.compat.v1), `ours` (in-process, shard by shard) or `beam` (DirectRunner, `workers` processes,
    `--num_shards 0`: each worker writes what it builds). The builder's start-up (imports, vocabulary,
    Beam's workers) is measured apart, on a one-shard corpus of 3 documents, and the rates after start-up
    subtract it."""
    out = _build_command(impl, shards, documents_per_shard, dupe_factor, workers)
    start = _build_command(impl, 1, 3, 1, workers)
    wall, cpu = out["wall_s"] - start["wall_s"], out["cpu_s"] - start["cpu_s"]
    # A corpus too small to outlast the start-up (--quick) has no rate after it.
    return dict(out, startup_wall_s=start["wall_s"], startup_cpu_s=start["cpu_s"],
                steady_instances_per_s=out["instances"] / wall if wall > 0 else None,
                steady_instances_per_cpu_s=out["instances"] / cpu if cpu > 0 else None)


def _build_command(impl, shards, documents_per_shard, dupe_factor, workers):
    flags = dict(FLAGS, dupe_factor=dupe_factor)
    with tempfile.TemporaryDirectory() as tmp:
        paths = write_corpus(os.path.join(tmp, "corpus"), shards, documents_per_shard)
        vocab = write_vocab(os.path.join(tmp, "vocab.txt"))
        size_mb = sum(os.path.getsize(p) for p in paths) / 2**20
        if impl == "original":
            command = [sys.executable, "-m", "bert.create_pretraining_data", f"--input_file={','.join(paths)}",
                       f"--output_file={tmp}/original.tfrecord", f"--vocab_file={vocab}",
                       "--do_lower_case=True"] + [f"--{k}={v}" for k, v in flags.items()]
            pattern = r"Wrote (\d+) total instances"
        else:
            command = [sys.executable, "-m", "recipes.create_pretraining_data", "--input_file",
                       os.path.join(tmp, "corpus"), "--vocab_file", vocab, "--output_file",
                       f"{tmp}/out/train-{{shard:05d}}-of-{{num_shards:05d}}.tfrecord", "--num_shards", "4",
                       "--num_examples_to_print", "0"] + [x for k, v in flags.items() for x in (f"--{k}", str(v))]
            if impl == "beam":
                command[command.index("--num_shards") + 1] = "0"
                command += ["--runner", "DirectRunner", "--direct_num_workers", str(workers)]
            pattern = r"Wrote (\d+) instances"
        wall, cpu, rss, output = run_command(command)
        instances = int(re.findall(pattern, output)[-1])
    return {"instances": instances, "wall_s": wall, "cpu_s": cpu, "instances_per_s": instances / wall,
            "instances_per_cpu_s": instances / cpu, "peak_rss_mb": rss, "corpus_mb": size_mb,
            "shards": shards, "dupe_factor": dupe_factor, "workers": workers if impl == "beam" else 1}


_SPIN = "import time\nt = time.perf_counter()\nx = 0\nfor i in range({n}): x += i * i\nprint(time.perf_counter() - t)"


def parallel_ceiling(n=20_000_000, rounds=3):
    """What this machine gives two CPU-bound Python processes at once: the same loop alone, then two copies
    together, `rounds` times interleaved; the ratio (2 x alone / together) bounds any 2-worker speed-up."""
    code = _SPIN.format(n=n)
    ratios = []
    for _ in range(rounds):
        alone = float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout)
        start = time.perf_counter()
        pair = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE) for _ in range(2)]
        for proc in pair:
            proc.communicate()
        together = time.perf_counter() - start
        ratios.append(2 * alone / together)
    ratios.sort()
    return {"ratios": ratios, "median": ratios[len(ratios) // 2], "best": ratios[-1]}


def corpus_memory(corpus_mb=400, dupe_factor=1):
    """Peak RSS of the in-process builder on a `corpus_mb` corpus of 1.4 MB shards, and on its first shard
    alone (memory grows with the shard, not the corpus)."""
    shard_mb = os.path.getsize(CORPUS) / 2**20
    shards = max(1, round(corpus_mb / shard_mb))
    flags = dict(FLAGS, dupe_factor=dupe_factor)
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        paths = write_corpus(os.path.join(tmp, "corpus"), shards)
        vocab = write_vocab(os.path.join(tmp, "vocab.txt"))
        for name, inputs in (("one_shard", [paths[0]]), ("corpus", [os.path.join(tmp, "corpus")])):
            command = [sys.executable, "-m", "recipes.create_pretraining_data", "--input_file", *inputs,
                       "--vocab_file", vocab, "--output_file", f"{tmp}/{name}/train-{{shard}}.tfrecord",
                       "--num_shards", "8", "--num_examples_to_print", "0"]
            command += [x for k, v in flags.items() for x in (f"--{k}", str(v))]
            wall, cpu, rss, output = run_command(command)
            out[name] = {"instances": int(re.findall(r"Wrote (\d+) instances", output)[-1]), "wall_s": wall,
                         "peak_rss_mb": rss,
                         "input_mb": sum(os.path.getsize(p) for p in (paths[:1] if name == "one_shard" else paths)) / 2**20}
            import shutil

            shutil.rmtree(os.path.join(tmp, name), ignore_errors=True)
    return {"shards": shards, "dupe_factor": dupe_factor, **out}


def dynamic_feed(batch=32, seq=128, predictions=20, batches=200, step_repeats=3, shape="base", copies=4):
    """Input rate of `pretraining_dataset(TFRecord shards, dynamic=True)` (local and through a localhost
    tf.data service) against the consumption of a BERT-`shape` MLM training step at the same batch (`copies`
    of the bundled corpus in the shards)."""
    import tensorflow as tf

    from keras_pretrain.data import pretraining_dataset
    from keras_pretrain.models.bert.bert_tokenizer import BertTokenizer

    with tempfile.TemporaryDirectory() as tmp:
        files, vocab = write_records(tmp, seq, predictions, copies)
        tokenizer = BertTokenizer(vocabulary=vocab, lowercase=True)

        def rate(**kwargs):
            dataset = pretraining_dataset(files, tokenizer, seq_length=seq, max_predictions=predictions,
                                          batch_size=batch, dynamic=True, drop_remainder=True, **kwargs).repeat()
            iterator = iter(dataset)
            for _ in range(10):
                next(iterator)
            start = time.perf_counter()
            for _ in range(batches):
                next(iterator)
            return batches * batch / (time.perf_counter() - start)

        local = rate()
        dispatcher = tf.data.experimental.service.DispatchServer()
        worker = tf.data.experimental.service.WorkerServer(tf.data.experimental.service.WorkerConfig(
            dispatcher_address=dispatcher.target.split("://")[1]))
        served = rate(data_service=dispatcher.target)
        del worker, dispatcher
    step, _, _ = build_mlm("ours", shape, batch, seq, predictions)
    seconds, _ = median_time(step, step_repeats, 1)
    consumption = batch / seconds
    return {"local_seq_per_s": local, "service_seq_per_s": served, "step_seq_per_s": consumption,
            "step_s": seconds, "batch": batch, "seq": seq, "shape": shape,
            "peak_rss_mb": peak_rss_mb()}


def report(by, quick):
    """(markdown section, targets) from the results keyed (group, label)."""
    rows, targets = [], []
    built = {label: r for (group, label), r in by.items()
             if group == "corpus" and label.startswith("builder") and label != "builder machine ceiling"}
    base = built.get("builder original", {})

    def vs(r, key):
        return f"{r[key] / base[key]:.2f}x" if base and not failed(base) and r[key] and base[key] else "-"

    for label, r in built.items():
        problem = failed(r)
        if problem:
            rows.append([label, problem] + ["-"] * 8)
            continue
        rows.append([label, fmt(r["instances"]), fmt(r["instances_per_s"]), fmt(r["instances_per_cpu_s"]),
                     f"{vs(r, 'instances_per_s')} / {vs(r, 'instances_per_cpu_s')}",
                     fmt(r["wall_s"], 1), fmt(r["cpu_s"], 1), fmt(r["startup_wall_s"], 1),
                     f"{vs(r, 'steady_instances_per_s')} / {vs(r, 'steady_instances_per_cpu_s')}",
                     fmt(r["peak_rss_mb"])])
    ok = {k: r for k, r in built.items() if not failed(r)}
    original, ours = ok.get("builder original"), ok.get("builder ours (in-process)")
    beam1, beam2 = ok.get("builder beam 1 worker"), ok.get("builder beam 2 workers")
    sections = []
    if rows:
        corpus = next(iter(ok.values()), {})
        sections.append(
            f"### Static pretraining data (seq 128, 20 predictions, dupe {corpus.get('dupe_factor', '?')}; "
            f"{corpus.get('shards', '?')} shards, {corpus.get('corpus_mb', 0):.1f} MB; whole commands; start-up "
            f"= the same command on 3 documents)\n\n"
            + table(["builder", "instances", "instances/s", "instances per CPU-second", "vs original (wall / CPU)",
                     "wall s", "CPU s", "start-up s", "vs original after start-up (wall / CPU)", "peak RSS MB"],
                    rows))
    if original and ours and ours["steady_instances_per_cpu_s"] and original["steady_instances_per_cpu_s"]:
        per_core = ours["steady_instances_per_cpu_s"] / original["steady_instances_per_cpu_s"]
        targets.append(("Static data: ours in-process >= 3x Google's original per core (instances per CPU-second "
                        "after start-up)",
                        f"{per_core:.2f}x ({ours['instances_per_cpu_s'] / original['instances_per_cpu_s']:.2f}x "
                        f"with start-up)", per_core >= 3.0))
    ceiling = by.get(("corpus", "builder machine ceiling"))
    if ceiling is not None and not failed(ceiling):
        sections.append(
            "Two CPU-bound Python processes at once on this machine (the same loop alone, then two copies "
            "together, interleaved): " + ", ".join(f"{x:.2f}x" for x in ceiling["ratios"])
            + " the throughput of one; no 2-worker run can do better.")
    if beam1 and beam2 and beam1["steady_instances_per_s"] and beam2["steady_instances_per_s"]:
        speedup = beam2["steady_instances_per_s"] / beam1["steady_instances_per_s"]
        bound = f"; the machine gives two processes {ceiling['median']:.2f}x" if ceiling and not failed(ceiling) else ""
        targets.append(("Static data: Beam DirectRunner 2 workers >= 1.7x 1 worker (instances/s after start-up)",
                        f"{speedup:.2f}x ({beam2['instances_per_s'] / beam1['instances_per_s']:.2f}x with "
                        f"start-up{bound})", speedup >= 1.7))

    def measured(label, title):
        """The result labelled `label` if it measured; a failed one becomes a section `title` with its problem."""
        r = by.get(("corpus", label))
        problem = failed(r) if r is not None else None
        if problem:
            sections.append(f"### {title}\n\n{problem}")
        return None if problem else r

    m = measured("memory", "Memory at corpus scale")
    if m is not None:
        c, one = m["corpus"], m["one_shard"]
        sections.append(
            f"### Memory at corpus scale (in-process, dupe {m['dupe_factor']})\n\n" + table(
                ["input", "MB", "instances", "wall s", "peak RSS MB"],
                [["first shard alone", fmt(one["input_mb"], 1), fmt(one["instances"]), fmt(one["wall_s"], 1),
                  fmt(one["peak_rss_mb"])],
                 [f"whole corpus ({m['shards']} shards)", fmt(c["input_mb"]), fmt(c["instances"]),
                  fmt(c["wall_s"], 1), fmt(c["peak_rss_mb"])]]))
        targets.append((f"Static data: peak RSS < 1 GB on a {c['input_mb']:.0f} MB corpus (in-process)",
                        f"{c['peak_rss_mb']:.0f} MB (one shard: {one['peak_rss_mb']:.0f} MB)",
                        c["peak_rss_mb"] < 1024))
    d = measured("dynamic feed", "Dynamic input pipeline")
    if d is not None:
        sections.append(
            f"### Dynamic input pipeline (TFRecord shards, interleave, masked in the graph; batch {d['batch']}, "
            f"seq {d['seq']})\n\n" + table(
                ["what", "sequences/s", "x the step's consumption"],
                [["pretraining_dataset(dynamic=True), local", fmt(d["local_seq_per_s"]),
                  f"{d['local_seq_per_s'] / d['step_seq_per_s']:.1f}x"],
                 ["the same through a localhost tf.data service (1 worker)", fmt(d["service_seq_per_s"]),
                  f"{d['service_seq_per_s'] / d['step_seq_per_s']:.1f}x"],
                 [f"BERT-{d['shape']} MLM training step (ours, TensorFlow, this machine)",
                  fmt(d["step_seq_per_s"], 1), "1x"]])
            + f"\n\nAt 5x, the slower of the two input rates keeps fed any step that takes more than "
              f"{5 * d['batch'] / min(d['local_seq_per_s'], d['service_seq_per_s']) * 1000:.1f} ms per batch of "
              f"{d['batch']}, measured alone on this machine's 2 cores.")
        for name, key in (("local", "local_seq_per_s"), ("tf.data service", "service_seq_per_s")):
            x = d[key] / d["step_seq_per_s"]
            targets.append((f"Dynamic input ({name}) >= 5x a BERT-{d['shape']} step's consumption",
                            f"{x:.1f}x", x >= 5.0))
    return sections, targets
