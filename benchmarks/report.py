"""Formatting the benchmark tables and writing RESULTS.md: a leaf module (imports nothing of `benchmarks`).

`fmt`, `ratio`, `table` and `failed` serve every group's `report(by, quick)` and `benchmarks.run`'s own tables;
`write_results` writes the generated report above the hand-written notes of the file it replaces.
"""

import os

NOTES_MARKER = "<!-- hand-written notes below: kept when the file is regenerated -->"


def fmt(x, digits=0):
    """`x` with thousands separators and `digits` decimals; "-" for None, a string as it is."""
    if x is None:
        return "-"
    if isinstance(x, str):
        return x
    return f"{x:,.{digits}f}"


def ratio(a, b):
    """a / b, or None when either is missing or zero."""
    return a / b if a and b else None


def cases(by, group, prefix, rows, width):
    """(label, result) of the results of `group` whose label starts with `prefix`; a failed one becomes the row
    `[label, problem, "-" * width]` in `rows` instead."""
    for (name, label), r in by.items():
        if name != group or not label.startswith(prefix):
            continue
        problem = failed(r)
        if problem:
            rows.append([label, problem] + ["-"] * width)
            continue
        yield label, r


def table(header, rows):
    """A Markdown table."""
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def ceiling_text(reference_share, need, of="MFU"):
    """'; transformers at 72% MFU: 1.2x needs 87%' ('' without the reference's share): both sides do the same
    FLOPs, so `need` times the reference's speed is `need` times its share of the best matmul for ours."""
    if not reference_share:
        return ""
    return f"; transformers at {100 * reference_share:.0f}% {of}: {need:g}x needs {100 * need * reference_share:.0f}%"


def failed(result):
    """"error: ..." or "skipped: ..." for a case that did not measure, None for one that did."""
    if "error" in result:
        return "error: " + result["error"]
    if "skipped" in result:
        return "skipped: " + result["skipped"]
    return None


def write_results(path, report):
    """Writes `report` to `path`, keeping what follows NOTES_MARKER in the file it replaces."""
    notes = ""
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            old = f.read()
        if NOTES_MARKER in old:
            notes = old[old.index(NOTES_MARKER) + len(NOTES_MARKER):]
    with open(path, "w", encoding="utf-8") as f:
        f.write(report + "\n" + NOTES_MARKER + notes)
