"""The activity charts' geometry: where bars and labels go, inside the chart, in SVG units."""

from __future__ import annotations

import itertools
from datetime import date, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_memory.ui.charts import Chart, horizontal_bars, stacked_daily_bars

TYPES = ("turn", "summary", "fact", "user_summary")
DAYS = [date(2026, 11, 1) + timedelta(days=i) for i in range(30)]


def zeros() -> dict[str, list[int]]:
    return {t: [0] * len(DAYS) for t in TYPES}


def inside(chart: Chart) -> bool:
    """Every bar and label within the chart's box, no bar of negative size."""
    bars = all(
        min(b.x, b.y, b.width, b.height) >= 0
        and b.x + b.width <= chart.width + 1e-6
        and b.y + b.height <= chart.height + 1e-6
        for b in chart.bars
    )
    return bars and all(
        0 <= label.x <= chart.width and 0 <= label.y <= chart.height for label in chart.labels
    )


def test_the_busiest_day_reaches_the_top_of_the_plot_and_days_stack_from_the_bottom() -> None:
    counts = zeros()
    counts["turn"][29], counts["summary"][29], counts["fact"][29] = 6, 1, 3  # today: 10 in all
    counts["turn"][10] = 5
    chart = stacked_daily_bars(DAYS, counts)

    today = [b for b in chart.bars if b.title.startswith("2026-11-30")]
    assert [b.css_class for b in today] == ["type-turn", "type-summary", "type-fact"]
    assert [b.title for b in today] == ["2026-11-30: 6 turn", "2026-11-30: 1 summary", "2026-11-30: 3 fact"]
    bottom = today[0].y + today[0].height
    top = today[-1].y
    for lower, upper in itertools.pairwise(today):  # each segment sits on the one below
        assert upper.y + upper.height == pytest.approx(lower.y)
        assert upper.x == lower.x and upper.width == lower.width
    assert today[0].height == pytest.approx(2 * today[2].height)  # 6 against 3: heights in proportion
    assert top == min(b.y for b in chart.bars)  # the busiest day is the tallest
    [half] = [b for b in chart.bars if b.title.startswith("2026-11-11")]
    assert half.height == pytest.approx((bottom - top) / 2)
    assert half.y + half.height == pytest.approx(bottom)
    assert half.x < today[0].x  # oldest day on the left
    assert len(chart.bars) == 4  # zero counts make no bar
    assert inside(chart)


def test_the_axis_names_zero_the_middle_and_the_most_and_every_seventh_day_back_from_today() -> None:
    counts = zeros()
    counts["turn"][3] = 12
    chart = stacked_daily_bars(DAYS, counts)
    axis = {label.text: label for label in chart.labels if label.anchor == "end"}
    assert set(axis) == {"0", "6", "12"}
    assert axis["0"].y > axis["6"].y > axis["12"].y
    [bar] = chart.bars
    assert axis["12"].y == pytest.approx(bar.y + 4) and axis["0"].y == pytest.approx(bar.y + bar.height + 4)
    days = [label.text for label in chart.labels if label.anchor == "middle"]
    assert days == ["Nov 30", "Nov 23", "Nov 16", "Nov 9", "Nov 2"]
    assert chart.legend == [(f"type-{t}", t) for t in TYPES]
    assert inside(chart)


def test_a_single_memory_has_no_duplicate_ticks() -> None:
    counts = zeros()
    counts["fact"][0] = 1
    chart = stacked_daily_bars(DAYS, counts)
    assert sorted(label.text for label in chart.labels if label.anchor == "end") == ["0", "1"]


def test_no_memories_is_a_message_not_bars() -> None:
    for chart in (stacked_daily_bars(DAYS, zeros()), stacked_daily_bars([], {t: [] for t in TYPES})):
        assert chart.bars == [] and chart.legend == []
        assert [label.text for label in chart.labels] == ["No memories in these days"]
        assert inside(chart)


def test_counts_must_cover_every_day() -> None:
    with pytest.raises(ValueError, match="one count per day"):
        stacked_daily_bars(DAYS, {"turn": [1, 2]})


@given(
    st.lists(st.tuples(*(st.integers(0, 500),) * 4), min_size=1, max_size=60),
    st.integers(120, 1200),
    st.integers(80, 600),
)
def test_every_column_stays_inside_the_chart(per_day: list[tuple[int, ...]], width: int, height: int) -> None:
    days = [date(2026, 1, 1) + timedelta(days=i) for i in range(len(per_day))]
    counts = {t: [day[k] for day in per_day] for k, t in enumerate(TYPES)}
    chart = stacked_daily_bars(days, counts, width=width, height=height)
    assert chart.width == width and chart.height == height and inside(chart)
    assert len(chart.bars) == sum(1 for day in per_day for c in day if c > 0)


def test_threads_are_rows_with_the_most_summarized_reaching_the_right_edge() -> None:
    long_id = "a-thread-with-a-very-long-identifier-indeed"
    chart = horizontal_bars([("trip", 8), (long_id, 4), ("never", 0)], width=760, bar_height=22)
    assert [b.css_class for b in chart.bars] == ["bar-summaries"] * 2  # a zero count makes no bar
    trip, long = chart.bars
    assert trip.x == long.x and trip.height == long.height == 22
    assert long.width == pytest.approx(trip.width / 2)
    assert long.y > trip.y + trip.height  # rows top down, apart
    assert trip.title == "trip: summarized 8 times"
    assert long.title == f"{long_id}: summarized 4 times"  # the whole id, on hover

    names = [label for label in chart.labels if label.anchor == "end"]
    assert [n.text for n in names] == ["trip", long_id[:31] + "…", "never"]
    assert len(names[1].text) == 32 and all(n.x <= trip.x for n in names)
    ends = [label for label in chart.labels if label.anchor == "start"]
    assert [e.text for e in ends] == ["8", "4", "0"]
    assert ends[0].x > trip.x + trip.width and ends[1].x > long.x + long.width
    assert ends[0].x < chart.width  # room for the count after the longest bar
    assert trip.y < ends[0].y < trip.y + trip.height  # the count sits on its bar's row
    assert inside(chart) and chart.legend == []


def test_one_summarization_reads_once() -> None:
    [bar] = horizontal_bars([("t", 1)]).bars
    assert bar.title == "t: summarized once"


def test_no_thread_summarized_is_a_message() -> None:
    chart = horizontal_bars([])
    assert chart.bars == [] and [label.text for label in chart.labels] == [
        "No thread has been summarized yet"
    ]
    assert inside(chart)


@given(
    st.lists(st.tuples(st.text(min_size=1, max_size=60), st.integers(0, 10_000)), max_size=40),
    st.integers(120, 1200),
    st.integers(8, 40),
)
def test_every_row_stays_inside_the_chart(items: list[tuple[str, int]], width: int, bar_height: int) -> None:
    chart = horizontal_bars(items, width=width, bar_height=bar_height)
    assert inside(chart)
    assert len(chart.bars) == sum(1 for _, count in items if count > 0)
