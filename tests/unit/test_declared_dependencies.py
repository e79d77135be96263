"""Every distribution mcp_memory imports is declared in pyproject.toml (the base dependencies or an
extra), not merely present because some other package brought it along."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from functools import cache
from importlib.metadata import distribution, packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "mcp_memory"


def canonical(name: str) -> str:
    """A distribution's name as PEP 503 compares them."""
    return re.sub(r"[-_.]+", "-", name).lower()


def declared() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        requirements.extend(extra)
    names = {canonical(re.split(r"[\s\[<>=!~;@]", r.strip(), maxsplit=1)[0]) for r in requirements}
    return names - {canonical(project["name"])}


def imported_modules() -> dict[str, set[Path]]:
    """Every absolute import in mcp_memory/ (module name -> the files importing it), stdlib and
    mcp_memory itself left out."""
    found: dict[str, set[Path]] = {}
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top == "mcp_memory" or top in sys.stdlib_module_names or top == "__future__":
                    continue
                found.setdefault(name, set()).add(path.relative_to(ROOT))
    return found


@cache
def _files_of(dist: str) -> frozenset[str]:
    return frozenset(str(f) for f in distribution(dist).files or ())


@cache
def _providers() -> dict[str, list[str]]:
    return packages_distributions()


def distributions_of(module: str) -> set[str]:
    """The installed distributions that provide `module`: for a namespace shared by several (as
    `opentelemetry`), the ones whose files hold the deepest part of its dotted path."""
    parts = module.split(".")
    candidates = _providers().get(parts[0], [])
    if len(set(candidates)) <= 1:
        return {canonical(d) for d in candidates}
    for depth in range(len(parts), 0, -1):
        prefix = "/".join(parts[:depth])
        holding = {
            d
            for d in candidates
            if any(f == prefix + ".py" or f.startswith(prefix + "/") for f in _files_of(d))
        }
        if holding:
            return {canonical(d) for d in holding}
    return {canonical(d) for d in candidates}


def test_the_scan_sees_the_imports_it_must() -> None:
    modules = imported_modules()
    assert {"httpx2", "jwt", "starlette.requests"} <= set(modules)
    assert "json" not in modules and not any(m.startswith("mcp_memory") for m in modules)
    assert distributions_of("opentelemetry.trace") == {"opentelemetry-api"}
    assert distributions_of("opentelemetry.sdk.trace") == {"opentelemetry-sdk"}


def test_every_imported_distribution_is_declared() -> None:
    ours = declared()
    missing: dict[str, set[str]] = {}
    unknown: list[str] = []
    for module, files in sorted(imported_modules().items()):
        providers = distributions_of(module)
        if not providers:
            unknown.append(f"{module} (imported by {', '.join(sorted(map(str, files)))})")
            continue
        if not providers & ours:
            for dist in providers:
                missing.setdefault(dist, set()).update(str(f) for f in files)
    assert not missing, "imported but not declared in pyproject.toml: " + "; ".join(
        f"{dist} (imported by {', '.join(sorted(files))})" for dist, files in sorted(missing.items())
    )
    assert not unknown, "imported, but no installed distribution provides it: " + "; ".join(unknown)


def test_declared_names_are_read_from_the_requirements() -> None:
    names = declared()
    assert {"mcp", "pyjwt", "opentelemetry-sdk", "pytest"} <= names and "mcp-memory" not in names
