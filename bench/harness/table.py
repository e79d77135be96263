"""Print a table and save results: every bench prints markdown (what docs/benchmarks.md quotes) and,
given `--save PATH` (or its own `--json PATH`), writes its results there: JSON when the path ends in
.json, else the markdown it printed.

    rows = [{"k": 5, "R@k": 0.68}, ...]
    print(table.markdown(rows, title="LoCoMo dev"))
    table.save(args.save, results, rows)
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


def cell(value: Any, digits: int = 3) -> str:
    """A value as a table shows it: floats to `digits` places (blank when nan), the rest as str."""
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.{digits}f}"
    return "" if value is None else str(value)


def markdown(
    rows: Sequence[Mapping[str, Any]],
    columns: Sequence[str] | None = None,
    *,
    title: str | None = None,
    digits: int = 3,
) -> str:
    """rows (dicts) as a markdown table; columns default to the first row's keys, in order; columns whose
    first value is a number are right-aligned."""
    names = list(columns or (rows[0].keys() if rows else []))
    lines = [f"\n{title}\n"] if title else []
    lines.append("| " + " | ".join(names) + " |")
    first = rows[0] if rows else {}
    numeric = [
        isinstance(first.get(name), int | float) and not isinstance(first.get(name), bool) for name in names
    ]
    lines.append("|" + "|".join("---:" if right else "---" for right in numeric) + "|")
    lines += ["| " + " | ".join(cell(row.get(name), digits) for name in names) + " |" for row in rows]
    return "\n".join(lines)


def save(path: str | Path | None, results: Any, printed: str = "") -> None:
    """Write results to path (nothing when path is None): JSON when it ends in .json (non-JSON values
    as str), else `printed` (the markdown the bench printed)."""
    if path is None:
        return
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.suffix == ".json":
        target.write_text(json.dumps(results, indent=2, default=str) + "\n")
    else:
        target.write_text(printed if printed.endswith("\n") else printed + "\n")
