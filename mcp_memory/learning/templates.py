"""The learning prompts (extract, reconcile, profile): loaded once, placeholders checked at start."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError
from ..prompts import PromptTemplate, load_prompt

# Per template: the placeholders it must contain, and the ones it may use. Documented in prompts/README.md.
REQUIRED: dict[str, frozenset[str]] = {
    "extract": frozenset({"turns"}),
    "reconcile": frozenset({"facts"}),
    "profile": frozenset({"prev_profile", "facts"}),
}
OPTIONAL: dict[str, frozenset[str]] = {
    "extract": frozenset({"context", "today", "max_facts"}),
    "reconcile": frozenset({"today"}),
    "profile": frozenset({"max_words"}),
}


@dataclass(frozen=True)
class LearningPrompts:
    extract: PromptTemplate
    reconcile: PromptTemplate
    profile: PromptTemplate

    @classmethod
    def load(cls, prompts_dir: Path | None) -> LearningPrompts:
        return cls(**{name: _checked(load_prompt(name, prompts_dir)) for name in REQUIRED})


def _checked(template: PromptTemplate) -> PromptTemplate:
    required, allowed = REQUIRED[template.name], REQUIRED[template.name] | OPTIONAL[template.name]
    for field in sorted(required - template.placeholders):
        raise ConfigError(f"prompt template {template.source} must contain the placeholder {{{field}}}")
    for field in sorted(template.placeholders - allowed):
        raise ConfigError(
            f"prompt template {template.source} uses unknown placeholder {{{field}}}; "
            f"{template.name}.md may use {', '.join('{' + f + '}' for f in sorted(allowed))}"
        )
    return template
