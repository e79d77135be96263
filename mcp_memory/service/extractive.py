"""The offline summary writer: what a later question could need, in as few tokens as it takes.

A running summary has a fixed budget and a conversation far longer than it, so the writer treats the
budget as a knapsack of informative words. Each sentence (of the previous summary and of the messages
being folded in) is a candidate that covers its content words; a word is worth more when it is a
name, a number or a date, and less when it is everywhere in the conversation ("great", "love").
Sentences are chosen greedily by the worth of the words they add that the summary does not hold yet,
per token they cost, so repeats add nothing and short dense facts beat long chatty ones. A later turn
builds first on what was settled: the sentences that set a limit, make a decision, leave a task open or
name a day (facts.py) go first, each in its shortest reading that still says it, so a tight budget
keeps one line per fact rather than two long ones; the rest of the budget goes as before.

Before choosing, each sentence is compressed (interjections and filler words dropped) and its relative
dates are pinned to the calendar ("yesterday" said on 8 May 2023 becomes "yesterday (7 May 2023)"), so
the summary stays true after the words that anchored it have been folded away. Each sentence is written
as a note (notes.py): without the speaker's own "I", articles and possessives, and in as short a reading
as still holds its facts ("Vegetarian.", "Budget is $10,000."). The result keeps the original order, one
line per run of one speaker's messages; a line opens with the speaker's name ("Caroline: ...",
"Assistant: ...") unless the user said it, so no word the writer adds ("The user said") makes a summary
match a query it cannot answer. Its cost is counted as written, labels included.
"""

from __future__ import annotations

import functools
import heapq
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import anyio

from mcp_memory.llm.tokens import ELLIPSIS, CountTokens, fit_tokens, sentences
from mcp_memory.models import Message
from mcp_memory.search.terms import STOPWORDS, date_words
from mcp_memory.search.when import time_range
from mcp_memory.service.facts import COMMITMENTS, MONTHS, WEEKDAYS, FactKind, fact_kinds, names
from mcp_memory.service.notes import LABEL, is_fragment, last_question, leads, readings, speaker_of
from mcp_memory.service.verbatim import sentence_case

