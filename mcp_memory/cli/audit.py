"""`mcp-memory audit`: the operator's view of the audit trail (audit/, docs/security.md).

- `verify`: walk every ledger's chain (or one: `--space`, `--user`); exit 1 naming the ledger and the
  first record that does not match.
- `show`: a readable page of one trail, newest first, e.g. who removed a thread and when:
  `mcp-memory audit show --space team --action forget --thread plan`.
- `export`: every record (of one space, from a time) as JSON Lines, oldest first, for a SIEM.
The operator holds the backends' credentials, so reads every trail (an admin).
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:  # the parser is built on every start of the CLI: the service is imported when used
    from mcp_memory.audit import AuditRecord
    from mcp_memory.config import Settings


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    audit = commands.add_parser("audit", help="verify, show or export the audit trail (docs/security.md)")
    actions = audit.add_subparsers(dest="audit_command", required=True)
    check = actions.add_parser(
        "verify",
        help="check every ledger's hash chain (or one); exit 1 naming the ledger and record that does not match",
    )
    check.add_argument("--space", help="only this shared space's chain")
    check.add_argument("--user", help="only this user's personal chain")
    show = actions.add_parser("show", help="one trail, newest first (who did what, when, with which client)")
    _trail_filters(show)
    show.add_argument("--actor", help="only what this user id did")
    show.add_argument("--action", help="only this action: add, update, rollback, import, forget, read, ...")
    show.add_argument("--thread", help="only records about this thread")
    show.add_argument("--limit", type=int, default=50, help="at most this many records (default 50)")
    export = actions.add_parser("export", help="every record as JSON Lines, oldest first (for a SIEM)")
    _trail_filters(export)


def _trail_filters(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--space", help="a shared space's trail (default: every trail)")
    parser.add_argument("--user", help="a user's personal trail")
    parser.add_argument("--since", help="only records at or after this ISO 8601 time")


async def audit_command(settings: Settings, args: argparse.Namespace, out: TextIO = sys.stdout) -> int:
    from mcp_memory import validation as check
    from mcp_memory.cli.commands import acting_as_operator
    from mcp_memory.errors import BackendUnavailableError
    from mcp_memory.service.assembly import open_service
    from mcp_memory.service.audit_trail import EVERY_LEDGER, Viewer, read_page

    async with open_service(settings) as service:
        log = service.audit.log
        if log is None:
            raise BackendUnavailableError("the audit trail is off with these settings (audit.enabled)")
        async with acting_as_operator():
            ledger = _ledger(args)
            if args.audit_command == "verify":
                found = await log.verify(ledger)
                service.metrics.audit_verified(found.ok)
                if found.ok:
                    print(
                        f"audit trail verified: {found.checked} records in {found.chains} "
                        f"chain{'' if found.chains == 1 else 's'}, every chain is intact",
                        file=out,
                    )
                    return 0
                print(
                    f"audit trail broken in ledger {found.ledger} at record {found.first_bad}: "
                    f"it {found.problem}",
                    file=out,
                )
                return 1
            if args.audit_command == "export":
                since = check.timestamp(args.since, "--since")
                async for record in log.since(ledger, since):
                    out.write(record.model_dump_json() + "\n")
                return 0
            viewer = Viewer("cli", {}, admin=True)
            space = args.space if args.space else (None if args.user else EVERY_LEDGER)
            if args.user:
                viewer = Viewer(check.thread_id(args.user, "--user"), {}, admin=True)
            page = await read_page(
                service.audit,
                viewer,
                space,
                actor=args.actor,
                action=args.action,
                thread_id=args.thread,
                since=args.since,
                limit=args.limit,
            )
            for record in page.records:
                print(line(record), file=out)
            return 0


def _ledger(args: argparse.Namespace) -> str | None:
    from mcp_memory import validation as check
    from mcp_memory.models import space_key

    if args.space:
        return space_key(check.space(args.space))
    if args.user:
        return check.thread_id(args.user, "--user")
    return None


def line(record: AuditRecord) -> str:
    """One record as a line a person reads: when, who (with which client), what, where, how many."""
    who = record.actor + (f" ({record.client})" if record.client else "")
    where = record.ledger + (f" thread {record.thread_id}" if record.thread_id else "")
    touched = len(record.memory_ids) + record.more_ids
    counts = ", ".join(f"{n} {kind}" for kind, n in record.counts.items())
    detail = f"{touched} ids" + (f" ({counts})" if counts else "")
    outcome = "" if record.outcome == "ok" else f" [{record.outcome}]"
    return (
        f"#{record.seq} {record.at:%Y-%m-%d %H:%M:%S}Z {who}: {record.action} in {where}, {detail}{outcome}"
    )
