"""Prompt templates: plain files with `{placeholder}` fields, editable without touching code.

A template is `<name>.md`, looked up in the user's `prompts_dir` first, then in the package
(`mcp_memory/prompts/`, where the wheel ships them), then in a source checkout's top-level
`prompts/`. An optional line `<!-- user -->` splits it into a system part (above) and a user part
(below); without it the whole file is the user part. Only `{identifier}` is a field: any other
brace (JSON examples, code) is literal text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from mcp_memory.errors import ConfigError

USER_MARKER = "<!-- user -->"

# Per shipped template: the placeholders it must contain to do its job, and the ones it may use.
# A template that drops a required one, or names one the server never fills, fails at load,
# not at the first summary.
REQUIRED_PLACEHOLDERS: dict[str, frozenset[str]] = {
    "summary": frozenset({"prev_summary", "messages_joined"}),
    "recall": frozenset({"query", "memories"}),
    # Learning: mcp_memory/learning/templates.py loads these.
    "extract": frozenset({"turns"}),
    "reconcile": frozenset({"facts"}),
    "profile": frozenset({"prev_profile", "facts"}),
}
OPTIONAL_PLACEHOLDERS: dict[str, frozenset[str]] = {
    "summary": frozenset({"max_words"}),
    "recall": frozenset(),
    "extract": frozenset({"context", "today", "max_facts"}),
    "reconcile": frozenset({"today"}),
    "profile": frozenset({"max_words"}),
}

_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
_FIELD = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_USER_MARKER_LINE = re.compile(rf"^[ \t]*{re.escape(USER_MARKER)}[ \t]*$", re.MULTILINE)

_PACKAGE_DIR = Path(__file__).resolve().parents[1] / "prompts"  # the wheel puts prompts/ in the package
_CHECKOUT_DIR = Path(__file__).resolve().parents[2] / "prompts"  # a source checkout


class RenderedPrompt(NamedTuple):
    system: str
    user: str

    @property
    def text(self) -> str:
        """Both parts as one message, for a surface that takes a single text (an MCP prompt)."""
        return f"{self.system}\n\n{self.user}" if self.system else self.user


def _fields(text: str) -> set[str]:
    return set(_FIELD.findall(text))


def _substitute(text: str, values: dict[str, str]) -> str:
    # One pass over the template only: substituted values are never re-scanned, so braces in
    # memory text ("{}", JSON, code) come through untouched.
    return _FIELD.sub(lambda m: values[m.group(1)], text)


@dataclass(frozen=True)
class PromptTemplate:
    name: str
    source: Path
    system: str
    user: str

    @property
    def placeholders(self) -> frozenset[str]:
        return frozenset(_fields(self.system) | _fields(self.user))

    def render(self, **values: object) -> RenderedPrompt:
        """Fill every placeholder; values may contain any characters, braces included."""
        missing = sorted(self.placeholders - values.keys())
        if missing:
            raise ConfigError(
                f"prompt template {self.source} uses placeholder {{{missing[0]}}} "
                f"which the server does not provide; known here: {', '.join(sorted(values))}"
            )
        text_values = {k: str(v) for k, v in values.items()}
        return RenderedPrompt(
            _substitute(self.system, text_values).strip(), _substitute(self.user, text_values).strip()
        )


def search_dirs(prompts_dir: Path | None = None) -> list[Path]:
    """Where templates are looked up, first match wins."""
    dirs = [prompts_dir] if prompts_dir is not None else []
    return [*dirs, _PACKAGE_DIR, _CHECKOUT_DIR]


def parse_prompt(name: str, text: str, source: Path) -> PromptTemplate:
    """Split and check one template's text; raises ConfigError naming a missing placeholder."""
    parts = _USER_MARKER_LINE.split(text, maxsplit=1)
    system, user = (parts[0], parts[1]) if len(parts) == 2 else ("", text)
    template = PromptTemplate(name=name, source=source, system=system, user=user)
    required = REQUIRED_PLACEHOLDERS.get(name)
    if required is None:  # a template of the user's own: any placeholders, checked at render
        return template
    for field in sorted(required - template.placeholders):
        raise ConfigError(f"prompt template {source} must contain the placeholder {{{field}}}")
    allowed = required | OPTIONAL_PLACEHOLDERS.get(name, frozenset())
    for field in sorted(template.placeholders - allowed):
        raise ConfigError(
            f"prompt template {source} uses unknown placeholder {{{field}}}; "
            f"{name}.md may use {', '.join('{' + f + '}' for f in sorted(allowed))}"
        )
    return template


def load_prompt(name: str, prompts_dir: Path | None = None) -> PromptTemplate:
    """Load template `name` (e.g. "summary"): the user's prompts_dir first, then the shipped ones."""
    if not _NAME.match(name):
        raise ConfigError(f"prompt name {name!r} must be lower-case letters, digits and _")
    if prompts_dir is not None and not prompts_dir.is_dir():
        raise ConfigError(f"prompts_dir {prompts_dir} is not a directory")
    for directory in search_dirs(prompts_dir):
        path = directory / f"{name}.md"
        if path.is_file():
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as e:
                raise ConfigError(f"prompt template {path} cannot be read as UTF-8 text: {e}") from e
            return parse_prompt(name, text.replace("\r\n", "\n"), path)
    looked = ", ".join(str(d) for d in search_dirs(prompts_dir))
    raise ConfigError(f"no prompt template {name}.md found (looked in {looked})")
