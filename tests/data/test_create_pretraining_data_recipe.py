import random

import numpy as np
import pytest

from keras_pretrain.data.tfrecords import read_tfrecords
from recipes import create_pretraining_data as recipe

pytestmark = pytest.mark.tf_only

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "dog", "new", "york", "sat", "ran",
         "##s", ".", "北", "京", "我", "爱"]


def _files(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(VOCAB) + "\n")
    rng = random.Random(0)
    words = ["the", "cat", "dogs", "new york", "sat", "ran", "我爱北京"]
    docs = ["\n".join(" ".join(rng.choice(words) for _ in range(6)) + " ." for _ in range(6))
            for _ in range(10)]
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n\n".join(docs) + "\n")
    entities = tmp_path / "entities.txt"
    entities.write_text("new york\n北京\n")
    return str(corpus), str(vocab), str(entities)


@pytest.mark.parametrize("objective, masking", [("nsp", "token"), ("sop", "ngram"),
                                                ("full_sentences", "whole_word"),
                                                ("doc_sentences", "knowledge")])
def test_recipe_writes_shards_and_prints_the_original_form(tmp_path, capsys, objective, masking):
    corpus, vocab, entities = _files(tmp_path)
    pattern = str(tmp_path / "out" / "train-{shard}-of-{num_shards}.tfrecord")
    code = recipe.main([
        "--input_file", corpus, "--vocab_file", vocab, "--output_file", pattern, "--num_shards", "2",
        "--objective", objective, "--masking", masking, "--max_seq_length", "32",
        "--max_predictions_per_seq", "6", "--dupe_factor", "2", "--entities_file", entities,
        "--num_examples_to_print", "2",
    ])
    assert code == 0
    out = capsys.readouterr().out
    example = out.split("*** Example ***\n")[1].splitlines()
    assert [line.split(": ")[0] for line in example[:5]] == [
        "tokens", "segment_ids", "is_random_next", "masked_lm_positions", "masked_lm_labels"
    ]
    assert example[0].startswith("tokens: [CLS] ")
    written = int(out.split("Wrote ")[1].split()[0])
    batches = list(read_tfrecords(str(tmp_path / "out" / "*.tfrecord"), 32, 6, batch_size=1000))
    assert sum(len(b["input_ids"]) for b in batches) == written > 0
    labels = np.concatenate([b["next_sentence_labels"] for b in batches])
    assert labels.any() == (objective in ("nsp", "sop"))


@pytest.mark.parametrize("extra, message", [
    (["--max_predictions_per_seq", "500"], "max_predictions_per_seq"),
    (["--masked_lm_prob", "1.5"], "masked_lm_prob"),
    (["--dupe_factor", "0"], "dupe_factor"),
    (["--objective", "plm"], "invalid choice"),
    (["--input_file", "/nonexistent/x.txt"], "/nonexistent/x.txt"),
])
def test_bad_arguments_exit_2(tmp_path, capsys, extra, message):
    corpus, vocab, _ = _files(tmp_path)
    args = ["--input_file", corpus, "--vocab_file", vocab, "--output_file", str(tmp_path / "o")] + extra
    with pytest.raises(SystemExit) as info:
        recipe.main(args)
    assert info.value.code == 2
    assert message in capsys.readouterr().err


def test_help():
    with pytest.raises(SystemExit) as info:
        recipe.main(["--help"])
    assert info.value.code == 0
