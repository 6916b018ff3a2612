"""Side-by-side benchmarks against keras-hub and transformers (`make bench`; never part of `make test`).

- `benchmarks.run`: the driver (`python -m benchmarks.run [--quick]`), one subprocess per case, prints the
  tables and writes `benchmarks/RESULTS.md`.
- `benchmarks.cases`: the cases themselves (`python -m benchmarks.cases NAME JSON_KWARGS` prints one
  `RESULT {...}` line).
- `benchmarks.bench_masking`: dynamic masking vs transformers' collator (also runnable alone).
"""
