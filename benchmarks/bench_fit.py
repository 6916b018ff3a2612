"""`model.fit` on the real input pipeline against `train_on_batch` on a fixed batch (issue 22, item 2).

One process per backend (KERAS_BACKEND): TFRecord shards of the bundled corpus written by
`recipes.create_pretraining_data`, read back by `keras_pretrain.data.pretraining_dataset` (static: the records
as written; dynamic: masked anew in the tf.data graph), fed to a `BertPretrainer` (MLM + NSP, the recipe's
model) by `model.fit`. The same model's `train_on_batch` on one batch of the same dataset, already in memory,
is the step rate without any input pipeline. Each round times the three (static, dynamic, `train_on_batch`)
on one model; the ratio is the median over rounds of (fit steps/s) / (train_on_batch steps/s), 1.0 = the
pipeline costs nothing.

Inside `fit` the steps are timed from the end of the first batch of each call to the end of the last (a
callback), so the iterator's start (the shuffle buffer's first fill) is not counted; it is reported apart
as `fit_call_overhead_s`, paid once per `fit` in a real run.
"""

import statistics
import tempfile
import time

from benchmarks.fixtures import MLM_SHAPES, write_records
from benchmarks.machine import keras_backend
from benchmarks.report import cases, fmt, table


def _step_clock():
    """A Keras callback recording when `fit` starts and when each training batch ends."""
    import keras

    class StepClock(keras.callbacks.Callback):
        def on_train_begin(self, logs=None):
            self.begin, self.ends = time.perf_counter(), []

        def on_train_batch_end(self, batch, logs=None):
            self.ends.append(time.perf_counter())

    return StepClock()


def fit_vs_step(shapes=("small", "base"), batch=None, seq=128, predictions=20, steps=None, rounds=4,
                copies=4):
    """For each shape in `shapes`: the step rate of `model.fit` on `pretraining_dataset` with static and with
    dynamic masking, and of `train_on_batch`, in rounds that each time all three (the order rotating) after
    one untimed round. Batch 16 (small) and 8 (base) unless `batch`; `steps` per timed run: 10 (small), 3
    (base), 4 (tiny) unless given; `copies` of the bundled corpus in the shards. Short rounds, many of
    them: a load change on the shared machine lasts seconds, and the paired median of 4 rounds drops a round
    it hit (2 rounds of 20 / 5 steps, each masking in its own rounds, moved the ratio by up to 9%)."""
    import keras
    import numpy as np

    from keras_pretrain.data import pretraining_dataset
    from keras_pretrain.models.bert import BertBackbone, BertPretrainer
    from keras_pretrain.models.bert.bert_tokenizer import BertTokenizer
    from keras_pretrain.optimizers import AdamW

    results = {"backend": keras_backend(), "seq": seq, "rounds": rounds, "cases": []}
    with tempfile.TemporaryDirectory() as tmp:
        files, vocab = write_records(tmp, seq, predictions, copies)
        tokenizer = BertTokenizer(vocabulary=vocab, lowercase=True)
        for shape in shapes:
            dims = MLM_SHAPES[shape]
            size = batch or {"small": 16, "base": 8}.get(shape, 4)
            count = steps or {"small": 10, "base": 3}.get(shape, 4)
            keras.utils.set_random_seed(0)
            backbone = BertBackbone(vocabulary_size=tokenizer.vocabulary_size(), num_layers=dims["L"],
                                    num_heads=dims["A"], hidden_dim=dims["H"], intermediate_dim=dims["I"])
            model = BertPretrainer(backbone)
            model.compile(optimizer=AdamW(1e-4, weight_decay=0.01))
            datasets = {dynamic: pretraining_dataset(files, tokenizer, seq_length=seq, max_predictions=predictions,
                                                     batch_size=size, dynamic=dynamic, drop_remainder=True).repeat()
                        for dynamic in (False, True)}
            fixed = {k: np.asarray(v) for k, v in next(iter(datasets[True])).items()}
            model.train_on_batch(fixed)  # compiles the train function fit uses too
            clock = _step_clock()
            rates = {"tob": [], False: [], True: []}
            overhead = {False: [], True: []}
            modes = ["tob", False, True]
            for r in range(rounds + 1):  # round 0: warm-up, untimed
                for mode in modes[r % 3:] + modes[:r % 3]:
                    if mode == "tob":
                        start = time.perf_counter()
                        for _ in range(count):
                            model.train_on_batch(fixed)
                        rate = count / (time.perf_counter() - start)
                    else:
                        model.fit(datasets[mode], steps_per_epoch=count + 1, epochs=1, verbose=0, shuffle=False,
                                  callbacks=[clock])
                        rate = count / (clock.ends[-1] - clock.ends[0])
                        if r:
                            overhead[mode].append(clock.ends[0] - clock.begin)
                    if r:
                        rates[mode].append(rate)
            for dynamic in (False, True):
                results["cases"].append({
                    "shape": shape, "batch": size, "dynamic": dynamic, "steps_per_round": count,
                    "tob_steps_per_s": statistics.median(rates["tob"]),
                    "fit_steps_per_s": statistics.median(rates[dynamic]),
                    "ratio": statistics.median(f / t for f, t in zip(rates[dynamic], rates["tob"])),
                    "tob": rates["tob"], "fit": rates[dynamic],
                    "fit_call_overhead_s": statistics.median(overhead[dynamic]),
                })
    return results


def report(by, quick):
    """(markdown sections, targets) of the fit group, from the results keyed (group, label)."""
    rows, targets, worst, backends = [], [], {}, set()
    for label, r in cases(by, "fit", "", rows, 6):
        backends.add(r["backend"])
        for c in r["cases"]:
            rows.append([r["backend"], f"{c['shape']} (batch {c['batch']})", "dynamic" if c["dynamic"] else "static",
                         fmt(c["tob_steps_per_s"], 2), fmt(c["fit_steps_per_s"], 2), f"{100 * c['ratio']:.1f}%",
                         fmt(c["fit_call_overhead_s"], 1)])
            key = c["shape"]
            where = f"{r['backend']} {'dynamic' if c['dynamic'] else 'static'}"
            worst[key] = min(worst.get(key, (9, "")), (c["ratio"], where))
    sections = []
    if rows:
        sections.append(
            "### `fit` on the real pipeline vs `train_on_batch` (BERT MLM + NSP, TFRecord shards of the bundled "
            "corpus through `pretraining_dataset`; steps inside each `fit` call after its first batch)\n\n"
            + table(["backend", "shape", "masking", "train_on_batch steps/s", "fit steps/s",
                     "fit / train_on_batch (paired median)", "fit call start s (first batch)"], rows))
    for shape, (value, where) in sorted(worst.items()):
        if shape in ("small", "base"):
            measured_on = ", ".join(sorted(backends))
            targets.append((f"fit on pretraining_dataset >= 95% of train_on_batch, BERT-{shape} ({measured_on})",
                            f"lowest {100 * value:.1f}% ({where})", value >= 0.95))
    return sections, targets
