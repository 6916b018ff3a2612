"""Tiny ELMo releases in exactly the published bilm-tf / AllenNLP layout, and
bilm-tf itself run on them as the reference.

`build(folder, config)` writes what allennlp.org/elmo publishes for a model,
shrunk: `elmo_<L>x<C>_<D>_<F>cnn_<H>xhighway_options.json` (the `lstm` and
`char_cnn` sections bilm-tf reads, optionally the training keys
`bin/train_elmo.py` adds) and `..._weights.hdf5` with the dataset names and
shapes bilm-tf's `training.dump_weights` writes (`char_embed` with 261 rows:
the training graph has no padding row; `CNN/W_cnn_i` with a leading 1;
`RNN_d/RNN/MultiRNNCell/Cell<i>/LSTMCell/{W_0,B,W_P_0}`; no `W_P_0` when the
LSTM has no projection, no `CNN_proj` when the filters sum to the projection
width). With `softmax=True` it also writes a training-run folder `softmax/`
(TF1 checkpoint `model.ckpt-10` holding `lm/softmax/W` [V, D], `lm/softmax/b`
[V] among other training variables, its `checkpoint` state file) and bilm's
vocabulary file `vocab.txt` (`</S>`, `<S>`, `<UNK>` first, as the 1B Word
Benchmark vocabulary). Weights are random (fixed seed, moderate scale).

Run as a script (`python make_bilm_release.py reference SPEC.json`) it runs
bilm-tf (`BidirectionalLanguageModel` + `Batcher`, TF1 graph mode through
`tf.compat.v1`) on releases and sentences named in SPEC.json and writes the
outputs of consecutive calls to an .npz (see `run_reference`); it can also
save bilm's graph as a TF1 SavedModel in the TF-Hub module layout.
"""

import json
import os
import sys

import h5py
import numpy as np

# Published-style configurations, shrunk. "projection": an LSTM with a
# projection (D < C), a highway layer and CNN_proj (F != D), skip connections.
# "no_projection": D == C == F, so neither W_P_0 nor CNN_proj exist; tanh, no
# highway, no skip connections; clips that bind (proj_clip must be ignored
# without a projection, as TF's LSTMCell does).
CONFIGS = {
    "projection": {
        "lstm": {
            "cell_clip": 3,
            "dim": 16,
            "n_layers": 2,
            "proj_clip": 3,
            "projection_dim": 8,
            "use_skip_connections": True,
        },
        "char_cnn": {
            "activation": "relu",
            "embedding": {"dim": 4},
            "filters": [[1, 4], [2, 4], [3, 8]],
            "max_characters_per_token": 50,
            "n_characters": 262,
            "n_highway": 1,
        },
    },
    "no_projection": {
        "lstm": {
            "cell_clip": 0.5,
            "dim": 12,
            "n_layers": 2,
            "proj_clip": 0.1,
            "projection_dim": 12,
            "use_skip_connections": False,
        },
        "char_cnn": {
            "activation": "tanh",
            "embedding": {"dim": 4},
            "filters": [[1, 4], [2, 8]],
            "max_characters_per_token": 50,
            "n_characters": 262,
            "n_highway": 0,
        },
    },
}

# Keys `bin/train_elmo.py` puts beside `lstm` / `char_cnn` (converters ignore them).
TRAINING_KEYS = {
    "bidirectional": True,
    "dropout": 0.1,
    "all_clip_norm_val": 10.0,
    "n_epochs": 10,
    "n_train_tokens": 768648884,
    "batch_size": 128,
    "unroll_steps": 20,
    "n_negative_samples_batch": 8192,
}

VOCABULARY = ["</S>", "<S>", "<UNK>", "the", ",", ".", "Gold", "surely", "!", "rain", "had", "of"]


def release_name(options):
    lstm, cnn = options["lstm"], options["char_cnn"]
    filters = sum(n for _, n in cnn["filters"])
    return (
        f"elmo_{lstm['n_layers']}x{lstm['dim']}_{lstm['projection_dim']}_{filters}cnn_"
        f"{cnn.get('n_highway') or 0}xhighway"
    )


