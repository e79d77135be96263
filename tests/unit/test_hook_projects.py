"""A project is its git remote (clones and worktrees of one repository are one project), else its
directory; a session's thread carries the project's key."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mcp_memory import validation as check
from mcp_memory.hooks.projects import normalized_remote, project_of


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.mark.parametrize(
    "url",
    [
        "https://github.com/acme/api.git",
        "git@github.com:acme/api.git",
        "ssh://git@github.com:22/acme/api",
        "https://user:s3cret@GitHub.com/acme/api/",
    ],
)
def test_one_repository_however_it_was_cloned(url: str) -> None:
    assert normalized_remote(url) == "github.com/acme/api"


def test_clones_and_worktrees_are_one_project_other_repositories_are_not(tmp_path: Path) -> None:
    one, two, other = tmp_path / "one", tmp_path / "two", tmp_path / "other"
    for repo, url in (
        (one, "https://github.com/acme/api.git"),
        (two, "git@github.com:acme/api.git"),
        (other, "https://github.com/acme/web.git"),
    ):
        repo.mkdir()
        git("init", "-q", cwd=repo)
        git("remote", "add", "origin", url, cwd=repo)
    git("-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q", "--allow-empty", "-m", "x", cwd=one)
    git("worktree", "add", "-q", str(tmp_path / "wt"), cwd=one)
    (one / "src" / "deep").mkdir(parents=True)

    ids = {project_of(p).key for p in (one, two, one / "src" / "deep", tmp_path / "wt")}
    assert len(ids) == 1 and project_of(one).id == "github.com/acme/api"
    assert project_of(other).key not in ids


def test_outside_git_the_directory_is_the_project(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a, b = project_of(tmp_path / "a"), project_of(tmp_path / "b")
    assert a.id == str((tmp_path / "a").resolve()) and a.key != b.key


def test_thread_ids_are_valid_and_owned_only_by_their_project(tmp_path: Path) -> None:
    project = project_of(tmp_path)
    thread = project.thread_id("c45af7b1-cb7c-4e51-93db-8cbb250a877a")
    assert check.thread_id(thread) == thread and project.owns(thread)
    assert check.thread_id(project.thread_id("weird id/with spaces"))
    assert not project_of(tmp_path / "..").owns(thread)