_SPEAKER = re.compile(r"^(user|assistant|tool|system):\s+(.*)$", re.DOTALL)
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?")
_NUMBER = re.compile(r"\d")
_DIGITS = re.compile(r"\d+")
# Said to keep a conversation going, not to inform: never worth a token of the summary by themselves.
_CHATTER = frozenset(
    """
wow oh ooh aww hey hi hello yeah yes yep yup nope ok okay well haha hahaha lol omg thanks thank
cool nice great awesome amazing sure totally absolutely definitely really indeed hmm ah um uh
glad happy sounds sound love lovely good wonderful fantastic incredible super cute sweet
feel feels feeling felt think thought know guess mean bet hope wish appreciate agree
noted bye goodbye welcome sorry please congrats congratulations cheers
perfect fine works right exactly interesting fun excited exciting beautiful proud inspiring agreed
helpful
""".split()
)
# Leading words that carry no information ("Wow, ", "Hey Mel! ", "Yeah, so "); "Thanks for ..." stays
# whole, as the chatter it is, rather than become "For helping out".
_OPENER = re.compile(
    r"^(?:(?:also|and|oh|wow|hey|hi|hello|yeah|yes|yep|well|so|alright|all right|haha|hahaha|lol|omg|aww|ah|hmm|um|uh|okay|ok"
    r"|thanks(?: a lot| so much)?(?! for\b)|thank you(?: so much| very much)?(?! for\b)|sure|totally|absolutely|definitely|indeed|awesome|great|cool|nice"
    r"|(?:good )?(?:morning|afternoon|evening)(?=[,!.…])"  # a greeting, not "Morning run"
    r"|(?:one (?:more |last )?thing(?: though)?|by the way|btw|anyway|that said|on second thought"
    r"|after (?:thinking|some thought)(?: about it)?(?: more)?|to be honest)(?=[,:]))"  # a turn of talk
    r"(?-i:\s+[A-Z][a-z]+)?[\s,!.…-]+)+",  # "Hey Mel!": a capitalised name, whatever the flag
    re.IGNORECASE,
)
_FILLER = re.compile(
    r"\s*\b(?:really|actually|just|totally|literally|honestly|basically|definitely|so much"
    r"|you know|i mean|kind of|sort of)\b,?",
    re.IGNORECASE,
)
# Relative times worth pinning, past ones only: "on Friday" may be last Friday or the next one, and
# time_range resolves to the past. It does the work; this only spares it the other sentences.
_RELATIVE = re.compile(
    r"\b(?:yesterday|today|tonight|ago|(?:last|this) (?:week|weekend|month|year|night|morning|afternoon"
    r"|evening|monday|tuesday|wednesday|thursday|friday|saturday|sunday))\b",
    re.IGNORECASE,
)
# Decisions, plans, preferences and commitments: what a later turn most often builds on.
_COMMITMENT = re.compile(
    r"\b(?:decid\w*|agree[ds]?|plan\w*|deadline\w*|budget\w*|prefer\w*|need\w*|going to|confirm\w*"
    r"|chose|choose|chosen|commit\w*|schedul\w*|due|promis\w*|always|never|favou?rite|allerg\w*"
    r"|vegetarian|vegan|hates?|dislikes?|goal\w*|remind\w*)\b",
    re.IGNORECASE,
)
_COMMITMENT_FACTOR = 1.5
# Go first, each as the shortest reading that states it: a limit, a decision, an open task, a date.
# Names and numbers need no round of their own: their words are worth the most (_word_worth). With
# them in the first round too, the chat benchmark loses answers (docs/benchmarks.md).
_FIRST: frozenset[FactKind] = COMMITMENTS | {"date"}
_COMMITMENT_WEIGHT = 4.0  # the word that says it: "vegetarian", "budget", "prefer", "allergic"
_COMMITMENT_WORD = re.compile(
    r"decid\w*|budget\w*|prefer\w*|deadline\w*|allerg\w*|vegetarian|vegan|favou?rite|hates?|dislikes?"
    r"|goal\w*|chose|choose|chosen|promis\w*"
)
# A day of the month beside its month ("March 14", "14 March"): part of a date, weighed as one.
_DAY = re.compile(
    r"\b(?:(\d{1,2})(?:st|nd|rd|th)? (?:of )?(?:%s)|(?:%s) (\d{1,2})(?:st|nd|rd|th)?)\b"
    % (("|".join(MONTHS),) * 2),
    re.IGNORECASE,
)
# A date _pin_dates added, in this fold or an earlier one: "(7 May 2023)", "(week of 7 May 2023)".
_PINNED = re.compile(r" \((?:week of )?(?:\d{1,2} )?(?:[A-Z][a-z]+ )?\d{4}\)")
_MAX_SENTENCE_WORDS = 60
_NAME_WEIGHT = 9.0  # a capitalised word not starting the sentence: a person, place, title
_NUMBER_WEIGHT = 9.0  # amounts, ages, counts, years
_DATE_WEIGHT = 2.0  # month and weekday names
_SUMMARY_BONUS = 1.15  # a sentence kept before: already judged worth keeping once
_REFILL_TRIES = 40  # sentences tried against the exact count once the estimate says the budget is spent
_MIN_GAIN_PER_TOKEN = 0.2  # below this a sentence adds (almost) nothing new: stop
_QUESTION_FACTOR = 0.3  # the assistant's questions are mostly clarifications it answers itself
_SHORT_FACTOR = 0.3  # "Happy to help.": two words and no name or number say little


