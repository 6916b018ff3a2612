"""Serving-side cases (issue 22): int8 weight quantization of our encoders (`model.quantize("int8")`).

Float32 and int8 copies of the same backbone (same weights) in one process, batch-32 forward passes timed in
alternating rounds; the error is the max abs difference of the pooled outputs on the same inputs.
"""

import statistics
import time

import numpy as np


def encoder_int8(family="bert", tiny=False, seq=128, batch=32, rounds=3):
    """Batch-`batch` throughput of our `family` backbone in float32 and after `quantize("int8")`."""
    import keras

    from benchmarks.cases import ENCODERS, TINY, _backend, _our_encoder

    d = dict(TINY if tiny else ENCODERS[family])
    keras.utils.set_random_seed(0)
    try:
        model, names, params = _our_encoder(family, d, outputs=("sequence_output", "pooled_output"))
    except KeyError:  # no pooler (RoBERTa, DistilBERT): the first token's vector, as their classifiers take
        model, names, params = _our_encoder(family, d)
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
    return {"family": family, "backend": _backend(), "params": int(params), "batch": batch, "seq": seq,
            "times": times, "float32_s": medians["float32"], "int8_s": medians["int8"],
            "speedup": medians["float32"] / medians["int8"],
            "float32_tokens_per_s": batch * seq / medians["float32"], "int8_tokens_per_s": batch * seq / medians["int8"],
            "pooled_max_abs_diff": float(np.max(np.abs(pooled["int8"] - pooled["float32"]))),
            "pooled_max_abs": float(np.max(np.abs(pooled["float32"]))),
            "sequence_max_abs_diff": float(np.max(np.abs(sequence["int8"] - sequence["float32"])))}


def report(by, quick):
    """(markdown sections, targets) of the serving group."""
    from benchmarks.run import failed, fmt, table

    rows = []
    for (group, label), r in by.items():
        if group != "serving" or not label.startswith("int8"):
            continue
        problem = failed(r)
        if problem:
            rows.append([label, problem] + ["-"] * 5)
            continue
        rows.append([f"{r['family']} ({r['backend']})", fmt(r["float32_tokens_per_s"]), fmt(r["int8_tokens_per_s"]),
                     f"{r['speedup']:.2f}x", f"{r['pooled_max_abs_diff']:.2e} (of {r['pooled_max_abs']:.2f})",
                     f"{r['sequence_max_abs_diff']:.2e}"])
    if not rows:
        return [], []
    return [("### int8 weight quantization (`quantize(\"int8\")`, batch 32, seq 128, random weights; float32 and "
             "int8 copies in one process, rounds alternating)\n\n"
             + table(["encoder", "float32 tokens/s", "int8 tokens/s", "speed-up", "pooled output max abs diff",
                      "sequence output max abs diff"], rows))], []
