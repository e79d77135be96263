"""Every credential of a maintained corpus redacted, every look-alike placeholder kept: gitleaks' own rule
samples (tests/security/secret_corpus.json says where from) and the URL passwords issue 55 found stored."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from mcp_memory.redaction import redact, redact_fast

CORPUS = json.loads((Path(__file__).parent / "secret_corpus.json").read_text())["samples"]


def _ids(expect: str) -> list[str]:
    return [s["text"] for s in CORPUS if s["expect"] == expect]


def test_the_corpus_has_both_sides() -> None:
    assert len(_ids("redacted")) >= 90 and len(_ids("kept")) >= 200


@pytest.mark.parametrize("text", _ids("redacted"))
def test_a_credential_is_redacted(text: str) -> None:
    assert "[redacted:" in redact(text).text


@pytest.mark.parametrize("text", _ids("kept"))
def test_a_look_alike_placeholder_is_kept(text: str) -> None:
    assert redact(text).text == text


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("postgres://u:Abc#123xyz@h/db", "Abc#123xyz"),
        ("redis://:S3cr3t?Pass@h:6379", "S3cr3t?Pass"),
        ("mongodb+srv://u:Pa/ss123word@h/db", "Pa/ss123word"),
    ],
)
def test_a_url_password_with_reserved_characters_is_gone_whole_even_from_the_hook(
    text: str, secret: str
) -> None:
    for redacted in (redact(text).text, redact_fast(text).text):
        assert secret not in redacted and not any(part in redacted for part in re.split("[#?/]", secret))
        assert redacted.endswith(text[text.index("@") :])  # the host and database stay
