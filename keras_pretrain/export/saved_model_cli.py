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
    import tensorflow_text  # noqa: F401  (registers the ops)
    from tensorflow.python.tools.saved_model_cli import main as cli_main

    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