@dataclass
class _Candidate:
    order: int  # position in the source: output keeps the original order
    sentence: int  # the sentence it reads: a sentence's readings (notes.leads) replace one another
    speaker: str | None  # the name its line opens with ("Caroline", "Assistant"); None for the user
    note: str  # the sentence as the summary writes it (notes.py), or one of its shorter readings
    words: frozenset[str]
    cost: int
    bonus: float
    names: frozenset[str] = field(default_factory=frozenset)
    pinned: frozenset[str] = field(default_factory=frozenset)  # words of the dates _pin_dates added
    answer: bool = False  # a short answer to a question ("Vacation rentals."): its words are a choice
    facts: frozenset[FactKind] = field(default_factory=frozenset)  # the _FIRST kinds it states (facts.py)


class ExtractiveSummarizer:
    """Offline and deterministic: the sentences that add the most unseen information per token."""

    name = "extractive"

    def __init__(self, count_tokens: CountTokens) -> None:
        self._count = count_tokens

    async def summarize(self, prev_summary: str, messages: Sequence[Message], max_tokens: int) -> str:
        # Pure CPU, seconds for a pasted file of a million characters: off the event loop.
        return await anyio.to_thread.run_sync(self.summarize_now, prev_summary, messages, max_tokens)

    def summarize_now(self, prev_summary: str, messages: Sequence[Message], max_tokens: int) -> str:
        """The synchronous core (pure CPU, no I/O), also used as the LLM writer's fallback."""
        if max_tokens <= 0:
            return ""
        candidates = self._candidates(prev_summary, messages)
        if not candidates:
            return ""
        worth = _word_worth(candidates)
        chosen = self._choose(candidates, worth, max_tokens)
        text = _render(chosen)
        # Counts of parts need not add up exactly (BPE merges across joins): drop the latest-chosen
        # sentences until the rendered text itself fits.
        while chosen and self._count(text) > max_tokens:
            chosen.pop()
            text = _render(chosen)
        if chosen:
            chosen, text = self._refill(chosen, candidates, worth, max_tokens)
        if not chosen:
            # Nothing fits whole: the most informative sentence, cut to the budget.
            best = max(candidates, key=lambda c: sum(worth[w] for w in c.words))
            text = fit_tokens(best.note, max_tokens, self._count)
        return text

    def _choose(
        self, candidates: list[_Candidate], worth: dict[str, float], max_tokens: int
    ) -> list[_Candidate]:
        """Lazy greedy weighted coverage: a sentence's gain only falls as the summary grows, so a
        stale gain that still tops the heap is rechecked instead of rescoring every sentence. A longer
        reading of a sentence already chosen replaces it, for the tokens it adds."""
        covered: set[str] = set()
        held: dict[int, _Candidate] = {}  # sentence -> the reading chosen
        used = 0

        def gain(c: _Candidate) -> float:
            return _gain(c, worth, covered, _extra_cost(c, held))

        # Facts first (_FIRST), each sentence that states one as its shortest reading that does; then
        # every reading, longer ones too, for what is left. The summary grows with the facts that left
        # the window, not with the talk around them.
        first: dict[int, _Candidate] = {}
        for c in candidates:
            if c.facts and (c.sentence not in first or c.cost < first[c.sentence].cost):
                first[c.sentence] = c
        for pool in (list(first.values()), candidates):
            heap = [(-gain(c), c.order, c) for c in pool]
            heapq.heapify(heap)
            while heap:
                _, order, candidate = heapq.heappop(heap)
                fresh = gain(candidate)
                if heap and fresh < -heap[0][0]:  # another may be worth more now: look again later
                    heapq.heappush(heap, (-fresh, order, candidate))
                    continue
                if fresh < _MIN_GAIN_PER_TOKEN:
                    break
                extra = _extra_cost(candidate, held)
                if used + extra > max_tokens:
                    continue
                held[candidate.sentence] = candidate
                covered.update(candidate.words)
                used += extra
        return list(held.values())  # in the order first chosen

    def _refill(
        self, chosen: list[_Candidate], candidates: list[_Candidate], worth: dict[str, float], max_tokens: int
    ) -> tuple[list[_Candidate], str]:
        """Costs were estimated per sentence, and the joined text usually counts fewer tokens: spend
        what is left on the next most informative readings that still fit, counted exactly."""
        covered = set().union(*(c.words for c in chosen))
        held = {c.sentence: c for c in chosen}

        def gain(c: _Candidate) -> float:
            return _gain(c, worth, covered, _extra_cost(c, held))

        text = _render(chosen)
        rest = sorted((c for c in candidates if gain(c) >= _MIN_GAIN_PER_TOKEN), key=gain, reverse=True)
        for candidate in rest[:_REFILL_TRIES]:
            if gain(candidate) < _MIN_GAIN_PER_TOKEN:
                continue
            trial = _render([*(held | {candidate.sentence: candidate}).values()])
            if self._count(trial) <= max_tokens:
                held[candidate.sentence] = candidate
                covered.update(candidate.words)
                text = trial
        return list(held.values()), text

    def _candidates(self, prev_summary: str, messages: Sequence[Message]) -> list[_Candidate]:
        labels = _speaker_labels(prev_summary, messages)
        found = _Collector(self._count)
        for line in prev_summary.splitlines():
            if match := _SPEAKER.match(line.strip()):  # a summary written before notes: "user: ..."
                found.add(match.group(2), match.group(1), None, _SUMMARY_BONUS)
            elif opens := LABEL.match(line):  # notes already, kept as written under the same name
                found.add(line[opens.end() :], None, None, _SUMMARY_BONUS, speaker=opens.group(1))
            else:
                found.add(line, None, None, _SUMMARY_BONUS)
        previous: tuple[str | None, list[str]] | None = None
        for message in messages:
            bonus = 0.4 if message.role == "tool" else 1.0  # tool output is long; the reply restates it
            content, label = message.content, None
            if (match := LABEL.match(content)) and match.group(1) in labels:
                content, label = content[match.end() :], match.group(1)
            speaker = label or message.role
            asked = last_question(previous[1]) if previous and previous[0] != speaker else None
            found.add(content, message.role, message.created_at, bonus, label=label, asked=asked)
            previous = (speaker, sentences(content))
        _share_repeats(found.candidates)
        return found.candidates


