"""A sentence of a conversation, rewritten as a line of a note: who said it, in a whole clause.

The offline summary writer (extractive.py) keeps sentences as they were said; read later, out of the
conversation, "Maui and Kauai." or "I'm vegetarian." no longer say who said them or what they answer.
Each kept sentence is rewritten here, by a few fixed rules and never by guessing at meaning:

- said in the first person, it becomes reported speech: "I'm vegetarian, so I need good food nearby"
  -> "The user said they're vegetarian, so they need good food nearby" (the assistant is "it", and
  only where no verb needs another ending: "I'd suggest" -> "it would suggest");
- a short answer without a verb gets the question it answers: "Maui and Kauai." after "Which islands
  are you considering?" -> "Asked which islands they are considering, the user said Maui and Kauai."
  (a question that does not fit the simple patterns is quoted instead);
- anything else is attributed as said: "The assistant said: Paia has great vegetarian cafes." and
  "The user asked: Can we book that?".

Every word of the sentence stays (pronouns and the speaker are all the rules add or change), so a
fact's names, numbers and dates are in the note exactly as they were said.
"""

from __future__ import annotations

import re
from typing import Literal

Person = Literal["they", "it"]

# "Caroline: ..." at the start of a message: the conversation's own speaker label (imports, transcripts).
LABEL = re.compile(r"^([A-Z][\w'’.-]*(?: [A-Z][\w'’.-]*){0,2}):\s+(?=\S)")
_ROLES = {"user": "The user", "assistant": "The assistant", "tool": "A tool", "system": "The system"}

_FIRST_PERSON_START = re.compile(r"^(?:I|I['’](?:m|ve|d|ll)|my|we|we['’](?:re|ve|d|ll)|our)\b", re.IGNORECASE)
_SECOND_PERSON = re.compile(r"\byou(?:r|rs|rself|rselves|['’](?:re|ve|d|ll))?\b", re.IGNORECASE)
_QUOTES = re.compile(r"[\"“”]")

_THEY = [
    (r"\bI['’]m\b", "they're"),
    (r"\bI am\b", "they are"),
    (r"\bI was\b", "they were"),
    (r"\bI wasn['’]t\b", "they weren't"),
    (r"\bI['’](ve|d|ll)\b", r"they'\1"),
    (r"\bI\b", "they"),
    (r"\b[Ww]e['’](re|ve|d|ll)\b", r"they'\1"),
    (r"\b[Ww]e\b", "they"),
    (r"\b[Mm]e\b(?!-)", "them"),
    (r"\b[Mm]y\b(?!-)", "their"),
    (r"\b[Mm]ine\b", "theirs"),
    (r"\b[Mm]yself\b", "themselves"),
    (r"\bus\b(?!-)", "them"),
    (r"\b[Oo]ur\b", "their"),
    (r"\b[Oo]urs\b", "theirs"),
    (r"\b[Oo]urselves\b", "themselves"),
]
_MODALS = "can|could|would|should|will|might|must|may|cannot|can['’]t|won['’]t|wouldn['’]t|couldn['’]t"
_IT = [
    (r"\bI['’]m\b", "it's"),
    (r"\bI am\b", "it is"),
    (r"\bI was\b", "it was"),
    (r"\bI['’]ve\b", "it has"),
    (r"\bI['’]d\b", "it would"),
    (r"\bI['’]ll\b", "it will"),
    (rf"\bI (?=(?:{_MODALS})\b)", "it "),
    (r"\b[Mm]y\b(?!-)", "its"),
    (r"\b[Mm]e\b(?!-)", "it"),
    (r"\b[Mm]yself\b", "itself"),
]
# What "it" cannot take over without changing a verb's ending ("I suggest" -> "it suggests").
_IT_LEFT = re.compile(r"\b(?:I|we|us|our|ours|ourselves|mine)\b|\bwe['’]", re.IGNORECASE)

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

