"""`saved_model_cli` with the tensorflow-text ops registered.

The preprocessor SavedModels tokenize in-graph with tensorflow-text ops
(WordPiece, SentencePiece, regex split, normalization), exactly like TF-Hub's
own BERT preprocessors; plain `saved_model_cli` does not load those op
libraries and cannot run them. This entry point imports tensorflow_text first
and then hands over to TensorFlow's `saved_model_cli`, unchanged:

    python -m keras_pretrain.export.saved_model_cli run --dir DIR/preprocessor \\
        --tag_set serve --signature_def serving_default --input_exprs 'text=["hello world"]'

Encoder SavedModels need no extra ops and run under plain `saved_model_cli`.
"""

import sys


def main():
    from importlib.metadata import entry_points

    import tensorflow_text  # noqa: F401  (registers the ops)

    # TensorFlow's published `saved_model_cli` command (its console-script entry point), not its module path.
    command = next(iter(entry_points(group="console_scripts", name="saved_model_cli")), None)
    if command is None:
        sys.exit("TensorFlow's saved_model_cli command is not installed (pip install tensorflow).")
    return command.load()()


if __name__ == "__main__":
    sys.exit(main())
