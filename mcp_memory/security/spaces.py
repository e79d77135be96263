"""Which memories a principal may use: its own personal memory, and the shared spaces it is a member of.

A space's members come from settings (`security.spaces`, and `security.spaces_file`, read again when
it changes): a user id, or "group:<id>" for everyone whose
verified token names that group (the claims in `security.group_claims`), each with a role: `reader`
(search, list, read), `writer` (also add and change, and forget what they wrote) or `owner` (also forget
anything in the space, or the whole space). A principal's roles are computed from its verified identity
once per request, so a membership change takes effect on the next request; no tool argument grants
anything: a `space` argument only chooses among the spaces the principal already holds.

To someone who is not a member, a space does not exist: naming it gets the same answer as naming a
space nobody configured.

`SPACES_FILE` is the one reader of the spaces: the tools (through `Access`), the explorer and
`MemoryService.forget_user` all see the same spaces, and the same last good file after a broken edit.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from mcp_memory import validation as check
from mcp_memory.config import SecuritySettings, Settings, SpaceSettings, load_spaces
from mcp_memory.errors import ConfigError, NotFoundError, PermissionDeniedError, shown
from mcp_memory.models import GROUP_MEMBER, SPACE_ROLES, Owner, SpaceRole, space_of
from mcp_memory.security.principals import current_principal

log = logging.getLogger(__name__)

WHAT_ROLES_MAY = {
    "reader": "search, list and read",
    "writer": "also add and change memories, and forget what they wrote",
    "owner": "also forget anything in the space, or the whole space",
}


class SpacesFile:
    """`security.spaces_file`, read again when it changes (its modification time or size), so an edit
    applies to the next request. A broken edit is logged and the last good version kept: a typo must
    not lock every member out, nor let anyone in."""

    def __init__(self) -> None:
        self._seen: dict[Path, tuple[tuple[int, int], list[SpaceSettings]]] = {}

    def spaces(self, security: SecuritySettings) -> list[SpaceSettings]:
        path = security.spaces_file
        if path is None:
            return list(security.spaces)
        try:
            info = path.stat()
            stamp = (info.st_mtime_ns, info.st_size)
        except OSError:
            stamp = (0, -1)
        seen = self._seen.get(path)
        if seen is not None and seen[0] == stamp:
            return seen[1]
        try:
            spaces = load_spaces(security)
        except ConfigError as e:
            if seen is None:
                raise
            log.error("%s; the spaces read before stay in force until the file is fixed", e)
            spaces = seen[1]
        self._seen[path] = (stamp, spaces)
        return spaces


SPACES_FILE = SpacesFile()


def roles_of(settings: Settings, user_id: str, groups: Iterable[str]) -> dict[str, SpaceRole]:
    """Each space the user is a member of, directly or through a group, with their highest role there."""
    member_as = {user_id, *(GROUP_MEMBER + g for g in groups)}
    roles: dict[str, SpaceRole] = {}
    for space in SPACES_FILE.spaces(settings.security):
        held = [role for member, role in space.members.items() if member in member_as]
        if held:
            roles[space.name] = max(held, key=SPACE_ROLES.index)
    return roles


def stored_bytes_quota(security: SecuritySettings) -> int | Callable[[str], int | None] | None:
    """The storage limit of each key: a space's own max_stored_bytes where its entry sets one, else
    security.max_stored_bytes (every user's). A plain number when no space can have its own."""
    default = security.max_stored_bytes
    if security.spaces_file is None and all(s.max_stored_bytes is None for s in security.spaces):
        return default

    def limit(key: str) -> int | None:
        name = space_of(key)
        if name is not None:
            for space in SPACES_FILE.spaces(security):
                if space.name == name and space.max_stored_bytes is not None:
                    return space.max_stored_bytes
        return default

    return limit


def unknown_space(name: str) -> NotFoundError:
    # The same words for a space that does not exist and one the caller is not a member of.
    return NotFoundError(f"no space {name!r} that you are a member of")


@dataclass(frozen=True)
class Access:
    """A principal's memories: personal (its user id) and the spaces it holds, with its role in each."""

    user_id: str
    roles: Mapping[str, SpaceRole]

    @classmethod
    def of(cls, settings: Settings, user_id: str, groups: Iterable[str] = ()) -> Access:
        return cls(user_id, roles_of(settings, user_id, groups))

    def owner(self, space: str | None, need: SpaceRole = "reader", *, doing: str = "this") -> Owner:
        """The memory a call on `space` (None: personal) reads or writes, if the principal's role there
        is at least `need`. Raises NotFoundError for a space it is not a member of (as for one that does
        not exist) and PermissionDeniedError when its role falls short."""
        if space is None:
            return Owner(self.user_id)
        name = check.space(space)
        role = self.roles.get(name)
        if role is None:
            raise unknown_space(name)
        owner = Owner(self.user_id, name, role)
        if not owner.may(need):
            raise PermissionDeniedError(
                f"{doing} needs the {need} role in space {shown(name)}; you are a {role} there "
                f"(a {role} may {WHAT_ROLES_MAY[role]})"
            )
        return owner

    def readable(self, space: str | None = None) -> list[Owner]:
        """What a read sees: personal memory plus every space the principal holds, or just `space`."""
        if space is not None:
            return [self.owner(space)]
        spaces = [Owner(self.user_id, name, role) for name, role in sorted(self.roles.items())]
        return [Owner(self.user_id), *spaces]


def current_access(settings: Settings) -> Access:
    """The memories this request's principal may use, from its verified identity (principals.py)."""
    principal = current_principal(settings)
    return Access.of(settings, principal.user_id, principal.groups)
