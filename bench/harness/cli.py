"""The bench's command line: a parser whose --help is the script's docstring (what it answers, how to
run it, what it prints), optionally with `--json PATH` (write the results there: bench.harness.table.save),
and MCP_MEMORY_* settings for the server under test (`--setting NAME=VALUE`, repeatable)."""

from __future__ import annotations

import argparse
from pathlib import Path


def parser(doc: str | None, *, json: bool = False, setting: bool = False) -> argparse.ArgumentParser:
    """An ArgumentParser described by `doc` (pass the script's __doc__, its layout kept); with json=True
    a `--json PATH` option, with setting=True a repeatable `--setting MCP_MEMORY_NAME=VALUE`
    (read them with `settings(args.setting)`)."""
    made = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    if json:
        made.add_argument("--json", type=Path, metavar="PATH", help="also write the results here (JSON)")
    if setting:
        made.add_argument(
            "--setting",
            action="append",
            default=[],
            metavar="NAME=VALUE",
            help="an MCP_MEMORY_* setting for the server under test (repeatable)",
        )
    return made


def settings(values: list[str] | None) -> dict[str, str]:
    """`NAME=VALUE` strings (from --setting: MCP_MEMORY_* settings, or any variable for the server's
    environment, as the benches always took) as a dict; exits naming one without `=`."""
    out: dict[str, str] = {}
    for value in values or []:
        name, sep, given = value.partition("=")
        if not sep or not name:
            raise SystemExit(
                f"--setting takes NAME=VALUE (e.g. MCP_MEMORY_SEARCH__FUSION=rrf); got {value[:60]!r}"
            )
        out[name] = given
    return out
