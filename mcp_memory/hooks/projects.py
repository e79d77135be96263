"""Which project a working directory belongs to: its git remote, else its directory.

Worktrees and clones of one repository are one project: the remote `origin` (else the first remote)
names it, whatever the checkout's path. Outside git, or in a repository without a remote, the
directory of the repository (or the working directory itself) is the project. Nothing here runs git:
its config files are read directly, which costs microseconds rather than a process.

A project's key is what thread ids carry: `<name>-<8 hex of the project's id>`, so a session's thread
is `<key>.<session id>` and "this project's threads" is a prefix.

A repository whose top directory holds a committed `.mcp-memory.toml` names the team space its sessions
go to (`[project] space = "acme-api"`, docs/team.md): `Project.space`. The server decides what the
user may do there (a writer's sessions are captured into the space; anyone else's stay personal).
"""

from __future__ import annotations

import configparser
import contextlib
import hashlib
import os
import re
from pathlib import Path
from typing import NamedTuple

_SCP_LIKE = re.compile(r"^(?:[\w.-]+@)?([\w.-]+):(?!//)(.+)$")  # git@github.com:acme/api.git
_NOT_NAME = re.compile(r"[^A-Za-z0-9_-]+")
SESSION_CHARS = re.compile(r"[^A-Za-z0-9._:-]+")


class Project(NamedTuple):  # not a dataclass: see events.py
    id: str  # github.com/acme/api, or the directory's absolute path
    root: Path  # the checkout's top directory (or the working directory)
    key: str  # api-1a2b3c4d: what thread ids carry
    space: str | None = None  # the team space .mcp-memory.toml names, if any

    def as_dict(self) -> dict[str, str]:
        """What a spooled event or a recall request says of its project (service/capture.py reads it)."""
        return {"id": self.id, "key": self.key} | ({"space": self.space} if self.space else {})

    def thread_id(self, session_id: str) -> str:
        """The thread of one session of this project (1-128 characters of thread-id characters)."""
        session = SESSION_CHARS.sub("-", session_id).strip("-")[:80] or "session"
        return f"{self.key}.{session}"

    def owns(self, thread_id: str) -> bool:
        return thread_id.startswith(self.key + ".")


def project_of(cwd: str | os.PathLike[str]) -> Project:
    start = Path(cwd).expanduser()
    try:
        start = start.resolve()
    except OSError:
        start = start.absolute()
    top, git_dir = _git_top(start)
    if git_dir is not None and top is not None:
        remote = _remote(git_dir)
        found = _project(remote, top) if remote else _project(str(top), top)
        return found._replace(space=team_space(top))
    return _project(str(start), start)


TEAM_FILE = ".mcp-memory.toml"
_SPACE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def team_space(top: Path) -> str | None:
    """The space `<top>/.mcp-memory.toml` names (`[project] space = "..."`), or None: no file, a file
    that is not TOML, or a name that is not a space name (then the project stays personal)."""
    path = top / TEAM_FILE
    try:
        raw = path.read_bytes()
    except OSError:
        return None
    import tomllib  # only in a repository that has the file

    try:
        table = tomllib.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return None
    project = table.get("project")
    space = project.get("space") if isinstance(project, dict) else None
    return space if isinstance(space, str) and _SPACE_NAME.match(space) else None


def recorded_project(cwd: str, remote: str | None = None) -> Project:
    """The project of a working directory a transcript recorded: project_of(cwd) when the directory is
    on this machine, else the remote the transcript recorded with it (Codex does), else the directory
    itself (its path, as written), since there is no checkout to read a remote from."""
    path = Path(cwd).expanduser()
    if path.is_dir():
        return project_of(path)
    if remote and remote.strip():
        return _project(normalized_remote(remote), path)
    return _project(str(path), path)


def excluded(project: Project, listed: list[str]) -> bool:
    """Whether hooks.exclude (`listed`) names the project: its id, or a directory it is in."""
    for item in (i.strip() for i in listed):
        if not item:
            continue
        if item == project.id:
            return True
        prefix = Path(item).expanduser()
        if prefix.is_absolute() and (project.root == prefix or prefix in project.root.parents):
            return True
    return False


def normalized_remote(url: str) -> str:
    """github.com/acme/api for https://github.com/acme/api.git, git@github.com:acme/api.git,
    ssh://git@github.com:22/acme/api, ...: the same repository however it was cloned."""
    url = url.strip()
    scp = _SCP_LIKE.match(url)
    if scp and "://" not in url:
        host, path = scp.group(1), scp.group(2)
    else:
        rest = url.split("://", 1)[-1]
        rest = rest.rsplit("@", 1)[-1]  # credentials in the URL are never part of the id
        host, _, path = rest.partition("/")
        host = host.split(":", 1)[0]
    path = path.strip("/").removesuffix(".git").strip("/")
    return f"{host.lower()}/{path}" if path else host.lower()


def _project(project_id: str, root: Path) -> Project:
    name = _NOT_NAME.sub("-", project_id.rstrip("/").rsplit("/", 1)[-1]).strip("-")[:40] or "project"
    digest = hashlib.sha256(project_id.encode()).hexdigest()[:8]
    return Project(id=project_id, root=root, key=f"{name}-{digest}")


def _git_top(start: Path) -> tuple[Path | None, Path | None]:
    """The checkout's top directory and the git directory holding its config (a worktree's: the main
    repository's), or (None, None) outside git."""
    for directory in (start, *start.parents):
        dot_git = directory / ".git"
        if dot_git.is_dir():
            return directory, dot_git
        if dot_git.is_file():  # a worktree or submodule: "gitdir: <path>"
            try:
                line = dot_git.read_text(encoding="utf-8", errors="replace").strip()
            except OSError:
                return directory, None
            if not line.startswith("gitdir:"):
                return directory, None
            git_dir = (directory / line.removeprefix("gitdir:").strip()).resolve()
            common = git_dir / "commondir"
            if common.is_file():
                with contextlib.suppress(OSError):
                    git_dir = (git_dir / common.read_text().strip()).resolve()
            return directory, git_dir
    return None, None


def _remote(git_dir: Path) -> str | None:
    config = configparser.RawConfigParser(strict=False)
    try:
        config.read(git_dir / "config", encoding="utf-8")
    except (configparser.Error, OSError, UnicodeDecodeError):
        return None
    urls = {
        section[len('remote "') : -1]: config.get(section, "url", fallback="")
        for section in config.sections()
        if section.startswith('remote "') and section.endswith('"')
    }
    url = urls.get("origin") or next((u for u in urls.values() if u), "")
    return normalized_remote(url) if url else None