@dataclass
class _Collector:
    """The candidate sentences of a summary and of the messages folded in, in their order."""

    count: CountTokens
    candidates: list[_Candidate] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)
    sentence: int = 0

    def add(
        self,
        text: str,
        role: str | None,
        said_at: datetime | None,
        bonus: float,
        *,
        label: str | None = None,
        asked: str | None = None,
        speaker: str | None = None,
    ) -> None:
        """`role`: whose message (None for a summary's own line, kept as written)."""
        if role is not None:
            speaker = speaker_of(role, label)
        opening = self.count(f"{speaker}: ") if speaker else 0
        for i, sentence in enumerate(sentences(text)):
            opened = _OPENER.sub("", sentence).strip()
            compact = _compress(sentence, opened)
            pinned: frozenset[str] = frozenset()
            if said_at is not None:
                compact, when = _pin_dates(compact, said_at)
                pinned = _content_words(when)
            compact = _clip_words(compact, _MAX_SENTENCE_WORDS)
            said = leads(compact) if role is None else readings(compact)
            if said[-1].casefold() in self.seen:
                continue
            self.seen.add(said[-1].casefold())
            # A greeting or an interjection and nothing else: only ever the summary of nothing better.
            factor = bonus if opened.strip(" ,!.…-") else 0.0
            if role == "assistant" and compact.rstrip().endswith("?"):
                factor *= _QUESTION_FACTOR
            answer = i == 0 and asked is not None and is_fragment(compact)  # says what was chosen
            stated = fact_kinds(_PINNED.sub("", compact), among=_FIRST)  # a pinned date is no reason
            if _COMMITMENT.search(compact) or stated & COMMITMENTS or answer:
                factor *= _COMMITMENT_FACTOR
            names_said = names(compact)
            whole = _content_words(said[-1]) - pinned  # a pinned date rides along: no reason to choose it
            if len(whole) < 3 and not any(_NUMBER.search(w) for w in whole) and not names_said and not answer:
                factor *= _SHORT_FACTOR
            sentence_id = self.sentence
            self.sentence += 1
            for lead in said:
                words = _content_words(lead) - pinned
                if not words:
                    continue
                # The speaker's name opens the line once but is charged to each of its sentences: the
                # estimate errs long, and _refill spends what the exact count leaves.
                cost = self.count(lead) + 1 + opening  # + the separator
                facts = fact_kinds(_PINNED.sub("", lead), among=stated) if stated else stated
                self.candidates.append(
                    _Candidate(
                        len(self.candidates),
                        sentence_id,
                        speaker,
                        lead,
                        words,
                        cost,
                        factor,
                        names_said,
                        pinned,
                        answer,
                        facts,
                    )
                )


