"""What a query asks beyond its words: an account over time, or what is current.

Pure functions over the query's text and the ranked hits; the service applies them (service/searching.py)
on every backend alike.

- **An account over time** ("in what order did I ...", "summarize how my project progressed across our
  conversations"): the question's framing ("can you list the order in which I brought up different
  aspects of") is most of its words and says nothing of what to find, so the search runs on what is left
  ("developing my personal budget tracker"), by words and by meaning.
- **What is current**: when a newer memory says a thing changed ("now", "updated", "recently improved
  to") and ranks close below an older one on the same question, the newer ranks first, unless the query
  asks about the past (a time it names, as_of, or words like "originally", "at first", "used to").
- **Who said it**: a question in the first person ("when does my sprint end?", "what did I decide")
  asks what the user said; the assistant's replies restate it at length among much else, so in the
  ranking a reply counts ASSISTANT_WEIGHT of its score. Not when the question asks what the assistant
  said ("how did you recommend ...") or for a summary (the answers are half of the story).
- **Standing instructions**: a user's rule for the future ("Always include tests when I ask about
  parsing", "never use tabs") belongs beside every question it covers: it ranks as if it scored
  RULE_WEIGHT times its score, moving only upward past hits that score less.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

# Words that make a query ask for an account over time.
_OVER_TIME = re.compile(
    r"\b(in (what|which) order|order in which|chronolog\w*|sequence of|timeline|progress(ed|ion)?|"
    r"evolv\w*|over time|summar\w*|overview|recap|throughout our|across our)\b",
    re.IGNORECASE,
)
# The framing of such a question, removed before searching: requests, the account asked for, and where.
_FRAMING = [
    re.compile(pattern, re.IGNORECASE)
    for pattern in (
        r"\bmention only\b.*$",
        r"\b(can|could|would|will) you( please)?\b",
        r"\bplease\b",
        r"\b(list|walk me through|tell me|give me|provide|show me|describe|summari[sz]e|recap|outline)\b",
        r"\b(a |an )?(comprehensive |brief |short |detailed |quick )?(summary|overview|recap|timeline) of\b",
        r"\bthe order in which\b",
        r"\bin (what|which) order\b",
        r"\bin (chronological )?order\b",
        r"\b(i )?(brought up|mentioned|discussed|talked about|raised)\b",
        r"\b(different )?aspects of\b",
        r"\b(throughout|across|during|over|in) (all )?(of )?our (conversations?|discussions?|sessions?|chats?)\b",
        r"\bover time\b",
        r"\bso far\b",
    )
]
# A query about the past: the current memory is not what it asks for.
_PAST = re.compile(
    r"\b(originally|initially|at first|at the start|in the beginning|used to|(did|do) (i|we) use to|"
    r"previous(ly)?|formerly|"
    r"earlier|before (i|we|the)|first (set|planned|chose|decided|mentioned)|original)\b",
    re.IGNORECASE,
)
# Words a memory uses to say that something changed.
_CHANGE = re.compile(
    r"\b(now|new|newly|updated?|recently|changed?|switched|increased|decreased|improved|reduced|raised|"
    r"lowered|instead|no longer|anymore|latest|currently|moved|revised|extended|postponed|pushed back|"
    r"rescheduled|adjusted|upgraded|downgraded|expanded|grew|grown)\b",
    re.IGNORECASE,
)
NEWER_WITHIN = 0.7  # a newer memory saying a thing changed ranks above an older one it scores 70% of
NEWER_AMONG = 5  # ... among the first this many hits
_CHANGE_READ = 1500  # characters of a hit read for such words (its matching passage, or its start)


# A question in the first person: about what the user said, did or has.
_FIRST_PERSON = re.compile(r"\b(i|my|me|mine|i'm|i've|i'd|i'll)\b", re.IGNORECASE)
# ... unless it asks what the assistant said or did ("how did you recommend", "your suggestion"); a
# request to the assistant ("can you help me", "could you show me") is not that.
_ASKS_THE_ASSISTANT = re.compile(
    r"\b(you|your)\b(?! (help|show|tell|give|walk|list|provide|explain|remind|summari[sz]e|describe|"
    r"outline|recap|suggest how|please))",
    re.IGNORECASE,
)
_SUMMARY = re.compile(r"\b(summar\w*|overview|recap)\b", re.IGNORECASE)
ASSISTANT_WEIGHT = 0.7  # an assistant's reply's share of its score, for a question about the user's words
# A user's rule for what is to come: "Always ...", "Never ...", "from now on ...", "... when I ask about".
_RULE = re.compile(
    r"^\W*(always|never|please (always|never)|from now on|whenever i|make sure to always)\b|"
    r"\bwhen(ever)? i ask\b",
    re.IGNORECASE,
)
_RULE_READ = 300  # a rule says so in its first characters
RULE_WEIGHT = 1.3  # a standing instruction ranks as if it scored this many times its score


def over_time(query: str) -> bool:
    return _OVER_TIME.search(query) is not None


def focus(query: str) -> str:
    """What to search for in a question asking for an account over time; other queries unchanged."""
    if not over_time(query):
        return query
    focused = query
    for framing in _FRAMING:
        focused = framing.sub(" ", focused)
    focused = " ".join(focused.split()).strip(" ,.?;:!")
    return focused if len(focused.split()) >= 2 else query


def about_the_past(query: str) -> bool:
    return _PAST.search(query) is not None


def about_the_user(query: str) -> bool:
    """A question about what the user said (who said it, above)."""
    return (
        _FIRST_PERSON.search(query) is not None
        and _ASKS_THE_ASSISTANT.search(query) is None
        and _SUMMARY.search(query) is None
    )


def standing_instruction(role: str | None, text: str) -> bool:
    return role == "user" and _RULE.search(text[:_RULE_READ]) is not None


@dataclass(frozen=True)
class Ranked:
    """A hit as the rules here see it."""

    score: float
    when: float  # created, epoch seconds
    order: int  # the store's order of writing, for memories of the same moment (rowid, or 0)
    text: str  # the part that matched
    role: str | None = None  # a turn's speaker
    content: str = ""  # the whole memory


def users_words_first(hits: Sequence[Ranked]) -> list[int]:
    """The hits' order for a question about the user (about_the_user): by score, an assistant's reply
    weighted ASSISTANT_WEIGHT. Scores must not be negative (a fused score); otherwise the order is kept."""
    if any(hit.score < 0 for hit in hits):
        return list(range(len(hits)))
    weight = [ASSISTANT_WEIGHT if hit.role == "assistant" else 1.0 for hit in hits]
    return sorted(range(len(hits)), key=lambda i: -hits[i].score * weight[i])


def rules_up(hits: Sequence[Ranked]) -> list[int]:
    """The hits' order with standing instructions moved up: each above the hits that score less than
    RULE_WEIGHT times its score, never down; the others keep their order."""
    order = list(range(len(hits)))
    for i, hit in enumerate(hits):
        if hit.score > 0 and standing_instruction(hit.role, hit.content):
            order.remove(i)
            lifted = hit.score * RULE_WEIGHT
            at = next((j for j, k in enumerate(order) if hits[k].score < lifted), len(order))
            order.insert(min(at, i), i)  # where it was, if nothing scores less
    return order


def newer_first(hits: Sequence[Ranked]) -> list[int]:
    """The hits' order with what is current first: among the first NEWER_AMONG, a newer hit that says
    something changed moves above the older hits right above it that it scores at least NEWER_WITHIN of.
    Scores must be positive (a fused score); otherwise the order is kept."""
    count = min(NEWER_AMONG, len(hits))
    if count < 2 or any(hit.score <= 0 for hit in hits[:count]):
        return list(range(len(hits)))
    ranked: list[int] = []
    for i in range(count):
        at = len(ranked)
        if _CHANGE.search(hits[i].text[:_CHANGE_READ]):
            while at > 0 and _newer(hits[i], hits[ranked[at - 1]]):
                at -= 1
        ranked.insert(at, i)
    return ranked + list(range(count, len(hits)))


def _newer(hit: Ranked, above: Ranked) -> bool:
    later = (hit.when, hit.order) > (above.when, above.order)
    return later and hit.score >= NEWER_WITHIN * above.score
