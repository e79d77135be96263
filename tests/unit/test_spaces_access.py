"""Who may use which space: roles from settings and from the token's groups, the answers for a space
one is not in (the same as for none), and the settings refused at start."""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path

import pytest

from mcp_memory.config import SecuritySettings, Settings, SpaceSettings
from mcp_memory.errors import ConfigError, InvalidInputError, NotFoundError, PermissionDeniedError, shown
from mcp_memory.mcp.server import build_server
from mcp_memory.models import Owner, space_key, space_of
from mcp_memory.security.oauth.claims import ClaimRules
from mcp_memory.security.spaces import Access, roles_of
from mcp_memory.service.assembly import open_service

SPACES = [
    SpaceSettings(name="team", members={"ann": "reader", "group:leads": "owner", "group:staff": "writer"}),
    SpaceSettings(name="ops", members={"bob": "writer"}),
]


def settings() -> Settings:
    return Settings(security=SecuritySettings(spaces=SPACES))


def test_the_highest_role_wins_whether_held_directly_or_through_a_group() -> None:
    assert roles_of(settings(), "ann", []) == {"team": "reader"}
    assert roles_of(settings(), "ann", ["staff"]) == {"team": "writer"}
    assert roles_of(settings(), "ann", ["staff", "leads"]) == {"team": "owner"}
    assert roles_of(settings(), "carl", ["staff"]) == {"team": "writer"}
    assert roles_of(settings(), "bob", []) == {"ops": "writer"}
    assert roles_of(settings(), "nobody", ["group:leads", "other"]) == {}  # a group id, not a member name


def test_an_owner_is_keyed_by_the_space_and_carries_who_acts() -> None:
    access = Access.of(settings(), "ann", ["staff"])
    owner = access.owner("team", "writer")
    assert (str(owner), owner.space, owner.author, owner.role) == ("@team", "team", "ann", "writer")
    assert space_of(owner) == "team" and space_of(access.owner(None)) is None
    assert [str(o) for o in access.readable()] == ["ann", "@team"]
    assert [str(o) for o in access.readable("team")] == ["@team"]
    assert Owner("ann").may("owner") and not Owner("ann", "team", "reader").may("writer")


def test_a_space_one_is_not_in_answers_as_one_that_does_not_exist() -> None:
    access = Access.of(settings(), "ann")
    answers = []
    for name in ("ops", "nosuch"):
        with pytest.raises(NotFoundError) as refused:
            access.owner(name)
        answers.append(str(refused.value).replace(name, "X"))
    assert answers[0] == answers[1] == "no space 'X' that you are a member of"


def test_a_role_too_low_is_named() -> None:
    with pytest.raises(PermissionDeniedError) as refused:
        Access.of(settings(), "ann").owner("team", "writer", doing="add_turn")
    assert str(refused.value).startswith(
        "add_turn needs the writer role in space 'team'; you are a reader there"
    )


@pytest.mark.parametrize("bad", ["", "te am", "team\n", "\x00", "-team", "t" * 65, "a/b", "@team"])
def test_a_bad_space_name_is_refused_by_name(bad: str) -> None:
    with pytest.raises(InvalidInputError) as refused:
        Access.of(settings(), "ann").owner(bad)
    assert f"space {shown(bad)} is not valid" in str(refused.value)  # 65 characters: a prefix and the length


def test_spaces_come_from_the_environment_as_json(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "MCP_MEMORY_SECURITY__SPACES", json.dumps([{"name": "team", "members": {"ann": "owner"}}])
    )
    loaded = Settings()
    assert [(s.name, s.members) for s in loaded.security.spaces] == [("team", {"ann": "owner"})]


@pytest.mark.parametrize(
    ("spaces", "problem"),
    [
        ([{"name": "team", "members": {}}, {"name": "team", "members": {}}], "configured twice"),
        ([{"name": "bad name", "members": {}}], "space name 'bad name'"),
        ([{"name": "team", "members": {"ann": "admin"}}], "reader"),
        ([{"name": "team", "members": {"group:": "reader"}}], "space member 'group:'"),
        ([{"name": "team", "members": {"a b": "reader"}}], "space member 'a b'"),
        ([{"name": "team", "members": {}, "quota": 1}], "quota"),
    ],
)
def test_bad_space_settings_are_refused_naming_the_problem(spaces: list[object], problem: str) -> None:
    with pytest.raises(ValueError, match="spaces") as refused:
        SecuritySettings.model_validate({"spaces": spaces})
    assert problem in str(refused.value)


