"""How long ago something was said, in the words a person uses: "just now", "5 minutes ago", "2 hours
ago", "yesterday", "3 days ago", then the date. A teammate's memory recalled from a shared space says who
and when this way ("alice, 3 days ago": service/hook_recall.py, service/briefing.py); a personal memory
keeps its date.
"""

from __future__ import annotations

from datetime import datetime

DAYS_IN_WORDS = 30  # older than this many days: the date itself


def ago(moment: datetime, now: datetime) -> str:
    """`moment` relative to `now`, in words; a moment after `now` (clocks apart) is "just now"."""
    seconds = (now - moment).total_seconds()
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return _counted(int(seconds // 60), "minute")
    if seconds < 86_400:
        return _counted(int(seconds // 3600), "hour")
    days = (now.date() - moment.date()).days
    if days <= 1:
        return "yesterday"
    if days <= DAYS_IN_WORDS:
        return f"{days} days ago"
    return f"{moment:%Y-%m-%d}"


def attributed(who: str, moment: datetime, now: datetime) -> str:
    """Who said it and when: "alice, 3 days ago"."""
    return f"{who}, {ago(moment, now)}"


def _counted(n: int, unit: str) -> str:
    return f"{n} {unit} ago" if n == 1 else f"{n} {unit}s ago"
