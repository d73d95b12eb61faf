"""Lines of type in a strip of a page, as both legend readers measure them: runs of inked rows (or columns)
and the sizes a line of type comes in. The reader under a picture (`legend`) and the one beside it
(`vertical`) share them, so a legend is the same size of type whichever way it is set."""

from __future__ import annotations

import numpy as np

FIRST_GAP_IN = 0.5  # a legend's first line starts at most this far from its picture
LINE_MIN_IN, LINE_MAX_IN = 0.035, 0.6  # heights of a line of type (dots and rules are thinner)


def bands(counts: np.ndarray) -> list[tuple[int, int]]:
    """Runs of rows (top, bottom) with ink in them."""
    rows = np.flatnonzero(counts >= 2)
    return runs(rows, np.diff(rows) > 1)


def runs(positions: np.ndarray, breaks: np.ndarray) -> list[tuple[int, int]]:
    """Sorted positions as (first, last + 1) runs, broken where `breaks` (one per gap) is true."""
    if positions.size == 0:
        return []
    at = np.flatnonzero(breaks)
    return [(int(positions[s]), int(positions[e]) + 1) for s, e in zip(np.r_[0, at + 1], np.r_[at, positions.size - 1])]