_AUX = "are|is|was|were|will|would|can|could|should|do|does|have|has"
_WH_QUESTION = re.compile(
    rf"^(?P<wh>(?:what|which|where|when|who|whom|whose|how|why)(?: (?:much|many|long|often|far|kind of \w+|\w+s))?)"
    rf" (?P<aux>{_AUX}) (?P<subject>you|we) (?P<rest>.+)$",
    re.IGNORECASE,
)
_WH_IS = re.compile(r"^(?P<wh>what|where|who|how|when)['’]s (?P<rest>.+)$", re.IGNORECASE)
_YES_NO = re.compile(rf"^(?P<aux>{_AUX}) (?P<subject>you|we) (?P<rest>.+)$", re.IGNORECASE)
_ASKER = re.compile(r"\b(?:I|me|my|mine|I['’]\w+)\b")
_YOURS = [
    (r"\byour\b", "their"),
    (r"\byours\b", "theirs"),
    (r"\byourself\b", "themselves"),
    (r"\byou\b", "they"),
]


def subject_of(role: str, label: str | None) -> str:
    """Who a note says spoke: the conversation's own label when it has one, else the role."""
    return label or _ROLES.get(role, f"The {role}")


def person_of(role: str, label: str | None) -> Person:
    return "it" if label is None and role in ("assistant", "tool", "system") else "they"


def note(
    subject: str,
    person: Person,
    sentence: str,
    asked: str | None = None,
    ordinary: frozenset[str] = frozenset(),
) -> str:
    """The sentence as a line of a note, attributed to `subject`. `asked`: the question it answers;
    `ordinary`: words the conversation writes in lower case (a fragment's first word among them is
    lowered after "said"; any other capitalised first word is a name, and kept)."""
    sentence = sentence.strip()
    if asked is not None and is_fragment(sentence):
        answer = sentence
        first = answer.split(" ", 1)[0]
        if first[:1].isupper() and not first.isupper() and first.casefold() in ordinary:
            answer = answer[0].lower() + answer[1:]
        return f"Asked {indirect(asked)}, {_lower_subject(subject)} said {answer}"
    reported = _reported(sentence, person)
    if reported is not None:
        return f"{subject} said {reported}"
    verb = "asked" if sentence.endswith("?") else "said"
    return f"{subject} {verb}: {sentence}"


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


def indirect(question: str) -> str:
    """ "Which islands are you considering, and what's your budget?" -> "which islands they are
    considering"; a question outside the simple patterns is quoted as asked."""
    clause = re.split(
        r",? (?:and|or|but) (?=(?:what|which|where|when|who|how|why|do|does|are|is|can)\b)|[,;:] ",
        question.strip().rstrip("?"),
    )[0]
    if not _ASKER.search(clause):
        if found := _WH_QUESTION.match(clause):
            aux = found["aux"].lower()
            verb = "" if aux in ("do", "does") else f" {_agree(aux)}"
            if aux not in ("was", "is", "has"):
                return f"{found['wh'].lower()} they{verb} {_shift_you(found['rest'])}"
        if found := _WH_IS.match(clause):
            return f"{found['wh'].lower()} {_shift_you(found['rest'])} is"
        if found := _YES_NO.match(clause):
            aux = found["aux"].lower()
            verb = "" if aux in ("do", "does") else f" {_agree(aux)}"
            if aux not in ("was", "is", "has"):
                return f"whether they{verb} {_shift_you(found['rest'])}"
    return f'"{question.strip()}"'


def _agree(aux: str) -> str:
    return {"is": "are", "was": "were", "has": "have", "does": "do"}.get(aux, aux)


def _shift_you(text: str) -> str:
    for pattern, replacement in _YOURS:
        text = re.sub(pattern, replacement, text, flags=re.IGNORECASE)
    return text


def _reported(sentence: str, person: Person) -> str | None:
    """First-person speech as reported speech, or None when the rules cannot say it so."""
    if not _FIRST_PERSON_START.match(sentence) or _SECOND_PERSON.search(sentence) or _QUOTES.search(sentence):
        return None
    if sentence.endswith("?"):
        return None
    text = sentence
    for pattern, replacement in _THEY if person == "they" else _IT:
        text = re.sub(pattern, replacement, text)
    if person == "it" and _IT_LEFT.search(text):
        return None
    text = text[:-1] + "." if text.endswith("!") else text
    return text[0].lower() + text[1:] if text[:1].isupper() and not text.startswith("I ") else text


def _lower_subject(subject: str) -> str:
    return subject[0].lower() + subject[1:] if subject.startswith(("The ", "A ")) else subject
