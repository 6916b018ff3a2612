"""Dynamic masking throughput: ours (tf.data, vectorized) vs transformers' DataCollatorForLanguageModeling.

Both mask the same token ids (sequences of 128 tokens, 15%, 80/10/10; ours exactly round(15% x length) per
sequence, capped at 20, transformers a 15% Bernoulli draw per token: the same count on average). Two comparisons
of the same work (`paired_calls`, timed by `benchmarks.cases.masking` in one process, one thread, interleaved
rounds): "per_sequence" (per-sequence examples in, masked batches out: ours tf.data vs the collator as the Trainer
uses it) and "per_batch" (the masking alone on ready batch tensors: ours `DynamicMasking` vs `torch_mask_tokens`).
Also times static instance creation (NSP pairs + token masking) in instances/s.

    python benchmarks/bench_masking.py [--num_sequences 16384] [--batch_size 32]
"""

import argparse
import os
import random
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402


def _vocab(size):
    return ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"tok{i}" for i in range(size - 5)]


def _token_ids(num, length, vocab_size, seed=0):
    rs = np.random.RandomState(seed)
    ids = rs.randint(5, vocab_size, size=(num, length)).astype("int32")
    ids[:, 0] = 2
    ids[:, length // 2] = 3
    ids[:, -1] = 3
    return ids


def bench_ours(ids, batch_size, vocab_size, repeats):
    import tensorflow as tf

    from keras_pretrain.data.dynamic import DynamicMasking

    masking = DynamicMasking(vocab_size, mask_token_id=4, special_token_ids=[0, 1, 2, 3], max_predictions=20)
    features = {"input_ids": ids, "input_mask": np.ones_like(ids), "segment_ids": np.zeros_like(ids)}
    dataset = masking.apply(tf.data.Dataset.from_tensor_slices(features).batch(batch_size), seed=0)
    dataset = dataset.prefetch(tf.data.AUTOTUNE)
    for _ in dataset.take(3):  # warm up (tracing)
        pass
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for batch in dataset:
            _ = batch["input_ids"]
        best = min(best, time.perf_counter() - start)
    return len(ids) / best


def bench_transformers(ids, batch_size, vocab, repeats):
    import torch
    from transformers import BertTokenizerFast, DataCollatorForLanguageModeling

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "vocab.txt")
        with open(path, "w") as f:
            f.write("\n".join(vocab) + "\n")
        # transformers 5 reads the vocabulary from `vocab` (a path or a dict) and silently ignores
        # `vocab_file`, which left a 5-token vocabulary (random replacements drawn from 5 ids).
        tokenizer = BertTokenizerFast(vocab=path)
    assert len(tokenizer) == len(vocab), (len(tokenizer), len(vocab))
    collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=0.15, seed=0)
    examples = [{"input_ids": row.tolist()} for row in ids]
    tensor = torch.from_numpy(ids.astype("int64"))

    def run_collate():
        for start in range(0, len(examples), batch_size):
            collator(examples[start:start + batch_size])

    def run_tensor():
        for start in range(0, len(tensor), batch_size):
            collator.torch_mask_tokens(tensor[start:start + batch_size].clone())

    results = []
    for fn in (run_collate, run_tensor):
        best = float("inf")
        for _ in range(repeats):
            start = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - start)
        results.append(len(ids) / best)
    return results


def _hf_collator(vocab):
    from transformers import BertTokenizerFast, DataCollatorForLanguageModeling

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "vocab.txt")
        with open(path, "w") as f:
            f.write("\n".join(vocab) + "\n")
        tokenizer = BertTokenizerFast(vocab=path)  # transformers 5: `vocab`, not `vocab_file` (see above)
    assert len(tokenizer) == len(vocab), (len(tokenizer), len(vocab))
    return DataCollatorForLanguageModeling(tokenizer, mlm_probability=0.15, seed=0)


