"""The whole, readable sentences of a stored message, and which of them are worth quoting to a reader
who was not there: what the session-start brief (briefing.py) may show.

A stored reply is mostly an assistant's markdown: headings, bullet lists under bold labels, tables, code.
Cut into lines, it gives fragments ("**Deadline:**", "9:00-10:00: review PRs", "| Task | Owner |") that
read as noise out of their list. So a message is read block by block, as markdown is written:

- fenced code, headings, table rows and rules are not statements and are dropped; inline code is kept;
- a list item or a line is a block; an indented line continues its list item; a leading bold or plain
  label ("**Deadline:** ...", "Note: ...") is taken off, and what follows must then be a sentence;
- a block is split into sentences at ". ", "! ", "? " before a capital, a digit or a quote (not after
  "e.g.", "i.e.", "etc.", "vs."); bold and italic marks and links' targets are dropped.

A sentence is whole when it has at least MIN_WORDS words, ends with ".", "!" or "?" (a prompt's last
sentence may end without one: people type prompts that way; an assistant's bullet without a stop is a
note, not a sentence), has no unpaired quote mark (a piece of a quoted passage), is not code (a run of `{}=;<>`, or a line opening with `import`, `def` ...), and
was not clipped ("…" or "..." at its end, as capture cuts long texts). A sentence is never cut
mid-way: one too long for its place is skipped, or read as its `clauses`, each whole and standing as a
sentence of its own (a subject first, never a subordinate clause), so no shown sentence ends in "…".

What is not worth quoting:
- a redacted sentence: one holding a redaction marker (`[redacted:stripe_key]`, `[private]`,
  redaction/patterns.py), whatever else it says;
- boilerplate (BOILERPLATE): what an assistant says in any reply ("Let me know if ...", "I hope this
  helps", "Here's a breakdown", "Great question", "Good luck with ...", "By following these steps ...");
- from the assistant, advice as a fact (`is_advice`: a sentence that does not open with its subject,
  as an imperative or a bullet's noun phrase does, or says "you should", "make sure", "can help"): it
  tells the user what to do, not what the project decided;
- from the assistant, a sentence with nothing specific in it (`is_specific`): no number, no inline code,
  no identifier or path (`snake_case`, `camelCase`, `a/b`, `a.b`), no name. A name is a capitalised
  word past the sentence's start that is not a common technical acronym (API, HTTP, SQL ...) and not
  among the words the assistant uses everywhere in these sessions: a word in more than half of the
  replies read (when there are at least COMMON_REPLIES of them) is the project's or the assistant's
  everyday vocabulary ("Flask" in a Flask project), not a fact. Advice fits any project ("Grant users
  the minimum permissions necessary to perform their tasks."), so it goes; a report of work done ("I
  added the retry and the tests pass.") stays: it says what happened in this project.

Repeats are found on stemmed content words (`near_duplicate`): a Jaccard overlap of at least
DUPLICATE_OVERLAP, or as much of the shorter sentence's words, is one sentence said twice.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Iterable

from mcp_memory.redaction.patterns import MARKER
from mcp_memory.search.terms import STOPWORDS, terms
from mcp_memory.service.verbatim import sentence_case

MIN_WORDS = 4
COMMON_REPLIES = 4  # fewer replies than this say nothing about which words are everywhere
DUPLICATE_OVERLAP = 0.8

_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^\s{0,3}#{1,6}(\s|$)")
_RULE = re.compile(r"^\s*([-*_])(\s*\1){2,}\s*$")
_TABLE = re.compile(r"^\s*\|.*\|\s*$|^\s*\|?\s*:?-{3,}:?\s*\|")
_ITEM = re.compile(r"^(\s*)(?:[-*+•]|\d{1,3}[.)])\s+")
_QUOTE = re.compile(r"^\s*>+\s?")
# "**Deadline:**", "**Deadline**:", "__Owner__ -", "Note:": a label of up to five words before the text.
_LABEL = re.compile(
    r"^(?:(?:\*\*|__)[^*_\n]{1,60}?(?::\s*(?:\*\*|__)|(?:\*\*|__)\s*[:\-–—])|[A-Z][\w'’&()-]*(?: (?:[A-Z][\w'’&()-]*|\d+)){0,3}:(?=\s))\s*"
)
_TIME_RANGE = re.compile(r"^\W*\d{1,2}(?::\d{2})?\s*(?:[ap]\.?m\.?)?\s*(?:-|–|—|to)\s*\d", re.IGNORECASE)
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_EMPHASIS = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1|(?<![\w*])\*(?=\S)([^*]+?)(?<=\S)\*(?![\w*])")
_INLINE_CODE = re.compile(r"`[^`]+`")
_SPLIT = re.compile(
    r"(?<![Ee]\.g\.)(?<![Ii]\.e\.)(?<!etc\.)(?<!vs\.)(?<=[.!?])[\"')\]]*\s+(?=[\"'`(*\[]?[A-Z0-9])"
)
_END = re.compile(r"[.!?][\"')\]`*]*$")
_CLIPPED = re.compile(r"(…|\.\.\.)[\"')\]]*$")
_CODE_WORD = re.compile(
    r"^(?:import|from \S+ import|def|class|return|const|let|var|function|SELECT|\$|>>>)\s"
)
_CODE_CHARS = re.compile(r"[{}=;<>]")
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
_TOKEN = re.compile(r"\S+")
_IDENTIFIER = re.compile(
    r"\w_\w|[a-z][A-Z]|[A-Za-z]\d|\d[A-Za-z]|\w/\w|\w\.\w|\(\)"  # snake_case, camelCase, v2, a/b, a.b, f()
)
# Where a new clause may start: ", and I ...", ", but we ...", ", so the ...", "; ", " - ".
_CLAUSE_BREAK = re.compile(
    r"[;:]\s+|\s+[-–—]\s+|,\s+(?=(?:and|but|so|because|since|while|although|though|whereas)\s+"
    r"(?:I|I'm|I've|I'd|I'll|we|we're|we've|it|it's|they|this|that|the|my|our|[A-Z]\w*)\b)"
    r"|,\s+(?=(?:I|I'm|I've|I'd|I'll|we|we're|we've|we'll)\s)"  # "..., I'd like to know ..."
    # A clause that only adds to the one before ("..., which has reached 165", "..., considering ...");
    # never one that conditions it ("if", "unless"), which stays with its sentence.
    r"|,\s+(?=(?:which|who|whose|where|considering|especially|including|particularly|given|\w+ing)\s)"
)
_CONJUNCTION = re.compile(r"^(?:and|but|so|also|then)\s+", re.IGNORECASE)
_SUBJECTS = frozenset(
    "i i'm i've i'd i'll we we're we've we'd we'll it it's its they they're their this that these those "
    "the my our your you there there's he she".split()
)
_SUBORDINATE = frozenset(
    "given if when since although though because as while after before once unless until considering "
    "which who whose where whereas especially including particularly like such".split()
)
_WORK_DONE = re.compile(
    r"^(?:done|fixed|(?:I|we)(?:['’]ve| have)? (?:added|updated|fixed|changed|wrote|written|removed|created"
    r"|moved|renamed|implemented|refactored|replaced|merged|deployed|ran|run|tested|committed))\b",
    re.IGNORECASE,
)
_ACRONYMS = frozenset(
    "api apis http https url urls uri json xml yaml sql nosql ui ux id ids css html cpu gpu ram ok rest crud "
    "ci cd ssl tls io db orm sdk cli ide os faq mvp kpi qa ai ml llm pdf csv utc i".split()
)
_OPENERS = frozenset(
    "instead for to in if when before after once finally additionally also then next first second third "
    "lastly optionally alternatively similarly otherwise here".split()
)
_ADVICE = re.compile(
    r"\b(?:can|will|should|may|might) help\b|\byou (?:should|can|could|might|may|will need|need|must|want)\b|\bmake sure\b|\bit(?:'s| is) "
    r"(?:important|crucial|essential|recommended|a good idea|best)\b",
    re.IGNORECASE,
)
BOILERPLATE = re.compile(
    r"^(?:certainly|absolutely|sure|of course|great|excellent|perfect|awesome|wonderful|fantastic|good news"
    r"|(?:that's|it's|what) a (?:great|good|excellent|fantastic)|glad|happy to|i'?d be (?:happy|glad)|i hope"
    r"|hope this|thanks|thank you|you're welcome|no problem|here(?:'s| is| are)\b|below (?:is|are)"
    r"|the following|let'?s (?:break|dive|walk|go through)|let me (?:explain|show|break|walk)"
    r"|to (?:summarize|sum up|recap)|in (?:summary|conclusion|short)|overall|by following|following these"
    r"|with these|this (?:approach|setup|way) (?:will|should|ensures|helps)|it sounds like|remember to"
    r"|don'?t forget)\b"
    r"|let me know|feel free|hope (?:this|that|it) helps|don'?t hesitate|any (?:other |further |more )?"
    r"questions|good luck|best of luck|happy coding|you should be able to|should help you|further assistance"
    r"|anything else|can you help me(?: with (?:this|that|it))?\W*$",
    re.IGNORECASE,
)


def sentences(text: str, *, prompt: bool = False) -> list[str]:
    """The whole sentences of a message, in order (module docstring); `prompt` when a person typed it,
    whose paragraphs may end without a stop."""
    if len(text) > CACHED_CHARS:
        return list(_sentences.__wrapped__(text, prompt))
    return list(_sentences(text, prompt))


# A project's recent sessions are read again for each of its new sessions: the sentences of the last
# few thousand messages are kept (only messages up to CACHED_CHARS: at most ~80 MB held).
CACHED_CHARS = 20_000


@functools.lru_cache(maxsize=4096)
def _sentences(text: str, prompt: bool) -> tuple[str, ...]:
    out: list[str] = []
    for block, labelled in _blocks(text):
        parts = [p.strip() for p in _SPLIT.split(_plain(block)) if p.strip()]
        for n, part in enumerate(parts):
            last = n == len(parts) - 1
            if _whole(part, open_end=prompt and last and not labelled):
                out.append(part)
    return tuple(out)


def _blocks(text: str) -> list[tuple[str, bool]]:
    """The message's blocks (a list item with its continuation lines, or a line), each with whether a
    label was taken off its start; code, headings, tables and rules left out."""
    blocks: list[list[str]] = []
    labelled: list[bool] = []
    fenced = False
    in_item = False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced, in_item = not fenced, False
            continue
        if fenced or _HEADING.match(line) or _RULE.match(line) or _TABLE.match(line):
            in_item = False
            continue
        if not line.strip():
            in_item = False
            continue
        line = _QUOTE.sub("", line)
        item = _ITEM.match(line)
        if in_item and not item and line.startswith((" ", "\t")):
            blocks[-1].append(line.strip())
            continue
        body = line[item.end() :] if item else line.strip()
        label = _LABEL.match(body)
        if label and len(label.group(0).split()) <= 6:
            body = body[label.end() :]
        blocks.append([body])
        labelled.append(bool(label))
        in_item = bool(item)
    return [(" ".join(b), was) for b, was in zip(blocks, labelled, strict=True)]


def _plain(block: str) -> str:
    block = _LINK.sub(r"\1", block)
    for _ in range(2):  # bold inside italics
        block = _EMPHASIS.sub(lambda m: m.group(2) or m.group(3) or "", block)
    return " ".join(block.split())


def _whole(sentence: str, *, open_end: bool) -> bool:
    words = _WORD.findall(_INLINE_CODE.sub("x", sentence))
    if len(words) < MIN_WORDS or _CLIPPED.search(sentence) or sentence.endswith(":"):
        return False
    if not (_END.search(sentence) or open_end):
        return False
    if _TIME_RANGE.match(sentence) or _CODE_WORD.match(sentence):
        return False
    prose = _INLINE_CODE.sub("", sentence)
    # An odd quote mark: a piece of a quoted passage, not a sentence of its own.
    return len(_CODE_CHARS.findall(prose)) < 2 and "**" not in prose and prose.count('"') % 2 == 0


def clauses(sentence: str) -> list[str]:
    """The clauses of a long sentence that stand as sentences of their own, each with its stop: split
    where a new clause starts (", and I ...", ", so we ...", "; ", " - "), kept when it opens with a
    subject ("I", "we", "the pool", a name) rather than a subordinating word ("Given that", "which",
    "considering"), and has at least MIN_WORDS words. "I'm trying to add auth to my app, and I've
    switched to Argon2 v0.3.0 for hashing, considering ..." gives "I'm trying to add auth to my app."
    and "I've switched to Argon2 v0.3.0 for hashing." Nothing is reworded but the first letter and the
    stop."""
    out = []
    for part in _CLAUSE_BREAK.split(sentence):
        part = _CONJUNCTION.sub("", part.strip(" ,;-–—")).strip()
        words = _WORD.findall(part)
        if len(words) < MIN_WORDS or (words[0].casefold() not in _SUBJECTS and not words[0][:1].isupper()):
            continue
        first = words[0].casefold()
        if first in _SUBORDINATE or first.endswith("ing") or _CLIPPED.search(part) or part.endswith(":"):
            continue
        if part.count('"') % 2:  # cut inside a quotation
            continue
        part = sentence_case(part)
        out.append(part if _END.search(part) else part.rstrip(" ,;") + ".")
    return out


def is_redacted(sentence: str) -> bool:
    return MARKER.search(sentence) is not None


def is_boilerplate(sentence: str) -> bool:
    return BOILERPLATE.search(sentence.strip(" \"'*_")) is not None


def common_words(replies: Iterable[str]) -> frozenset[str]:
    """The words (lower-cased) in more than half of `replies`: the assistant's everyday vocabulary in
    these sessions; none when there are fewer than COMMON_REPLIES replies."""
    seen: Counter[str] = Counter()
    count = 0
    for reply in replies:
        count += 1
        seen.update({w.casefold() for w in _WORD.findall(reply)})
    if count < COMMON_REPLIES:
        return frozenset()
    return frozenset(w for w, n in seen.items() if n * 2 > count)


def is_specific(sentence: str, common: frozenset[str] = frozenset()) -> bool:
    """Whether the sentence names something of its own project (module docstring): a number, inline
    code, an identifier or path, a name not in `common`, or work reported done."""
    if _WORK_DONE.match(sentence) or _INLINE_CODE.search(sentence) or re.search(r"\d", sentence):
        return True
    tokens = _TOKEN.findall(sentence)
    for n, token in enumerate(tokens):
        word = token.strip(".,;:!?\"'()[]*")
        if _IDENTIFIER.search(word):
            return True
        starts = n == 0 or tokens[n - 1].endswith((":", ".", "!", "?", '"', "("))
        key = word.casefold()
        if word[:1].isupper() and not starts and key not in _ACRONYMS and key not in common:
            return True
    return False


def is_advice(sentence: str) -> bool:
    """Whether the assistant tells the user what to do rather than states what is: a sentence that does
    not open with its subject ("Use X instead of Y.", "Instead of X, use Y.", "Creating an index on Y
    can help.") or that says "you should", "make sure", "can help"; not what the project decided."""
    if _ADVICE.search(sentence):
        return True
    words = [w.casefold() for w in _WORD.findall(sentence)]
    if words and words[0] in _OPENERS and ", " in sentence:  # "Instead of X, we ..."
        words = [w.casefold() for w in _WORD.findall(sentence.split(", ", 1)[1])]
    return not words or words[0] not in _SUBJECTS


def content_words(sentence: str) -> frozenset[str]:
    """The sentence's words less stopwords, stemmed ("selecting" and "select" are one word)."""
    words = [w for w in _WORD.findall(sentence) if w.casefold() not in STOPWORDS]
    return frozenset(terms(" ".join(words)))


def near_duplicate(words: frozenset[str], others: Iterable[frozenset[str]]) -> bool:
    """Whether a sentence of these content words says again what one of `others` said: DUPLICATE_OVERLAP
    of the words of both (Jaccard), or of the shorter's when it has at least MIN_WORDS (one said again
    inside a longer one)."""
    for other in others:
        shared = len(words & other)
        if not shared:
            continue
        if shared / len(words | other) >= DUPLICATE_OVERLAP:
            return True
        shorter = min(len(words), len(other))
        if shorter >= MIN_WORDS and shared / shorter >= DUPLICATE_OVERLAP:
            return True
    return False
