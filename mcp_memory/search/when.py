"""Time expressions in a query ("yesterday", "last week", "in March", "since Monday") as a UTC range.

`dateparser` finds and resolves the expressions; this module only decides which of its matches to
trust and how wide each one is. Pure: no I/O, and `now` comes from the caller (the real now or a
search's as_of), so the same query always resolves the same way against the same `now`.

The rules where language is loose, chosen once here:
- Days are UTC days: the server knows no user's time zone.
- A named period is the whole calendar period: "yesterday" and "on Monday" are that day, "last week"
  the previous Monday-Sunday week, "this week" the current one (to its Sunday), "last month" and
  "in March" the calendar month ("March" alone is this year's once it has begun, else last year's,
  so "before June" in May means before June of last year). A weekday is the latest one before today
  ("on Monday" said on a Monday is a week ago); "3 weeks ago" is that calendar week.
- "since X" / "from X" start at X's start, "after X" at X's end; "before X" ends before X starts,
  "until X" / "through X" at X's end; "between X and Y" / "from X to Y" run from X's start to Y's end.
- "last 3 days" / "past two weeks" run from the start of the day that many days or weeks ago, open.
- Bounds are inclusive, as search's since/until are: a range ends one microsecond before the next
  period starts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from dateparser.date import DateDataParser
from dateparser.search import search_dates


@dataclass(frozen=True)
class TimeRange:
    since: datetime | None  # aware UTC
    until: datetime | None  # aware UTC
    phrase: str  # the words of the query that named the time, e.g. "last week"


_WEEKDAYS = frozenset({"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"})
_MONTHS = frozenset(
    {"january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
     "november", "december"}
)  # fmt: skip
_MONTH_ABBREVIATIONS = frozenset(
    {"jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec"}
)
# The guard against dateparser's eagerness: it reads "we" as Wednesday, "May I" and "the march" as
# months, "3 years old" as three years ago and "now" as a moment. A match counts only when it holds
# a full weekday name, a month with a day number or a preposition, a date in digits, or one of these
# few words that name time only. The lists stay small, words rather than patterns, so dateparser keeps
# the grammar and this module only vetoes.
_DEICTIC = frozenset({"yesterday", "today", "tonight", "ago"})
_UNITS = frozenset(
    {"day", "days", "week", "weeks", "weekend", "month", "months", "year", "years",
     "morning", "afternoon", "evening", "night"}
)  # fmt: skip
_QUALIFIERS = frozenset({"last", "this", "past", "previous"})  # "last week", "this morning"
_AMBIGUOUS_MONTHS = frozenset({"may", "march"})  # also verbs: count only with a day or a preposition
_MONTH_PREPOSITIONS = frozenset({"in", "since", "before", "after", "until", "till", "during", "from", "of"})
_NUMERIC_DATE = re.compile(r"\b\d{4}-\d{1,2}-\d{1,2}\b|\b\d{1,2}/\d{1,2}(?:/\d{2,4})?\b")
_YEAR = re.compile(r"^(19|20)\d\d$")
# Cheap pre-check: without one of these, a query has no time expression and dateparser is not called.
_CANDIDATE = re.compile(
    r"\b(?:"
    + "|".join(sorted(_WEEKDAYS | _MONTHS | _MONTH_ABBREVIATIONS | _DEICTIC | _QUALIFIERS))
    + r")\b|\d",
    re.IGNORECASE,
)
_WORD = re.compile(r"[a-z]+|\d+")

_SINCE_START, _SINCE_END = frozenset({"since", "from"}), frozenset({"after"})
_UNTIL_START, _UNTIL_END = frozenset({"before"}), frozenset({"until", "till", "through"})
_ROLLING = frozenset({"last", "past", "previous"})  # "last 3 days": dateparser leaves the word outside
_RANGE_OPENERS, _RANGE_JOINERS = frozenset({"between", "from"}), frozenset({"and", "to", "until", "till"})
_OPERATORS = _SINCE_START | _SINCE_END | _UNTIL_START | _UNTIL_END | _RANGE_OPENERS
_POSSESSIVE = re.compile(r"(?<=[a-z])['’]s\b", re.IGNORECASE)
_TICK = timedelta(microseconds=1)
_TIME_WORDS = _WEEKDAYS | _MONTHS | _MONTH_ABBREVIATIONS | _DEICTIC | _UNITS | _QUALIFIERS


def time_range(query: str, now: datetime) -> TimeRange | None:
    """The first time expression in `query` resolved against `now` (naive means UTC), or None."""
    if not _CANDIDATE.search(query):
        return None
    now = now.astimezone(UTC) if now.tzinfo else now.replace(tzinfo=UTC)
    settings = {
        "RELATIVE_BASE": now.replace(tzinfo=None),
        "PREFER_DATES_FROM": "past",
        "RETURN_AS_TIMEZONE_AWARE": True,
        "TIMEZONE": "UTC",
        "TO_TIMEZONE": "UTC",
    }
    # dateparser misses "yesterday's" and "Monday's": blank the possessive, same length, same offsets.
    text = _POSSESSIVE.sub("  ", query)
    try:
        found = search_dates(text, languages=["en"], settings=settings) or []
    except (ValueError, OverflowError, ArithmeticError):  # absurd numbers ("10^12 days ago")
        return None
    parser = DateDataParser(languages=["en"], settings=settings)
    matches: list[_Match] = []
    cursor = 0
    for part, _ in found:
        start = text.find(part, cursor)
        if start < 0:
            continue
        cursor = start + len(part)
        match = _resolve(text, start, part, parser)
        if match is not None:
            matches.append(match)
    if not matches:
        return None
    since, until, start, end = _bounded(text, matches)
    return TimeRange(since, until, query[start:end])


@dataclass(frozen=True)
class _Match:
    start: int  # where the phrase is in the query
    end: int
    first: datetime  # the named period: [first, last]
    last: datetime
    moment: datetime  # the instant dateparser resolved, for rolling ranges


def _resolve(query: str, start: int, text: str, parser: DateDataParser) -> _Match | None:
    words = _WORD.findall(text.lower())
    before = _WORD.findall(query[:start].lower())
    previous = before[-1] if before else ""
    if not _plausible(text, words, previous):
        return None
    # dateparser's match can run on into filler ("yesterday about"): drop trailing words that name
    # no time and change nothing, so the phrase is only the words that named the time.
    data = _parse(parser, text)
    if data is None:
        return None
    spaced = text.split()
    while len(spaced) > 1 and not _names_time(spaced[-1]):
        shorter = text[: text.rfind(spaced[-1])].rstrip()
        if _parse(parser, shorter) != data:
            break
        text, spaced = shorter, spaced[:-1]
    moment, period = data
    first, last = _period(moment, period)
    return _Match(start, start + len(text), first, last, moment)


def _names_time(word: str) -> bool:
    tokens = set(_WORD.findall(word.lower()))
    return bool(tokens & _TIME_WORDS) or any(t.isdigit() for t in tokens)


def _plausible(text: str, words: list[str], previous: str) -> bool:
    present = set(words)
    context = present | {previous}
    if present & (_WEEKDAYS | _DEICTIC) or _NUMERIC_DATE.search(text):
        return True
    if present & _UNITS and context & _QUALIFIERS:
        return True
    has_day = any(w.isdigit() and len(w) <= 2 for w in words) or bool(re.search(r"\d(?:st|nd|rd|th)\b", text))
    months = present & _MONTHS
    if months - _AMBIGUOUS_MONTHS:
        return True
    if (months or present & _MONTH_ABBREVIATIONS) and has_day:
        return True
    if months and (context & (_MONTH_PREPOSITIONS | _QUALIFIERS) or any(_YEAR.match(w) for w in words)):
        return True
    return any(_YEAR.match(w) for w in words) and bool(context & _MONTH_PREPOSITIONS)


def _parse(parser: DateDataParser, text: str) -> tuple[datetime, str] | None:
    try:
        data = parser.get_date_data(text)
    except (ValueError, OverflowError, ArithmeticError):
        return None
    if data.date_obj is None:
        return None
    return data.date_obj.astimezone(UTC), str(data.period or "day")


def _period(moment: datetime, period: str) -> tuple[datetime, datetime]:
    day = datetime(moment.year, moment.month, moment.day, tzinfo=UTC)
    match period:
        case "year":
            first, after = day.replace(month=1, day=1), day.replace(year=day.year + 1, month=1, day=1)
        case "month":
            first = day.replace(day=1)
            after = (
                first.replace(year=first.year + 1, month=1)
                if first.month == 12
                else first.replace(month=first.month + 1)
            )
        case "week":
            first = day - timedelta(days=day.weekday())
            after = first + timedelta(days=7)
        case _:  # day, or a time of day ("this morning", "2 hours ago"): its whole day
            first, after = day, day + timedelta(days=1)
    return first, after - _TICK


def _bounded(text: str, matches: list[_Match]) -> tuple[datetime | None, datetime | None, int, int]:
    """The range and the span of the phrase: the first match, with the word that bounds it."""
    one = matches[0]
    own = _WORD.findall(text[one.start : one.end].lower())[:1]  # dateparser keeps "after", "from"
    before = _WORD.findall(text[: one.start].lower())[-1:]
    lead = own[0] if own and own[0] in _OPERATORS else (before[0] if before else "")
    start = one.start if own and own[0] in _OPERATORS else _word_start(text, one.start)
    if len(matches) > 1 and lead in _RANGE_OPENERS:  # "between May 1 and May 10", "from May 1 to May 10"
        two = matches[1]
        if _WORD.findall(text[one.end : two.start].lower()) in ([j] for j in _RANGE_JOINERS):
            return one.first, two.last, start, two.end
    if lead in _SINCE_START:
        return one.first, None, start, one.end
    if lead in _SINCE_END:
        return one.last + _TICK, None, start, one.end
    if lead in _UNTIL_START:
        return None, one.first - _TICK, start, one.end
    if lead in _UNTIL_END:
        return None, one.last, start, one.end
    if lead in _ROLLING and own[0] not in _QUALIFIERS:  # "last 3 days": from that day on
        return datetime(one.moment.year, one.moment.month, one.moment.day, tzinfo=UTC), None, start, one.end
    return one.first, one.last, one.start, one.end


def _word_start(text: str, index: int) -> int:
    """Where the word just before `index` starts (an operator such as "since" joins the phrase)."""
    head = text[:index].rstrip()
    words = head.split()
    return len(head) - len(words[-1]) if words else index


def prepare() -> None:
    """Load the date parser's language data now (blocking), so the first query naming a time does not."""
    time_range("yesterday", datetime.now(UTC))
