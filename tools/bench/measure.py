"""What the benchmark scripts measure with: resident memory and percentiles."""

from __future__ import annotations

from pathlib import Path


def rss_mb(field: str = "VmRSS") -> float:
    """This process's resident memory (VmRSS; VmHWM: its peak so far), in MB; NaN where /proc is missing."""
    try:
        lines = Path("/proc/self/status").read_text().splitlines()
    except OSError:
        return float("nan")
    for line in lines:
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def percentile(values: list[float], q: float) -> float:
    """The q-quantile (0..1) by rank: the value at index q * n of the sorted samples."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]
