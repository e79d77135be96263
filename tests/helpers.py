"""How a test waits: for the event, never for a while. `eventually` (and `eventually_async` in async tests)
asks a question again and again until it is answered; the bound only guards against a hang, far above
what any machine takes, so a slow or loaded machine waits longer instead of failing. A test asserts what
happened, not how fast: speed lives in bench/.

    rows = eventually(lambda: stored_rows(db), what="the turn stored")
    await eventually_async(lambda: len(heard) >= 2, what="both events heard")
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio
import pytest

T = TypeVar("T")

# Far above anything a machine takes to do what a test waits for: reached only when it never happens.
HANG_SECONDS = 120.0


def eventually(
    check: Callable[[], T],
    *,
    what: str,
    seconds: float = HANG_SECONDS,
    every: float = 0.05,
    detail: Callable[[], object] | None = None,
) -> T:
    """`check()`'s first truthy answer, asked every `every` seconds; fails naming `what`, the last answer
    and `detail()` (a log, a status) when none comes within `seconds`: a bound against a hang, not a
    speed test."""
    deadline = time.monotonic() + seconds
    while True:
        answer = check()
        if answer:
            return answer
        if time.monotonic() > deadline:
            more = f"; {detail()}" if detail is not None else ""
            pytest.fail(f"{what}: not within {seconds:g} s (a hang); last answer {answer!r}{more}")
        time.sleep(every)


async def eventually_async(
    check: Callable[[], T | Awaitable[T]], *, what: str, seconds: float = HANG_SECONDS, every: float = 0.02
) -> T:
    """`eventually` for async tests: `check` may be a plain or an async function; the loop keeps running
    (other tasks go on) between the questions."""
    deadline = anyio.current_time() + seconds
    while True:
        answer = check()
        if isinstance(answer, Awaitable):
            answer = await answer
        if answer:
            return answer
        if anyio.current_time() > deadline:
            pytest.fail(f"{what}: not within {seconds:g} s (a hang); last answer {answer!r}")
        await anyio.sleep(every)
