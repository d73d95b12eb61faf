"""Counts of pages by decision at any cutoff, without a pass over every page.

A page's decision under the rules depends on few things: its σ, its largest picture, its ink tone, the
model's suggestion, its status, and, for a few pages, an override or a curator's picture edits. The manifest
keeps the pages counted by bins of those (`page_bins`: σ in steps of 0.1, the picture area in 90 steps a
decade, the kind of figures it has, the suggestion, the status), rebuilt only when a page's figures or the
suggestions changed (triggers bump a counter in `changes`; see store.MIGRATIONS). Every count of the
dashboard at any cutoff is then a sum over a few thousand bins, and exact: the pages a bin cannot decide
alone (those in the bins beside a cutoff, overridden pages, pages whose pictures a curator edited) are read
one by one through their indexes and counted with KEEP_SQL itself (curation.manifest.tallies).
"""

from __future__ import annotations

import contextlib
import math
import sqlite3
import threading
from dataclasses import dataclass

import numpy as np

from .rules import INK_TONE_MIN, KEEP_SQL, LIVE_DOCUMENT_SQL

SIGMA_STEPS = 10  # bins per unit of σ: the cutoffs a person sets are in tenths
AREA_FLOOR, AREA_DECADES, AREA_STEPS = 0.1, 4, 90  # log bins of the picture area from 0.1 to 1000 sq in
AREA_BINS = AREA_DECADES * AREA_STEPS
SIGMA_BIN_SQL = f"CAST(p.sigma * {SIGMA_STEPS} AS INTEGER)"
AREA_BIN_SQL = (f"MIN(MAX(CAST((log10(MAX(p.picture_area, {AREA_FLOOR})) - {math.log10(AREA_FLOOR)}) * {AREA_STEPS} "
                f"AS INTEGER), 0), {AREA_BINS - 1})")
# What the picture rule reads: 0 no features (σ decides), 1 the area decides, 2 too little ink (rejected),
# 3 features without an ink tone (the area, then σ), 4 no picture area and too little ink (rejected).
KIND_SQL = (f"CASE WHEN p.picture_area IS NULL THEN (CASE WHEN p.ink_tone < {INK_TONE_MIN!r} THEN 4 ELSE 0 END) "
            f"WHEN p.ink_tone >= {INK_TONE_MIN!r} THEN 1 WHEN p.ink_tone < {INK_TONE_MIN!r} THEN 2 ELSE 3 END")
UNFEATURED_KINDS = (0, 4)
_COLUMNS = ("sigma_bin", "area_bin", "kind", "model", "status", "pages")
_memo: dict[tuple, "Bins"] = {}
_memo_lock = threading.Lock()


@dataclass(frozen=True)
class Bins:
    """Live pages counted per (σ bin, area bin, kind, suggestion, status); -1 where a figure is missing."""

    sigma_bin: np.ndarray
    area_bin: np.ndarray
    kind: np.ndarray
    model: np.ndarray  # the suggestion: 1 keep, 0 reject, -1 none
    failed: np.ndarray  # bool
    ok: np.ndarray  # bool: status 'ok'
    pages: np.ndarray


def version(conn: sqlite3.Connection) -> tuple[int, int, int]:
    """The change counters: pages' figures and documents' status, the suggestions (the bins depend on
    these two), and what curators decided (overrides, picture edits)."""
    values = dict(conn.execute("SELECT name, value FROM changes").fetchall())
    return int(values.get("pages", 0)), int(values.get("suggestions", 0)), int(values.get("decided", 0))


def bump_suggestions(conn: sqlite3.Connection) -> None:
    """Called by the one writer of the suggestions, in its transaction (a trigger per row would cost a
    second for a million suggestions)."""
    conn.execute("UPDATE changes SET value = value + 1 WHERE name = 'suggestions'")


def bins(manifest) -> Bins:
    """The bins for the manifest as it is now: from this process's memory, the manifest, or one pass
    over the pages (stored for every other process)."""
    conn = manifest.conn
    now = version(conn)[:2]
    key = (str(manifest.path), now)
    with _memo_lock:
        found = _memo.get(key)
    if found is not None:
        return found
    stored = dict(conn.execute("SELECT name, value FROM changes WHERE name LIKE 'binned_%'").fetchall())
    if (stored.get("binned_pages"), stored.get("binned_suggestions")) == now:
        rows = conn.execute(f"SELECT {', '.join(_COLUMNS)} FROM page_bins").fetchall()
    else:
        rows = refresh(manifest)
    result = _as_bins(rows)
    with _memo_lock:
        for old in [k for k in _memo if k[0] == key[0]]:
            del _memo[old]
        _memo[key] = result
    return result