def test_the_groups_claims_are_read_as_strings_or_lists() -> None:
    rules = ClaimRules(group_claims=("groups", "roles"))
    claims = {"groups": ["g1", "g2", 3], "roles": "Memory.Team Memory.Other", "wids": ["x"]}
    assert rules.groups(claims) == ["Memory.Other", "Memory.Team", "g1", "g2"]
    assert ClaimRules().groups({"roles": ["r"]}) == []  # only the configured claims


def test_a_spaces_file_is_read_again_when_it_changes_and_a_broken_edit_keeps_the_last_good(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "spaces.json"
    path.write_text(json.dumps({"spaces": [{"name": "team", "members": {"ann": "reader"}}]}))
    settings = Settings(security=SecuritySettings(spaces_file=path, spaces=[SPACES[1]]))
    assert roles_of(settings, "ann", []) == {"team": "reader"}
    assert roles_of(settings, "bob", []) == {"ops": "writer"}  # the inline ones count too

    path.write_text(json.dumps({"spaces": [{"name": "team", "members": {"ann": "owner", "nora": "writer"}}]}))
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 1_000_000))  # a later modification time, surely
    assert roles_of(settings, "ann", []) == {"team": "owner"}
    assert roles_of(settings, "nora", []) == {"team": "writer"}

    path.write_text('{"spaces": [{"name": "team", "members": {"ann": "god"}}]}')
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 2_000_000))
    with caplog.at_level(logging.ERROR):
        assert roles_of(settings, "nora", []) == {"team": "writer"}
    assert "the spaces read before stay in force" in caplog.text


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("not json", "is not JSON"),
        ('{"spaces": [{"name": "a b", "members": {}}]}', "space name 'a b'"),
        ('{"spaces": [{"name": "ops", "members": {}}]}', "space 'ops' is configured twice"),
    ],
)
def test_a_bad_spaces_file_is_refused_at_start(tmp_path: Path, content: str, problem: str) -> None:
    path = tmp_path / "spaces.json"
    path.write_text(content)
    settings = Settings(security=SecuritySettings(spaces_file=path, spaces=[SPACES[1]]))
    with pytest.raises(ConfigError) as refused:
        build_server(settings)
    assert problem in str(refused.value) and str(path) in str(refused.value)


@pytest.mark.anyio
async def test_forget_user_reads_the_spaces_as_requests_do_and_a_broken_edit_keeps_the_last_good(
    fast_settings: Settings, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "spaces.json"
    path.write_text(json.dumps({"spaces": [{"name": "team", "members": {"ann": "writer", "olga": "owner"}}]}))
    security = fast_settings.security.model_copy(update={"spaces_file": path})
    settings = fast_settings.model_copy(update={"security": security})
    async with open_service(settings) as service:
        ann = Access.of(settings, "ann")  # a request reads the file: the reader holds it now
        await service.add_turn(ann.owner("team", "writer"), "plan", "user", "staging listens on 5439")
        await service.add_turn(Access.of(settings, "olga").owner("team"), "plan", "user", "olga's turn")

        path.write_text('{"spaces": [{"name": "team", "members": {"ann": "god"}}]}')  # a broken edit
        os.utime(path, ns=(time.time_ns(), time.time_ns() + 1_000_000))
        with caplog.at_level(logging.ERROR):
            receipt = await service.forget_user("ann")
        assert "the spaces read before stay in force" in caplog.text
        # Her turn in the space, found through the last good file (reading the file anew would refuse).
        assert receipt.long_term.by_type == {"turn": 1}
        left = await service.stores.long_term.memories_of(space_key("team"))
        assert [(m.author, m.content) for m in left] == [("olga", "olga's turn")]
