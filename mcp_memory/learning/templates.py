"""The learning prompts (extract, reconcile, profile), loaded once at start.

Their required and allowed placeholders are registered with the others in mcp_memory/llm/prompts.py
(documented in prompts/README.md), so a broken template of the user's fails at load, naming it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mcp_memory.llm.prompts import PromptTemplate, load_prompt


@dataclass(frozen=True)
class LearningPrompts:
    extract: PromptTemplate
    reconcile: PromptTemplate
    profile: PromptTemplate

    @classmethod
    def load(cls, prompts_dir: Path | None) -> LearningPrompts:
        return cls(
            extract=load_prompt("extract", prompts_dir),
            reconcile=load_prompt("reconcile", prompts_dir),
            profile=load_prompt("profile", prompts_dir),
        )