def _share_repeats(candidates: list[_Candidate]) -> None:
    """A sentence repeated with only its numbers changed (a log's routine lines, a table's rows) says one
    thing however often it is there: its first time counts in full, as the example, and each repeat
    shares one sentence's worth; so the line that breaks the pattern (the error in a pasted log) is
    chosen before the hundredth routine line. Conversation sentences rarely repeat."""
    shapes = Counter(_shape(c.note) for c in candidates)
    seen: set[str] = set()
    for candidate in candidates:
        shape = _shape(candidate.note)
        if shape in seen:
            candidate.bonus /= shapes[shape]
        seen.add(shape)


def _shape(sentence: str) -> str:
    return _DIGITS.sub("#", sentence.casefold())


def _speaker_labels(prev_summary: str, messages: Sequence[Message]) -> frozenset[str]:
    """The "Name: " labels a conversation opens its messages with: a label opening two messages or
    more, or one that opens a line of the summary ("Caroline: ..."). One "Noted: ..." is not a speaker."""
    found: Counter[str] = Counter()
    for message in messages:
        if match := LABEL.match(message.content):
            found[match.group(1)] += 1
    named = {opens.group(1) for line in prev_summary.splitlines() if (opens := LABEL.match(line))}
    return frozenset(label for label, times in found.items() if times >= 2 or label in named)


def _extra_cost(candidate: _Candidate, held: dict[int, _Candidate]) -> int:
    """The tokens choosing it adds: its cost, less that of the reading of its sentence it replaces; 0
    when it is no longer than that one (a shorter reading never replaces a longer)."""
    before = held.get(candidate.sentence)
    return candidate.cost if before is None else max(0, candidate.cost - before.cost)


def _gain(candidate: _Candidate, worth: dict[str, float], covered: set[str], cost: int) -> float:
    """The worth of the words it adds that the summary does not hold yet, per token it adds."""
    if cost <= 0:
        return 0.0
    return sum(worth[w] for w in candidate.words if w not in covered) * candidate.bonus / cost


