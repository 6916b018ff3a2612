"""Side-by-side benchmarks against keras-hub and transformers (`make bench`; never part of `make test`).

- `benchmarks.run`: the driver (`python -m benchmarks.run [--quick]`), one subprocess per case, prints the
  tables and writes `benchmarks/RESULTS.md`.
- `benchmarks.cases`: the cases themselves (`python -m benchmarks.cases NAME JSON_KWARGS` prints one
  `RESULT {...}` line).
- `benchmarks.bench_*`: the cases of one group each, with the group's `report(by, quick)`;
  `benchmarks.bench_masking`: dynamic masking vs transformers' collator (also runnable alone).
- `benchmarks.profile_step`: where the time of an MLM training step goes.
- Leaf modules, which import nothing of the package but each other downward: `benchmarks.report` (table
  formatting, RESULTS.md writing), `benchmarks.machine` (CPU flags, machine description, load, backend, peak
  memory), `benchmarks.fixtures` (shapes, batches, model builders, corpus, vocabularies, TFRecords),
  `benchmarks.harness` (issue 45's fair comparison: threads per library, interleaved rotating rounds, paired
  ratios, equal parameter counts, the torch.compile reference, the quick tier's "no target").

Imports go down: machine <- fixtures; report, machine <- harness; report, machine, fixtures, harness <- bench_*
<- cases <- profile_step; run imports the leaves and the bench_* reports (the cases run in subprocesses). No cycles
(tests/benchmarks/test_imports.py).
"""