def weight_arrays(options, seed=0):
    """name -> float32 array, as `dump_weights` names and shapes them."""
    rng = np.random.default_rng(seed)

    def normal(shape, scale):
        return (rng.normal(size=shape) * scale).astype("float32")

    lstm, cnn = options["lstm"], options["char_cnn"]
    dim, proj, layers = lstm["dim"], lstm["projection_dim"], lstm["n_layers"]
    embed = cnn["embedding"]["dim"]
    filters = sum(n for _, n in cnn["filters"])
    arrays = {"char_embed": rng.uniform(-1, 1, (261, embed)).astype("float32")}
    for i, (width, count) in enumerate(cnn["filters"]):
        arrays[f"CNN/W_cnn_{i}"] = normal((1, width, embed, count), 0.5)
        arrays[f"CNN/b_cnn_{i}"] = normal((count,), 0.1)
    for i in range(cnn.get("n_highway") or 0):
        arrays[f"CNN_high_{i}/W_carry"] = normal((filters, filters), filters**-0.5)
        arrays[f"CNN_high_{i}/b_carry"] = normal((filters,), 0.2) - 1.0
        arrays[f"CNN_high_{i}/W_transform"] = normal((filters, filters), filters**-0.5)
        arrays[f"CNN_high_{i}/b_transform"] = normal((filters,), 0.2)
    if filters != proj:
        arrays["CNN_proj/W_proj"] = normal((filters, proj), filters**-0.5)
        arrays["CNN_proj/b_proj"] = normal((proj,), 0.1)
    for direction in range(2):
        for i in range(layers):
            cell = f"RNN_{direction}/RNN/MultiRNNCell/Cell{i}/LSTMCell"
            arrays[f"{cell}/W_0"] = normal((2 * proj, 4 * dim), 1.2 * (2 * proj) ** -0.5)
            arrays[f"{cell}/B"] = normal((4 * dim,), 0.3)
            if proj < dim:
                arrays[f"{cell}/W_P_0"] = normal((dim, proj), 1.5 * dim**-0.5)
    return arrays


def write_hdf5(path, arrays):
    with h5py.File(path, "w") as f:
        for name, value in arrays.items():
            f.create_dataset(name, data=value)


def build(folder, config="projection", seed=0, training_keys=False, softmax=False):
    """Writes a tiny release into `folder`.

    Args:
        folder: str, created if needed.
        config: a key of CONFIGS or an options dict.
        seed: int. Seed of the random weights.
        training_keys: bool. Also write the training keys in the options.
        softmax: bool. Also write `softmax/` (TF1 checkpoint) and `vocab.txt`.

    Returns:
        dict with `options`, `weights` (paths), `name`, and with softmax
        `softmax` (the folder), `vocabulary` (the vocab file).
    """
    options = json.loads(json.dumps(CONFIGS[config] if isinstance(config, str) else config))
    if training_keys:
        options.update(TRAINING_KEYS, n_tokens_vocab=len(VOCABULARY))
    os.makedirs(folder, exist_ok=True)
    name = release_name(options)
    paths = {
        "name": name,
        "options": os.path.join(folder, f"{name}_options.json"),
        "weights": os.path.join(folder, f"{name}_weights.hdf5"),
    }
    with open(paths["options"], "w") as f:
        json.dump(options, f)
    write_hdf5(paths["weights"], weight_arrays(options, seed))
    if softmax:
        paths.update(write_softmax(folder, options, seed))
    return paths


def write_softmax(folder, options, seed=0):
    """bilm-tf's training output folder (softmax) and its vocabulary file."""
    from tests.testing import write_tf1_checkpoint

    rng = np.random.default_rng(seed + 1)
    dim = options["lstm"]["projection_dim"]
    vocab_path = os.path.join(folder, "vocab.txt")
    with open(vocab_path, "w") as f:
        f.write("\n".join(VOCABULARY) + "\n")
    size = len(VOCABULARY)
    arrays = {
        "lm/softmax/W": (rng.normal(size=(size, dim)) * dim**-0.5).astype("float32"),
        "lm/softmax/b": (rng.normal(size=(size,)) * 0.5).astype("float32"),
        # Other training variables the checkpoint holds: not the softmax.
        "lm/softmax/W/Adagrad": np.ones((size, dim), "float32"),
        "lm/CNN/b_cnn_0": np.zeros((options["char_cnn"]["filters"][0][1],), "float32"),
        "global_step": np.array(10, "int64"),
    }
    run = os.path.join(folder, "softmax")
    write_tf1_checkpoint(arrays, os.path.join(run, "model.ckpt-10"))
    with open(os.path.join(run, "options.json"), "w") as f:
        json.dump(options, f)
    return {"softmax": run, "vocabulary": vocab_path, "softmax_arrays": arrays}


