"""Timing and the machine: percentiles (three conventions, each kept as the benches that use it have
always computed it, so their figures stay comparable), a stopwatch, CPU seconds, RSS and the CPU model."""

from __future__ import annotations

import os
import platform
import resource
import statistics
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank percentile q (0..1) of values, in their unit; nan when there are none."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def percentiles(samples: Sequence[float]) -> dict[str, float]:
    """p50/p95/p99/max/mean in ms of samples in seconds (nearest rank; nan when there are none)."""
    if not samples:
        return {k: float("nan") for k in ("p50_ms", "p95_ms", "p99_ms", "max_ms", "mean_ms")}
    ordered = sorted(samples)
    return {
        "p50_ms": percentile(ordered, 0.50) * 1000,
        "p95_ms": percentile(ordered, 0.95) * 1000,
        "p99_ms": percentile(ordered, 0.99) * 1000,
        "max_ms": ordered[-1] * 1000,
        "mean_ms": statistics.mean(ordered) * 1000,
    }


def quantiles(values: Sequence[float]) -> dict[int, float]:
    """p50/p90/p99 of values, interpolated (statistics.quantiles, inclusive), in their unit."""
    if len(values) == 1:
        return {50: values[0], 90: values[0], 99: values[0]}
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    return {50: cuts[49], 90: cuts[89], 99: cuts[98]}


def median_p95_max(values: Sequence[float]) -> tuple[float, float, float]:
    """The median (interpolated), p95 (the nearest of round(0.95 * (n - 1))) and max of values: the
    convention of the hook and relay benches (bench/hook_latency.py, bench/relay.py)."""
    ordered = sorted(values)
    return (
        statistics.median(ordered),
        ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))],
        ordered[-1],
    )


def spread(values: Sequence[float]) -> dict[str, float]:
    """mean, p50 and p95 (nearest rank) of values; {} when there are none."""
    if not values:
        return {}
    return {"mean": statistics.fmean(values), "p50": percentile(values, 0.5), "p95": percentile(values, 0.95)}


@dataclass
class Stopwatch:
    """Seconds since it started (`elapsed`), and in ms (`ms`)."""

    began: float = 0.0
    seconds: float = 0.0

    @property
    def ms(self) -> float:
        return self.seconds * 1000


@contextmanager
def stopwatch() -> Iterator[Stopwatch]:
    """`with stopwatch() as watch: ...` then `watch.seconds` (perf_counter, wall time)."""
    watch = Stopwatch(began=time.perf_counter())
    try:
        yield watch
    finally:
        watch.seconds = time.perf_counter() - watch.began


def rss_mb() -> float:
    """This process's resident set in MB (Linux /proc; nan elsewhere)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def process_cpu_seconds(pid: int) -> float | None:
    """A process's user+system CPU seconds from /proc (Linux); None when it cannot be read."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def own_cpu_seconds() -> float:
    """This process's user+system CPU seconds."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def cpu() -> str:
    """The CPU's model and its widest vector instructions: the local embedder's speed depends on both."""
    try:
        info = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor() or platform.machine()
    name = next(
        (line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith("model name")), ""
    )
    flags = set(
        next((line.split(":", 1)[1].split() for line in info.splitlines() if line.startswith("flags")), [])
    )
    widest = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "no AVX2"
    return f"{name or platform.machine()} ({widest})"
