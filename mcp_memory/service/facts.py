"""What a sentence states: the kinds of fact a summary or a project's brief must not lose.

A later turn builds on who is involved, on numbers and dates, on the limits that were set, on what was
decided and on what is still to do; the small talk around them can go. Each kind is found by its
surface cues only (capitalised words, digits, month names, a fixed list of phrases), never by guessing
at meaning, so the same sentence is read the same way in any conversation:

- `name`: a capitalised word past a sentence's first word, or one known as a name elsewhere in the
  text ("Priya will own the export" when "with Priya" was said too): people, places, products;
- `number`: a word with a digit (amounts, counts, versions, years);
- `date`: a day of a month ("October 3", "3 October"), an ISO or numeric date, or a day ahead
  ("tomorrow", "by Friday", "next week", "end of the month"); not a month alone ("in May") and not a
  day gone by ("yesterday"): the summary writer pins those to the calendar itself;
- `constraint`: "must", "never", "only", "at most", "at least", "no more than", "has to", "deadline",
  "budget", "limit", "required", "cannot";
- `decision`: "decided", "agreed", "we'll use", "going with", "chose", "instead of", "settled on",
  "switched to", "prefer";
- `task`: a to-do marker, "next step", "still need", "blocked", "follow up", "remind", "not yet", "pending".
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Literal

FactKind = Literal["name", "number", "date", "constraint", "decision", "task"]
KINDS: frozenset[FactKind] = frozenset({"name", "number", "date", "constraint", "decision", "task"})
# What was agreed on and what is still open: what a later session builds on first.
COMMITMENTS: frozenset[FactKind] = frozenset({"constraint", "decision", "task"})

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?")
_DIGIT = re.compile(r"\d")
MONTHS = frozenset(
    "january february march april may june july august september october november december".split()
)
WEEKDAYS = frozenset("monday tuesday wednesday thursday friday saturday sunday".split())
_DATE = re.compile(
    r"\b(?:\d{4}-\d{2}-\d{2}|\d{1,2}/\d{1,2}(?:/\d{2,4})?|tomorrow"
    r"|(?:by|until|before|due|next|this) (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
    r"|(?:next|this) (?:week|weekend|month|quarter|year|sprint)|end of (?:the )?(?:day|week|month|quarter|year|sprint)"
    r"|(?:january|february|march|april|may|june|july|august|september|october|november|december)"
    r" \d{1,2}\b|\d{1,2}(?:st|nd|rd|th)? (?:of )?(?:january|february|march|april|may|june|july|august"
    r"|september|october|november|december))",
    re.IGNORECASE,
)
# Deontic only: "must've been amazing", "never been there", "I have to say" and "how is it going with"
# are how people talk, not limits or choices.
_NOT_AFTER_NEVER = (
    r"(?!\s+(?:been|seen|thought|knew|had|felt|imagined|expected|met|heard|tried|done|forget|give)\b)"
)
_CONSTRAINT = re.compile(
    r"\b(?:(?<![\w'’] )never" + _NOT_AFTER_NEVER + r"|(?:must|should|shall|will|can|may|we) never"
    r"|must(?:n['’]t)?(?![-'’]|\s+(?:be|have|feel|love|know|mean|say|see|try|visit|admit)\b)"
    r"|only (?:if|when|after|before|on|for|with|from|through|via)|at (?:most|least|the latest)"
    r"|no (?:more|later|less|fewer|earlier) than|not (?:more|later) than"
    r"|ha(?:s|ve) to(?!\s+(?:say|admit|go|deal|get going)\b)|deadline\w*|budget\w*|limit(?:ed)? to"
    r"|required|cannot|mandatory|not allowed|forbidden|maximum|minimum)\b",
    re.IGNORECASE,
)
_DECISION = re.compile(
    r"\b(?:decided|decision is|agreed (?:to|on|that)|(?:we|I)['’]ll (?:use|go with|stick with|switch)"
    r"|(?:we|I) will (?:use|go with|stick with|switch)|(?:we|I)['’](?:re|m) going with|chose|opted"
    r"|instead of|settled on|switch(?:ed)? to|rather than|will use)\b",
    re.IGNORECASE,
)
_TASK = re.compile(
    r"(?:\bTODO\b|\bFIXME\b|\bto-?do\b|\bnext(?: steps?\b|:| up\b)|\bstill (?:need|have to|to do|open|fail\w*"
    r"|broken|pending)|\bblock(?:ed|er|ers|ing)\b|\bfollow[- ]up\b|\bremind (?:me|us|you|him|her|them) to\b"
    r"|\bnot (?:done )?yet\b|\bpending\b|\bopen question|\bleft to do\b|\bneeds? to\b)",
    re.IGNORECASE,
)


_PATTERNS: dict[FactKind, re.Pattern[str]] = {
    "date": _DATE,
    "constraint": _CONSTRAINT,
    "decision": _DECISION,
    "task": _TASK,
}


def names(sentence: str, known: Iterable[str] = ()) -> frozenset[str]:
    """The sentence's names, lower-cased: capitalised words past its first (not "I"; a month or a
    weekday is one too), and its first word when `known` (lower-cased) holds it as a name said elsewhere."""
    words = _WORD.findall(sentence)
    found = {w.casefold() for w in words[1:] if w[:1].isupper() and w != "I"}
    if words and words[0][:1].isupper() and words[0].casefold() in set(known):
        found.add(words[0].casefold())
    return frozenset(found)


def fact_kinds(
    sentence: str, known_names: Iterable[str] = (), among: frozenset[FactKind] = KINDS
) -> frozenset[FactKind]:
    """The kinds of fact the sentence carries (module docstring), of those `among`; empty for small talk."""
    found: set[FactKind] = set()
    for kind in among:
        if kind == "name":
            stated = bool(names(sentence, known_names) - MONTHS - WEEKDAYS)
        elif kind == "number":
            stated = _DIGIT.search(sentence) is not None
        else:
            stated = _PATTERNS[kind].search(sentence) is not None
        if stated:
            found.add(kind)
    return frozenset(found)
