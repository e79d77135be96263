"""The bench's command line: a parser whose --help is the script's docstring (what it answers, how to
run it), with `--save PATH` for the results (bench.harness.table.save), and MCP_MEMORY_* settings for
the server under test (`--setting NAME=VALUE`, repeatable)."""

from __future__ import annotations

import argparse


def parser(doc: str | None, *, save: bool = True) -> argparse.ArgumentParser:
    """An ArgumentParser described by `doc` (pass the script's __doc__), its layout kept; `--save PATH`
    unless save=False (for a bench that already writes its own file, e.g. with --json)."""
    made = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    if save:
        made.add_argument(
            "--save", metavar="PATH", help="also write the results: JSON if PATH ends in .json, else markdown"
        )
    return made


def settings(values: list[str] | None) -> dict[str, str]:
    """`NAME=VALUE` strings (from a repeatable --setting) as a dict; exits naming a malformed one."""
    out: dict[str, str] = {}
    for value in values or []:
        name, sep, given = value.partition("=")
        if not sep or not name.startswith("MCP_MEMORY_"):
            raise SystemExit(f"--setting wants MCP_MEMORY_NAME=VALUE, got {value[:60]!r}")
        out[name] = given
    return out
