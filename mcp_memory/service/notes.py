"""A sentence of a conversation as a line of a summary: its facts, without words around them.

The offline summary writer (extractive.py) keeps sentences as they were said, on the fixed budget of a
running summary. Words a template would add ("The user said", "Asked which islands ...") cost tokens a
fact could use, and match queries the summary cannot answer: "what does the user eat?" would find
"user" on every line. So a kept sentence is cut down instead, by a few fixed rules and never by
guessing at meaning; every name, number, date and negation stays as it was said:

- the speaker's own subject and possessive go, as in a note: "I'm vegetarian, so I need good food
  options nearby" -> "Vegetarian, so need good food options nearby"; "with my sister Maya" -> "with
  sister Maya"; "I'd suggest" -> "Would suggest"; articles go too ("the morning tour" -> "morning tour");
- a line may end early, before a clause or modifier that only adds to it ("Budget is $10,000 for
  flights, hotels and food." -> "Budget is $10,000."), never inside a list or before "but"/"if"/"not":
  the summary writer chooses the reading whose words are worth its tokens;
- a line says who spoke only when the conversation names its speakers ("Caroline: ..."), or when it
  was not the user ("Assistant: ..."): a summary of a user's thread is the user's own note.
"""

from __future__ import annotations

import re

from mcp_memory.service.verbatim import sentence_case

# "Caroline: ..." at the start of a message: the conversation's own speaker label (imports, transcripts).
LABEL = re.compile(r"^([A-Z][\w'’.-]*(?: [A-Z][\w'’.-]*){0,2}):\s+(?=\S)")
_ROLES = {"assistant": "Assistant", "tool": "Tool", "system": "System"}

# The speaker as the subject of a clause (its start, or after ", so" / ", and" / ", but" / ";"), and what
# stays of it: "I'd love to" -> "would love to", "I'm vegetarian" -> "vegetarian".
_CLAUSE_START = r"(?:^|(?<=[,;:] )|(?<=[,;] so )|(?<=[,;] and )|(?<=[,;] but ))"
_SUBJECT = re.compile(
    _CLAUSE_START + r"(?:I|we)(?:['’](?P<contraction>m|re|ve|d|ll)|\s+(?:am|are)\b)?\s+(?=\w)", re.IGNORECASE
)
_KEPT = {"d": "would ", "ll": "will "}
_POSSESSIVE = re.compile(r"\b(?:my|our)\s+(?=\w)", re.IGNORECASE)
_ARTICLE = re.compile(r"(?:^(?:A|An|The)|\b(?:a|an|the))\s+(?=[\w$])")
_SPACES = re.compile(r"\s+([,;:.!?])|\s{2,}")

# A verb (or a word that usually brings one) makes a clause; a short answer without any is a fragment.
_VERB_CUES = frozenset(
    """
is are was were am be been being do does did have has had can could will would should shall may might
must need needs want wants like likes love loves go goes went going get gets got make makes made take
took think know say said see saw let let's i i'm i've i'd i'll we we're it's that's there's he she they
it this that there
""".split()
)
_FRAGMENT_WORDS = 6
_WORD = re.compile(r"[\w'’]+")


def speaker_of(role: str, label: str | None) -> str | None:
    """The name a line opens with: the conversation's own label, else the role's, none for the user."""
    return label or _ROLES.get(role, None if role == "user" else role.capitalize())


def readings(sentence: str) -> list[str]:
    """The sentence as a summary may write it (rules above), shortest reading first."""
    return leads(_as_note(sentence.strip()))


def _as_note(sentence: str) -> str:
    def subject(found: re.Match[str]) -> str:
        return _KEPT.get((found["contraction"] or "").lower(), "")

    text = _SUBJECT.sub(subject, sentence)
    text = _POSSESSIVE.sub("", text)
    text = _ARTICLE.sub("", text)
    text = _SPACES.sub(lambda m: m.group(1) or " ", text).strip()
    if text.endswith("!"):
        text = text[:-1] + "."
    if not any(ch.isalnum() for ch in text):
        return sentence
    return sentence_case(text, was_capital=sentence[:1].isupper())


def is_fragment(sentence: str) -> bool:
    """A short answer with no verb in it ("Maui and Kauai.", "Vacation rentals.")."""
    words = [w.casefold().replace("’", "'") for w in _WORD.findall(sentence)]
    if not words or len(words) > _FRAGMENT_WORDS or sentence.endswith("?"):
        return False
    return not any(w in _VERB_CUES or w.endswith(("ed", "ing", "n't")) for w in words)


def last_question(sentences: list[str]) -> str | None:
    """The question a message ends on, if it asks one: what the next speaker's short answer answers."""
    questions = [s for s in sentences if s.rstrip().endswith("?")]
    return questions[-1] if questions else None


# Where a line may end early and stay true: before a clause or a trailing modifier that only adds to
# what came before ("Vegetarian, so need ..." -> "Vegetarian."), never before one that takes back or
# conditions it ("but", "if", "unless", "not").
_CUT = re.compile(
    r"(?:, | )(?=(?:so|because|for|with|since|when|while|after|before|which|who|where|at|on|in|from)\b)|, (?=and\b)"
    r"|, (?=\w)(?!(?:not|no|never|but|if|unless|except|though|although)\b)"
)
_ITEM = r"[^\s,;]+(?: [^\s,;]+){0,2}"  # one to three words: an item of a list
_LIST_BEFORE = re.compile(rf", {_ITEM}$")  # "... flights, hotels" |
_LIST_AFTER = re.compile(rf"^,? (?:and |or )?{_ITEM}(?:,| and | or |[.;!?]?$)")  # | ", hotels and food"


def leads(line: str) -> list[str]:
    """The line and its shorter readings, shortest first: its leading clauses, each up to a place where
    it may end ("Budget is $10,000 for flights, hotels and food." -> "Budget is $10,000.", "Budget is
    $10,000 for flights, hotels and food."). A list is never cut inside: it stays whole or goes."""
    shorter: list[str] = []
    for cut in _CUT.finditer(line):
        head, rest = line[: cut.start()], line[cut.start() :]
        if _LIST_BEFORE.search(head) or (rest.startswith((",", " and", " or")) and _LIST_AFTER.match(rest)):
            continue
        # One word is a reading of its own only as a whole clause ("Vegetarian, so ..."), not "Went."
        if len(head.split()) >= (1 if rest.startswith(",") else 2):
            shorter.append(head.rstrip(" ,;:") + ".")
    return [*dict.fromkeys(s for s in shorter if s != line), line]
