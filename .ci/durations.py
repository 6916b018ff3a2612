"""Merges the per-backend test-file durations of `.ci/test-backends` into tests/durations.tsv.

Usage: python .ci/durations.py OUT BACKEND=FILE [BACKEND=FILE ...]
Writes one row per test file (seconds per backend and their sum, slowest first) and prints the 10 slowest.
"""

import sys


def main(out, pairs):
    backends, seconds = [], {}
    for pair in pairs:
        backend, path = pair.split("=", 1)
        backends.append(backend)
        try:
            with open(path, encoding="utf-8") as f:
                rows = [line.rstrip("\n").split("\t", 1) for line in f if "\t" in line]
        except OSError:
            rows = []
        for value, name in rows:
            seconds.setdefault(name, {})[backend] = float(value)
    total = {name: sum(per.values()) for name, per in seconds.items()}
    order = sorted(total, key=lambda name: -total[name])
    with open(out, "w", encoding="utf-8") as f:
        f.write("\t".join(["file"] + backends + ["total"]) + "\n")
        for name in order:
            values = [f"{seconds[name].get(b, 0.0):.1f}" for b in backends]
            f.write("\t".join([name] + values + [f"{total[name]:.1f}"]) + "\n")
    print(f"the 10 slowest test files (seconds per backend: {', '.join(backends)}; all in {out}):")
    for name in order[:10]:
        values = ", ".join(f"{seconds[name].get(b, 0.0):.0f}" for b in backends)
        print(f"  {total[name]:7.1f} s  {name} ({values})")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