def _word_worth(candidates: list[_Candidate]) -> dict[str, float]:
    """What covering each word is worth: rarer in this text is worth more; names, numbers, dates and
    the words of decisions and preferences ("vegetarian", "budget") more still; chatter nothing."""
    frequency: Counter[str] = Counter()
    words_of: dict[int, frozenset[str]] = {}
    for c in candidates:  # counted once a sentence: its shorter readings are the same words again
        if not c.note.endswith("?"):  # a question's words are its answer's: no sign they are common
            words_of[c.sentence] = words_of.get(c.sentence, frozenset()) | c.words
    for words in words_of.values():
        frequency.update(words)
    names = set().union(*(c.names for c in candidates))
    pinned = set().union(*(c.pinned for c in candidates))
    chosen = {w for c in candidates if c.answer for w in c.words}
    days = {day for c in candidates for found in _DAY.finditer(c.note) for day in found.groups() if day}
    total = max(1, len(words_of))
    # The speakers' names open their lines already: said again ("Agreed, Mel.") they add nothing.
    speakers = {w for c in candidates if c.speaker for w in _content_words(c.speaker)}
    worth = {}
    for word in {w for c in candidates for w in c.words}:
        count = frequency[word]  # 0: a word of questions only
        if word in _CHATTER or any(s.startswith(word) for s in speakers if len(word) >= 3):
            worth[word] = 0.0
            continue
        weight = 1.0
        if word in MONTHS or word in WEEKDAYS or word in pinned or word in days:  # a date's day, year
            weight = _DATE_WEIGHT
        elif _NUMBER.search(word):
            # "$10,000" is the words "10" and "000": the thousands are no second fact.
            weight = _NUMBER_WEIGHT if word.strip("0") else 1.0
        elif word in names:
            weight = _NAME_WEIGHT
        elif _COMMITMENT_WORD.fullmatch(word) or word in chosen:
            weight = _COMMITMENT_WEIGHT
        worth[word] = weight * math.log(1.0 + total / max(count, 1))
    return worth


def _content_words(text: str) -> frozenset[str]:
    words = set()
    for word in _WORD.findall(text.casefold().replace("’", "'")):
        base = word[:-2] if word.endswith("'s") else word
        if base not in STOPWORDS and word not in STOPWORDS:
            words.add(base)
    return frozenset(words)


def _compress(sentence: str, opened: str) -> str:
    """The sentence without its openers (`opened`: already cut) and filler words, still readable."""
    text = _FILLER.sub("", opened).strip()
    if not text:
        return sentence
    return sentence_case(text, was_capital=sentence[:1].isupper())


# A thread is summarized again and again, and each time its messages' sentences are read again: the
# dates already pinned are remembered rather than parsed anew (dateparser takes about a millisecond).
@functools.lru_cache(maxsize=4096)
def _pin_dates(sentence: str, said_at: datetime) -> tuple[str, str]:
    """A relative time ("yesterday", "last week") followed by the date it meant when it was said; and
    that date ("" when nothing was pinned)."""
    if not _RELATIVE.search(sentence):
        return sentence, ""
    found = time_range(sentence, said_at)
    if found is None or found.since is None or found.until is None or found.phrase not in sentence:
        return sentence, ""
    span = found.until - found.since
    if span <= timedelta(days=1):
        when = date_words(found.since)
    elif span <= timedelta(days=7):
        when = f"week of {date_words(found.since)}"
    elif span <= timedelta(days=31):
        when = found.since.strftime("%B %Y")
    elif span <= timedelta(days=366):
        when = found.since.strftime("%Y")
    else:
        return sentence, ""
    end = sentence.index(found.phrase) + len(found.phrase)
    return f"{sentence[:end]} ({when}){sentence[end:]}", when


def _clip_words(text: str, words: int) -> str:
    parts = text.split()
    return text if len(parts) <= words else " ".join(parts[:words]) + ELLIPSIS


def _render(chosen: list[_Candidate]) -> str:
    """In the original order, one line per run of one speaker's sentences, opened by the speaker's name
    when it has one: a name written once a line leaves its tokens to facts."""
    lines: list[str] = []
    current: tuple[str | None] | None = None  # the speaker of the last line; None before the first
    for candidate in sorted(chosen, key=lambda c: c.order):
        if (candidate.speaker,) == current:
            lines[-1] += " " + candidate.note
            continue
        current = (candidate.speaker,)
        lines.append(f"{candidate.speaker}: {candidate.note}" if candidate.speaker else candidate.note)
    return "\n".join(lines)
