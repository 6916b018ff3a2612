"""`make demo`: pretrain a tiny ALBERT on the bundled corpus, fine-tune it, ask the served model one question.

1. `recipes.pretrain` with its defaults (see its docstring) into `runs/albert-<time>/`;
2. `recipes.finetune --task classify` from that run on the bundled `corpus/classify.tsv` (which of four
   sources, two English and two Chinese, a sentence comes from; a fifth of the rows held out), printing the
   validation accuracy before and after against the majority baseline, into `runs/albert-<time>/finetune/`;
3. one query through the exported serving SavedModel (`finetune/classifier/1`: strings in, loaded with
   tensorflow + tensorflow_text only), a sentence that is in neither file.

    python -m recipes.demo            # what `make demo` runs
    KERAS_BACKEND=jax python -m recipes.demo
"""

import os
import sys
import time

QUERY = "Rewriting the compiler in its own language took three weekends and one very patient debugger."


def ask(serving_dir, text):
    """The label and its probability for `text` from the serving SavedModel in `serving_dir`."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401 (the tokenizer's ops)

    serve = tf.saved_model.load(serving_dir).signatures["serving_default"]
    outputs = serve(text=tf.constant([text]))
    label = outputs["labels"].numpy()[0].decode("utf-8")
    return label, float(outputs["probabilities"].numpy()[0].max())


def main(argv=None):
    from recipes import finetune
    from recipes import pretrain

    started = time.time()
    out = os.path.join("runs", f"albert-{time.strftime('%Y%m%d-%H%M%S')}")
    pretrain.main(["--out", out] + list(argv or []))
    print("\nfine-tuning the pretrained model on corpus/classify.tsv (4 sources; 1/5 held out):")
    summary = finetune.main(["--from", out, "--task", "classify", "--out", os.path.join(out, "finetune"),
                             "--verbose", "0"])
    label, probability = ask(os.path.join(out, "finetune", "classifier", "1"), QUERY)
    print(f"\nserving SavedModel {out}/finetune/classifier/1, asked {QUERY!r}:\n  -> {label} ({probability:.2f})")
    print(f"demo done in {time.time() - started:.0f}s: held-out accuracy {summary['accuracy_after']:.3f} "
          f"(majority baseline {summary['baseline']['accuracy']:.3f})")
    return summary


if __name__ == "__main__":
    sys.exit(0 if main(sys.argv[1:]) else 1)