def paired_calls(ids, batch_size, vocab_size):
    """The two comparisons of `masking_pair`, as {comparison: {side: fn}}; each fn masks every sequence of `ids`
    once (one epoch) in batches of `batch_size` and returns the number of sequences masked.

    "per_sequence": per-sequence examples in, masked batches out (the input pipeline): ours
    `tf.data.Dataset.from_tensor_slices` (one element per sequence) -> `batch` -> `DynamicMasking.apply`, iterated;
    transformers: a list of per-sequence examples (`{"input_ids": [...]}`) -> `DataCollatorForLanguageModeling`
    per batch (as the Trainer's DataLoader calls it: padding / tensor conversion and masking).
    "per_batch": the masking alone on ready [batch, T] tensors: ours `DynamicMasking.__call__` (one traced
    `tf.function` per batch); transformers `collator.torch_mask_tokens` (on a clone, it masks in place)."""
    import tensorflow as tf
    import torch

    from keras_pretrain.data.dynamic import DynamicMasking

    masking = DynamicMasking(vocab_size, mask_token_id=4, special_token_ids=[0, 1, 2, 3], max_predictions=20)
    collator = _hf_collator(_vocab(vocab_size))
    n = len(ids)
    features = {"input_ids": ids, "input_mask": np.ones_like(ids), "segment_ids": np.zeros_like(ids)}
    dataset = masking.apply(tf.data.Dataset.from_tensor_slices(features).batch(batch_size), seed=0)
    examples = [{"input_ids": row.tolist()} for row in ids]
    starts = range(0, n, batch_size)

    def ours_pipeline():
        return sum(int(b["input_ids"].shape[0]) for b in dataset)

    def hf_pipeline():
        return sum(int(collator(examples[i:i + batch_size])["input_ids"].shape[0]) for i in starts)

    tf_batches = [{k: tf.constant(v[i:i + batch_size]) for k, v in features.items()} for i in starts]
    mask_fn = tf.function(lambda f, seed: masking(f, seed))
    torch_batches = [torch.from_numpy(ids[i:i + batch_size].astype("int64")) for i in starts]

    def ours_masking():
        return sum(int(mask_fn(f, tf.constant(k, tf.int64))["input_ids"].shape[0]) for k, f in enumerate(tf_batches))

    def hf_masking():
        return sum(int(collator.torch_mask_tokens(t.clone())[0].shape[0]) for t in torch_batches)

    return {"per_sequence": {"ours": ours_pipeline, "transformers": hf_pipeline},
            "per_batch": {"ours": ours_masking, "transformers": hf_masking}}


WHAT = {
    "per_sequence": ("per-sequence examples in, masked batches out (the input pipeline): ours tf.data "
                     "from_tensor_slices -> batch -> DynamicMasking.apply vs transformers' "
                     "DataCollatorForLanguageModeling on lists of per-sequence examples (padding, tensors, masking)"),
    "per_batch": ("the masking alone on ready [batch, T] tensors: ours DynamicMasking (a tf.function per batch) vs "
                  "transformers' torch_mask_tokens"),
}


def bench_instances(num_docs, seq_length):
    from keras_pretrain.data.masking import TokenMasking
    from keras_pretrain.data.pipeline import create_training_instances

    rng = random.Random(0)
    vocab = _vocab(30000)
    docs = [
        [[vocab[rng.randint(5, 29999)] for _ in range(rng.randint(5, 40))] for _ in range(rng.randint(5, 50))]
        for _ in range(num_docs)
    ]
    masking = TokenMasking(vocabulary=vocab, max_predictions=20)
    start = time.perf_counter()
    instances = create_training_instances(docs, "nsp", masking, seq_length, 1, 0.1, random.Random(1))
    return len(instances) / (time.perf_counter() - start)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num_sequences", type=int, default=16384)
    parser.add_argument("--seq_length", type=int, default=128)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--vocab_size", type=int, default=30522)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    vocab = _vocab(args.vocab_size)
    ids = _token_ids(args.num_sequences, args.seq_length, args.vocab_size)
    hf_collate, hf_tensor = bench_transformers(ids, args.batch_size, vocab, args.repeats)
    ours = bench_ours(ids, args.batch_size, args.vocab_size, args.repeats)
    print(f"sequences of {args.seq_length} tokens, batch {args.batch_size}, {args.num_sequences} sequences")
    print(f"transformers DataCollatorForLanguageModeling (list of examples): {hf_collate:12.0f} seq/s")
    print(f"transformers torch_mask_tokens (padded tensor, masking only):  {hf_tensor:12.0f} seq/s")
    print(f"keras_pretrain DynamicMasking (tf.data, vectorized):           {ours:12.0f} seq/s")
    print(f"ratio vs collator: {ours / hf_collate:.2f}x   "
          f"ratio vs torch_mask_tokens: {ours / hf_tensor:.2f}x")
    print(f"static instance creation (NSP + token masking, {args.seq_length}): "
          f"{bench_instances(200, args.seq_length):.0f} instances/s")


if __name__ == "__main__":
    main()
