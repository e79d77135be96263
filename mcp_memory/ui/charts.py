"""Where the activity page's bars and labels go: SVG geometry, no I/O and no markup.

The page draws these as <rect> and <text> with their x, y, width and height attributes and a CSS class
for the colour: the Content-Security-Policy forbids inline styles and the page runs no script, so
everything a chart needs is here, in SVG user units, inside the chart's own width and height.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Literal

# Room around the plot of a column chart, for the count labels left and the day labels below.
_LEFT, _RIGHT, _TOP, _BOTTOM = 40.0, 20.0, 10.0, 24.0
_COLUMN_SHARE = 0.8  # of its day's slot, a column fills this much; the rest separates neighbours
# Text stands on its y (its baseline): this much lower looks centred on a line or a bar.
_HALF_TEXT = 4.0
_DAY_LABEL_EVERY = 7
# A row chart: thread ids in a column on the left, each count just past its bar's end.
_NAME_WIDTH, _COUNT_WIDTH, _ROW_GAP = 230.0, 48.0, 6.0
_NAME_CHARS = 32
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    css_class: str
    title: str  # shown on hover: what this bar counts


@dataclass(frozen=True)
class Label:
    x: float
    y: float  # the text's baseline
    text: str
    anchor: Literal["start", "middle", "end"]


@dataclass(frozen=True)
class Chart:
    width: int
    height: int
    bars: list[Bar]
    labels: list[Label]
    legend: list[tuple[str, str]]  # (css_class, text), one per series


def stacked_daily_bars(
    days: Sequence[date], counts: Mapping[str, Sequence[int]], *, width: int = 760, height: int = 240
) -> Chart:
    """One column per day, stacked by memory type in the order of `counts` from the bottom up, scaled so
    the busiest day reaches the top; the axis shows zero, the busiest day's total and the middle."""
    if any(len(per_day) != len(days) for per_day in counts.values()):
        raise ValueError("every memory type needs one count per day")
    totals = [sum(max(per_day[i], 0) for per_day in counts.values()) for i in range(len(days))]
    if not any(totals):
        return _empty(width, height, "No memories in these days")
    most = max(totals)
    left, top = min(_LEFT, width / 4), min(_TOP, height / 4)
    right, bottom = max(width - _RIGHT, left), max(height - _BOTTOM, top)
    slot = (right - left) / len(days)
    column = _r(slot * _COLUMN_SHARE)

    bars: list[Bar] = []
    for i, day in enumerate(days):
        x = _r(left + i * slot + (slot - column) / 2)
        stacked = 0
        for memory_type, per_day in counts.items():
            if per_day[i] <= 0:
                continue
            y_low = _r(_y(stacked, most, top, bottom))
            stacked += per_day[i]
            y_high = _r(_y(stacked, most, top, bottom))
            title = f"{day.isoformat()}: {per_day[i]} {memory_type}"
            bars.append(Bar(x, y_high, column, _r(y_low - y_high), f"type-{memory_type}", title))

    labels = [
        Label(_r(left - 6), _r(_y(tick, most, top, bottom) + _HALF_TEXT), str(tick), "end")
        for tick in sorted({0, most // 2, most})
    ]
    for i in range(len(days) - 1, -1, -_DAY_LABEL_EVERY):  # from today back, so today is always named
        day = days[i]
        name = f"{_MONTHS[day.month - 1]} {day.day}"
        labels.append(Label(_r(left + (i + 0.5) * slot), _r(height - _HALF_TEXT), name, "middle"))
    legend = [(f"type-{memory_type}", memory_type) for memory_type in counts]
    return Chart(width, height, bars, labels, legend)


def horizontal_bars(items: Sequence[tuple[str, int]], *, width: int = 760, bar_height: int = 22) -> Chart:
    """One row per (thread id, count), in the order given, with the largest count reaching the right
    edge; each row names its thread on the left and its count at the bar's end."""
    if not items:
        return _empty(width, 3 * bar_height, "No thread has been summarized yet")
    most = max(max(count for _, count in items), 1)
    left = min(_NAME_WIDTH, width / 3)
    room = max(width - left - min(_COUNT_WIDTH, width / 6), 0.0)
    height = round(2 * _TOP + len(items) * bar_height + (len(items) - 1) * _ROW_GAP)
    bars: list[Bar] = []
    labels: list[Label] = []
    for row, (thread_id, count) in enumerate(items):
        y = _TOP + row * (bar_height + _ROW_GAP)
        length = _r(room * max(count, 0) / most)
        if length > 0:
            times = "once" if count == 1 else f"{count} times"
            title = f"{thread_id}: summarized {times}"
            bars.append(Bar(_r(left), _r(y), length, bar_height, "bar-summaries", title))
        middle = _r(y + bar_height / 2 + _HALF_TEXT)
        labels.append(Label(_r(left - 6), middle, _shortened(thread_id), "end"))
        labels.append(Label(_r(left + length + 4), middle, str(count), "start"))
    return Chart(width, height, bars, labels, [])


def _empty(width: int, height: int, message: str) -> Chart:
    return Chart(width, height, [], [Label(width / 2, height / 2 + _HALF_TEXT, message, "middle")], [])


def _y(count: float, most: int, top: float, bottom: float) -> float:
    """Where `count` stands on a vertical axis from zero at `bottom` up to `most` at `top`."""
    return bottom - (bottom - top) * count / most


def _shortened(thread_id: str) -> str:
    return thread_id if len(thread_id) <= _NAME_CHARS else thread_id[: _NAME_CHARS - 1] + "…"


def _r(value: float) -> float:
    """Coordinates to a hundredth of a unit: finer than a screen shows, and short in the markup."""
    return round(value, 2)
