"""What a summary quotes stays as it was said: identifiers, code, paths, versions, hex, numbers and names,
character for character.

The offline summary writer (extractive.py, notes.py, prose.py) cuts sentences down ("I'm vegetarian" ->
"Vegetarian") and may start a line where the speaker's sentence did not. `sentence_case` capitalises the
new first letter only when the first word is an English function word ("the", "we", "it's"), or when it
is a plain lowercase word (letters only) taking the place of a capital the cut removed; never an
identifier, a path, a version, hex, a number or code (`aws_secret_access_key` stays, never
`Aws_secret_access_key`), nor a word a speaker wrote lowercase at a sentence's start ("npm install
fails."). A lowercase name right after a cut opener ("Well, npm is slow") cannot be told from a word
by its look, and is capitalised as a word would be. A model writing the summary (summarizer.py) is
asked to copy such terms exactly; what it wrote is checked against the messages (`altered`), a term the
messages hold in another case is put back as they spell it (`repair`), and what is still not found
there is logged.
"""

from __future__ import annotations

import re

from mcp_memory.search.terms import STOPWORDS

_FIRST_WORD = re.compile(r"([a-z]+(?:['’-][a-z]+)*)(?=[\s,;:.!?]|$)")
_CODE_SPAN = re.compile(r"`[^`\n]+`")
_TOKEN = re.compile(r"[^\s`\"“”‘’(){}\[\]<>,;]+")
_EDGE = ".,:;!?'’*"  # punctuation around a term in running text (and markdown's bold)
_INNER_CAPITAL = re.compile(r"[a-z0-9][A-Z]")
_DOTTED = re.compile(r"\w\.\w")
_HEX = re.compile(r"^(?:0x)?[0-9a-fA-F]{7,}$")


def sentence_case(text: str, *, was_capital: bool = False) -> str:
    """`text` with its first letter capitalised when its first word is an English function word, or a
    plain lowercase word where the text it was cut from began with a capital (`was_capital`); else as
    it is (an identifier, a path, a version, code or a name keeps its spelling)."""
    found = _FIRST_WORD.match(text)
    if found is None:
        return text
    word = found.group(1).replace("’", "'")
    function_word = word in STOPWORDS and (len(word) > 1 or word in ("a", "i"))
    if not (function_word or was_capital):
        return text
    return text[0].upper() + text[1:]


def is_term(token: str) -> bool:
    """Whether a token of running text is one a summary must copy exactly: it holds a digit, `_`, `/` or
    `\\`, an inner capital (camelCase, iPhone, PostgreSQL), a dot between word characters (a.b, v1.2),
    or is a run of hex digits."""
    if not any(ch.isalnum() for ch in token):
        return False
    return (
        any(ch.isdigit() or ch in "_/\\" for ch in token)
        or _INNER_CAPITAL.search(token) is not None
        or _DOTTED.search(token) is not None
        or _HEX.match(token) is not None
    )


def quoted_terms(text: str) -> list[str]:
    """The terms of `text` a summary must copy exactly, in order, once each: its inline code spans and
    its identifier-like tokens (`is_term`), without the punctuation around them."""
    found: dict[str, None] = {}
    for span in _CODE_SPAN.findall(text):
        found.setdefault(span, None)
    for token in _TOKEN.findall(_CODE_SPAN.sub(" ", text)):
        term = token.strip(_EDGE)
        if term and is_term(term):
            found.setdefault(term, None)
    return list(found)


def altered(summary: str, source: str) -> list[str]:
    """The terms of `summary` that `source` does not hold character for character."""
    return [term for term in quoted_terms(summary) if term not in source]


def repair(summary: str, source: str) -> tuple[str, list[str]]:
    """`summary` with each word or term that `source` holds as a term in exactly one other spelling of
    the same letters (case aside: `Postgresql` for `PostgreSQL`, `Aws_secret_access_key`) put back as
    `source` spells it; and the summary's terms still not found in `source`."""
    spellings: dict[str, set[str]] = {}
    for term in quoted_terms(source):
        spellings.setdefault(term.casefold(), set()).add(term)
    for token in dict.fromkeys(token.strip(_EDGE) for token in _TOKEN.findall(summary)):
        known = spellings.get(token.casefold(), set())
        if token and token not in known and len(known) == 1:
            summary = re.sub(rf"(?<![\w/.~-]){re.escape(token)}(?![\w/-])", next(iter(known)), summary)
    return summary, altered(summary, source)
