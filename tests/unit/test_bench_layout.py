"""bench/ stays a house a newcomer can find their way in (bench/README.md): no file over 500 lines, no
import cycle between its modules, every benchmark script answers --help (its command line parses and its
imports resolve), and bench/README.md names every benchmark with links that resolve."""

from __future__ import annotations

import ast
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.unit.test_readme import _anchors, _links

BENCH = Path(__file__).resolve().parents[2] / "bench"
MAX_LINES = 500
HELP_SECONDS = 180  # one script's imports on a loaded machine; a bound, not a measurement


def modules() -> dict[str, Path]:
    """Every Python file under bench/, by its dotted name below bench (`load`, `harness.data.beam`)."""
    found = {}
    for path in sorted(BENCH.rglob("*.py")):
        parts = path.relative_to(BENCH).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def scripts() -> list[Path]:
    """The benchmarks: bench/*.py not starting with an underscore (those are their parts)."""
    return [path for path in sorted(BENCH.glob("*.py")) if not path.name.startswith("_")]


def imported(path: Path, known: set[str]) -> set[str]:
    """The bench modules a file imports, anywhere in it (inside functions too): `bench.x`, `from bench
    import x`, and a script's sibling `x` (bench/ is sys.path[0] when a script runs)."""
    out: set[str] = set()

    def add(name: str) -> None:
        name = name.removeprefix("bench.")
        while name and name not in known:  # bench.harness.data.beam.Message -> the module
            name = name.rpartition(".")[0]
        if name:
            out.add(name)

    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("bench.") or alias.name in known:
                    add(alias.name)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "bench":
                for alias in node.names:
                    add(alias.name)
            elif node.module.startswith("bench.") or node.module.split(".")[0] in known:
                add(node.module)
                for alias in node.names:  # from bench.harness import server: a module too
                    if f"{node.module.removeprefix('bench.')}.{alias.name}" in known:
                        add(f"{node.module}.{alias.name}")
    return out


def cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle, as the modules along it, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start)):
            return found
    return None


def test_no_bench_file_is_over_500_lines() -> None:
    long = {
        str(path.relative_to(BENCH)): lines
        for path in BENCH.rglob("*.py")
        if (lines := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert not long, f"bench files over {MAX_LINES} lines (split them: bench/README.md): {long}"


def test_bench_has_no_import_cycle() -> None:
    known = modules()
    graph = {name: imported(path, set(known)) - {name} for name, path in known.items()}
    assert graph["load"] >= {"_scaleout", "_team"}, graph["load"]  # the reader sees bench's own imports
    assert cycle(graph) is None, f"import cycle in bench/: {' -> '.join(cycle(graph) or [])}"


def test_the_cycle_finder_finds_one() -> None:
    assert cycle({"load": {"_scaleout"}, "_scaleout": {"load"}}) == ["_scaleout", "load", "_scaleout"]
    assert cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_there_are_bench_scripts() -> None:
    names = {path.name for path in scripts()}
    assert {"locomo.py", "beam.py", "load.py", "tool_tokens.py", "shared_file.py"} <= names


def test_the_readme_names_every_benchmark_and_its_links_resolve() -> None:
    readme = BENCH / "README.md"
    text = readme.read_text()
    missing = [path.name for path in scripts() if f"`{path.name}`" not in text]
    assert not missing, f"benchmarks bench/README.md does not name (add a row): {missing}"
    broken = []
    for target in _links(readme):
        path, _, fragment = target.partition("#")
        resolved = (readme.parent / path).resolve() if path else readme
        if not resolved.exists() or (fragment and fragment not in _anchors(resolved)):
            broken.append(target)
    assert not broken, f"bench/README.md links to no such file or heading: {broken}"


def _help(script: Path) -> tuple[Path, subprocess.CompletedProcess[str]]:
    return script, subprocess.run(
        [sys.executable, str(script), "--help"],
        capture_output=True,
        text=True,
        timeout=HELP_SECONDS,
        cwd=BENCH.parent,
        check=False,
    )


@pytest.mark.timeout(HELP_SECONDS * 4)
def test_every_bench_script_answers_help() -> None:
    with ThreadPoolExecutor(max_workers=2) as pool:
        answers = list(pool.map(_help, scripts()))
    failed = {
        script.name: (done.returncode, done.stderr[-400:])
        for script, done in answers
        if done.returncode != 0 or "usage:" not in done.stdout
    }
    assert not failed, f"bench scripts whose --help failed: {failed}"