def refresh(manifest) -> list[tuple]:
    """Count the live pages into bins (one pass) and store them, unless another writer holds the manifest
    (the counts are then used from memory only). Returns the rows."""
    conn = manifest.conn
    ensure_log10(conn)
    cursor = conn.cursor()
    cursor.row_factory = None
    before = version(conn)[:2]
    rows = cursor.execute(
        f"SELECT {SIGMA_BIN_SQL}, CASE WHEN p.picture_area IS NULL THEN NULL ELSE {AREA_BIN_SQL} END, {KIND_SQL}, "
        f"COALESCE(sg.keep, -1), p.status, COUNT(*) FROM pages p JOIN documents d ON d.id = p.doc_id "
        f"LEFT JOIN suggestions sg ON sg.doc_id = p.doc_id AND sg.page = p.page WHERE {LIVE_DOCUMENT_SQL} "
        "GROUP BY 1, 2, 3, 4, 5"
    ).fetchall()
    try:
        conn.execute("PRAGMA busy_timeout = 200")  # a running job writes: it is not waited for
        with manifest.transaction():
            if version(conn)[:2] == before:
                conn.execute("DELETE FROM page_bins")
                conn.executemany(f"INSERT INTO page_bins ({', '.join(_COLUMNS)}) VALUES (?, ?, ?, ?, ?, ?)", rows)
                conn.executemany("INSERT OR REPLACE INTO changes (name, value) VALUES (?, ?)",
                                 [("binned_pages", before[0]), ("binned_suggestions", before[1])])
    except sqlite3.OperationalError:
        pass  # busy or read-only: the next run counts again
    finally:
        conn.execute("PRAGMA busy_timeout = 30000")
    return rows


def _as_bins(rows: list) -> Bins:
    table = list(zip(*rows)) if rows else [()] * len(_COLUMNS)
    number = lambda values: np.array([-1 if v is None else v for v in values], np.int64)  # noqa: E731
    status = np.array(table[4], object)
    return Bins(number(table[0]), number(table[1]), number(table[2]), number(table[3]),
                status == "failed", status == "ok", np.array(table[5], np.int64))


def sigma_bin(value: float) -> int:
    return math.floor(value * SIGMA_STEPS)


def area_bin(value: float) -> int:
    if value <= AREA_FLOOR:
        return 0
    return min(AREA_BINS - 1, math.floor((math.log10(value) - math.log10(AREA_FLOOR)) * AREA_STEPS))


def bins_within(column: str, low: float, high: float) -> tuple[int, int]:
    """The first and last bins of `column` ('sigma' or 'picture_area') whose every value lies within
    [low, high] (first > last: none); the bins at either end of the scale, open-ended, never do."""
    if column == "sigma":
        edge, last_bin = (lambda n: n / SIGMA_STEPS), None
    else:
        edge = lambda n: 10 ** (math.log10(AREA_FLOOR) + n / AREA_STEPS)  # noqa: E731
        last_bin = AREA_BINS - 1
    margin = 1e-9 * max(1.0, abs(low), abs(high))  # a value on an edge may land in either bin
    first = max(1, math.ceil((low + margin) * SIGMA_STEPS)) if column == "sigma" else max(1, area_bin(low) + 1)
    while edge(first) < low + margin:
        first += 1
    last = first - 1
    while edge(last + 2) <= high - margin and (last_bin is None or last + 1 < last_bin):
        last += 1
    return first, last


@contextlib.contextmanager
def _snapshot(conn: sqlite3.Connection):
    """Reads that see one state of the manifest (inside a writer's transaction: its own)."""
    if conn.in_transaction:
        yield
        return
    conn.execute("BEGIN")
    try:
        yield
    finally:
        conn.execute("COMMIT")


def ensure_log10(conn: sqlite3.Connection) -> None:
    """SQLite's math functions are a build option; where they are missing, Python's stands in."""
    try:
        conn.execute("SELECT log10(10.0)")
    except sqlite3.OperationalError:
        conn.create_function("log10", 1, lambda x: None if x is None or x <= 0 else math.log10(x),
                             deterministic=True)