# --- bilm-tf as the reference (run in a subprocess: TF1 graph mode) --------


def _import_bilm():
    """bilm-tf with `import tensorflow as tf` bound to `tf.compat.v1`.

    TF 2.16+ keeps the TF1 RNN cells (`tf.compat.v1.nn.rnn_cell.LSTMCell`)
    only with legacy Keras (`tf_keras`, `TF_USE_LEGACY_KERAS=1`).
    """
    os.environ["TF_USE_LEGACY_KERAS"] = "1"
    import tensorflow as tf

    v1 = tf.compat.v1
    v1.disable_v2_behavior()
    sys.modules["tensorflow"] = v1
    try:
        import bilm
    finally:
        sys.modules["tensorflow"] = tf
    return bilm, v1


def run_reference(spec):
    """Runs bilm-tf on the releases of `spec`, writes one .npz per release.

    `spec`: {"runs": [{"options", "weights", "vocabulary", "output",
    "batches": [list of sentences per call], "hub_module": folder or None}]}.
    All calls of a run share one session (bilm's LSTM states carry over).
    For call k the .npz holds `ids_k` (the Batcher's character ids),
    `layers_k` (L+1, B, W, 2D): token layer [x; x] and each LSTM layer
    [forward; backward] at every position (with <S>, </S>), and bilm's
    `lm_embeddings_k` (B, L+1, W-2, 2D) / `mask_k` (without <S>, </S>).
    """
    bilm, tf = _import_bilm()
    for run in spec["runs"]:
        graph = tf.Graph()
        with graph.as_default():
            options = json.load(open(run["options"]))
            max_chars = options["char_cnn"]["max_characters_per_token"]
            batcher = bilm.Batcher(run["vocabulary"], max_chars)
            ids = tf.placeholder("int32", shape=(None, None, max_chars))
            model = bilm.BidirectionalLanguageModel(run["options"], run["weights"])
            ops = model(ids)
            lm = model._graphs[ids]
            layers = [tf.concat([lm.embedding, lm.embedding], axis=-1)] + [
                tf.concat([f, b], axis=-1)
                for f, b in zip(lm.lstm_outputs["forward"], lm.lstm_outputs["backward"])
            ]
            if run.get("hub_module"):
                # The TF-Hub ELMo module's mix of the L+1 layers.
                tf.get_variable("aggregation/weights", initializer=np.zeros(len(layers), "float32"))
                tf.get_variable("aggregation/scaling", initializer=np.ones((1,), "float32"))
            out = {}
            with tf.Session() as session:
                session.run(tf.global_variables_initializer())
                for k, sentences in enumerate(run["batches"]):
                    char_ids = batcher.batch_sentences(sentences)
                    got = session.run(
                        {"lm": ops["lm_embeddings"], "mask": ops["mask"], "layers": layers},
                        feed_dict={ids: char_ids},
                    )
                    out[f"ids_{k}"] = char_ids
                    out[f"layers_{k}"] = np.stack(got["layers"])
                    out[f"lm_embeddings_{k}"] = got["lm"]
                    out[f"mask_{k}"] = got["mask"]
                if run.get("hub_module"):
                    write_hub_module(tf, session, ids, ops, run["hub_module"])
            np.savez(run["output"], **out)


def write_hub_module(tf, session, ids, ops, folder):
    """bilm's graph as a TF1 SavedModel in the TF-Hub module layout.

    `saved_model.pb` and `variables/variables.*` are a real TF1 SavedModel
    of the graph (variables named as bilm's graph names them: `bilm/...`,
    plus the module's `aggregation/weights`, `aggregation/scaling`);
    `tfhub_module.pb` holds a `ModuleDef` with `format: FORMAT_V3` (field 1 =
    1), as TF-Hub writes it (tensorflow_hub 0.16 can no longer write TF1
    modules).
    """
    tf.saved_model.simple_save(
        session, folder, inputs={"char_ids": ids}, outputs={"lm_embeddings": ops["lm_embeddings"]}
    )
    with open(os.path.join(folder, "tfhub_module.pb"), "wb") as f:
        f.write(b"\x08\x01")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "reference":
        sys.exit(f"usage: {sys.argv[0]} reference SPEC.json")
    with open(sys.argv[2]) as f:
        run_reference(json.load(f))
