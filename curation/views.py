"""What the dashboard shows, computed where it is cheap: in SQL and NumPy, never per page in Python.

Every function takes a Manifest and a threshold and returns plain data (dicts, lists, arrays), so
the pages stay thin and this module is tested without Streamlit. All of it must stay fast on a
100,000-page manifest: counts and histograms are single aggregate queries, lists are SQL pages of
at most a screenful, and nothing loads a thumbnail that is not on screen.
"""

from __future__ import annotations

import math
import os
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pymupdf

from .manifest import KEEP_SQL, LIVE_DOCUMENT_SQL, Manifest, now
from .reader import error_text

# The joins every page query uses; aliases p, d and o as in Manifest.pages().
PAGES_FROM = (
    "FROM pages p JOIN documents d ON d.id = p.doc_id "
    "LEFT JOIN overrides o ON o.doc_id = p.doc_id AND o.page = p.page"
)

DECISIONS = {
    "all": "All pages",
    "kept": "Kept",
    "rejected": "Rejected",
    "overridden": "Overridden",
    "near": "Near the cutoff",
    "failed": "Failed",
}
DECISION_SQL = {
    "all": "",
    "kept": f"{KEEP_SQL} = 1",
    "rejected": f"{KEEP_SQL} = 0",
    "overridden": "o.keep IS NOT NULL",
    # Written as a range on p.sigma so SQLite can use the sigma index.
    "near": "p.sigma BETWEEN :threshold - :near AND :threshold + :near",
    "failed": "p.status = 'failed'",
}
SORTS = {
    "sigma": ("σ, lowest first", "p.sigma NULLS LAST, p.doc_id, p.page"),  # failed pages last
    "sigma_desc": ("σ, highest first", "p.sigma DESC, p.doc_id, p.page"),
    "page": ("Document and page", "d.path, p.page"),
}
RENDER_LONG_SIDE = 2400  # pixels: enough to judge an engraving's line work on a large screen
RENDER_MAX_ZOOM = 4.0


@dataclass(frozen=True)
class PageFilter:
    """Which pages a review screen shows: by decision, optionally one document."""

    decision: str = "all"
    doc_id: int | None = None
    near: float = 5.0
    page: int | None = None  # one page of the document, to show it alone

    def sql(self) -> tuple[str, dict]:
        if self.decision not in DECISION_SQL:
            raise ValueError(f"unknown decision filter {self.decision!r}")
        conditions, params = [], {}
        if DECISION_SQL[self.decision]:
            conditions.append(DECISION_SQL[self.decision])
        if self.decision == "near":
            params["near"] = float(self.near)
        if self.doc_id is not None:
            conditions.append("p.doc_id = :doc_id")
            params["doc_id"] = int(self.doc_id)
        if self.page is not None:
            conditions.append("p.page = :page")
            params["page"] = int(self.page)
        return " AND ".join(conditions), params


def _where(flt: PageFilter) -> tuple[str, dict]:
    condition, params = flt.sql()
    return f"WHERE {LIVE_DOCUMENT_SQL}" + (f" AND ({condition})" if condition else ""), params


# -- counts -----------------------------------------------------------------------------------


def filter_counts(manifest: Manifest, threshold: float, flt: PageFilter = PageFilter()) -> dict:
    """How many pages the filter holds, and of those how many are kept and overridden."""
    where, params = _where(flt)
    row = manifest.conn.execute(
        f"SELECT COUNT(*) AS pages, COALESCE(SUM({KEEP_SQL}), 0) AS kept, "
        f"COALESCE(SUM(o.keep IS NOT NULL), 0) AS overridden {PAGES_FROM} {where}",
        {**manifest.decision_params(threshold), **params},
    ).fetchone()
    return {**dict(row), "rejected": row["pages"] - row["kept"]}


def figures(manifest: Manifest, threshold: float, saved: float | None = None) -> dict:
    """The threshold page's figures at `threshold`, and what is kept at the `saved` one, in one scan.

    Counts agree with Manifest.summary(): failed pages count as rejected (they cannot be exported).
    """
    saved = threshold if saved is None else saved
    row = manifest.conn.execute(
        f"SELECT COUNT(*) AS pages, COALESCE(SUM({KEEP_SQL}), 0) AS kept, "
        f"COALESCE(SUM({KEEP_SQL.replace(':threshold', ':saved')}), 0) AS kept_saved, "
        f"COALESCE(SUM(o.keep IS NOT NULL), 0) AS overrides, COALESCE(SUM(p.status = 'failed'), 0) AS failed "
        f"{PAGES_FROM} WHERE {LIVE_DOCUMENT_SQL}",
        {**manifest.decision_params(threshold), "saved": float(saved)},
    ).fetchone()
    result = dict(row)
    result["rejected"] = result["pages"] - result["kept"]
    result["rejected_saved"] = result["pages"] - result["kept_saved"]
    result["removed_share"] = result["rejected"] / result["pages"] if result["pages"] else 0.0
    result["removed_share_saved"] = result["rejected_saved"] / result["pages"] if result["pages"] else 0.0
    return result


def page_count(manifest: Manifest) -> int:
    """Pages of live documents, from indexes only: cheap enough for every script run."""
    return manifest.conn.execute(
        f"SELECT COUNT(*) FROM pages p JOIN documents d ON d.id = p.doc_id WHERE {LIVE_DOCUMENT_SQL}"
    ).fetchone()[0]


def override_count(manifest: Manifest) -> int:
    """Overrides on pages of live documents, as summary() counts them."""
    return manifest.conn.execute(
        f"SELECT COUNT(*) FROM overrides o JOIN documents d ON d.id = o.doc_id WHERE {LIVE_DOCUMENT_SQL}"
    ).fetchone()[0]


# -- review -----------------------------------------------------------------------------------


def page_rows(manifest: Manifest, threshold: float, flt: PageFilter = PageFilter(), sort: str = "sigma",
              limit: int = 40, offset: int = 0) -> list[dict]:
    """One screenful of pages with their decision, in SQL order."""
    condition, params = flt.sql()
    order = SORTS[sort][1]
    rows = manifest.pages(threshold, where=condition, params=params, order=order, limit=limit, offset=offset)
    return [dict(row) for row in rows]


def thumbnails(manifest: Manifest, keys: Iterable[tuple[int, int]]) -> dict[tuple[int, int], bytes]:
    """The stored thumbnails of the given (doc_id, page) pairs, in one query."""
    keys = list(keys)
    if not keys:
        return {}
    values = ", ".join("(?, ?)" for _ in keys)
    # A join from the keys, not `(doc_id, page) IN (VALUES ...)`: SQLite scans the whole table for that.
    rows = manifest.conn.execute(
        f"WITH k(doc_id, page) AS (VALUES {values}) "
        f"SELECT t.doc_id, t.page, t.jpeg FROM k JOIN thumbnails t ON t.doc_id = k.doc_id AND t.page = k.page",
        [n for key in keys for n in key],
    )
    return {(row[0], row[1]): row[2] for row in rows}


def bulk_override(manifest: Manifest, threshold: float, flt: PageFilter, keep: bool | None) -> int:
    """Include (True), exclude (False) or clear (None) every page in the filter, in one transaction.

    Returns how many pages the filter held. The filter is evaluated once, before anything changes,
    so "exclude everything kept" excludes exactly the pages that were kept.
    """
    where, params = _where(flt)
    bound = {**manifest.decision_params(threshold), **params}
    with manifest.transaction():
        manifest.conn.execute("DROP TABLE IF EXISTS temp.bulk_pages")
        manifest.conn.execute(
            f"CREATE TEMP TABLE bulk_pages AS SELECT p.doc_id, p.page {PAGES_FROM} {where}", bound
        )
        count = manifest.conn.execute("SELECT COUNT(*) FROM temp.bulk_pages").fetchone()[0]
        if keep is None:
            manifest.conn.execute(
                "DELETE FROM overrides WHERE (doc_id, page) IN (SELECT doc_id, page FROM temp.bulk_pages)"
            )
        else:
            stamp = now()
            manifest.conn.execute(
                "INSERT INTO overrides (doc_id, page, keep, created_at, updated_at) "
                "SELECT doc_id, page, ?, ?, ? FROM temp.bulk_pages WHERE true "
                "ON CONFLICT(doc_id, page) DO UPDATE SET keep = excluded.keep, updated_at = excluded.updated_at",
                (int(bool(keep)), stamp, stamp),
            )
        manifest.conn.execute("DROP TABLE temp.bulk_pages")
    return count


def documents_for_filter(manifest: Manifest) -> list[dict]:
    """Live documents that have pages, for the document filter: id, path and page count."""
    rows = manifest.conn.execute(
        f"SELECT d.id, d.path, d.pages FROM documents d WHERE {LIVE_DOCUMENT_SQL} "
        "AND EXISTS (SELECT 1 FROM pages p WHERE p.doc_id = d.id) ORDER BY d.path"
    )
    return [dict(row) for row in rows]


# -- threshold --------------------------------------------------------------------------------


def sigma_range(manifest: Manifest) -> tuple[float, float] | None:
    """The smallest and largest σ of scored pages (indexed), or None when nothing is scored."""
    row = manifest.conn.execute(
        f"SELECT MIN(p.sigma), MAX(p.sigma) FROM pages p JOIN documents d ON d.id = p.doc_id "
        f"WHERE {LIVE_DOCUMENT_SQL} AND p.sigma IS NOT NULL"
    ).fetchone()
    return None if row[0] is None else (float(row[0]), float(row[1]))


@dataclass(frozen=True)
class Histogram:
    edges: np.ndarray  # bins + 1 edges
    kept: np.ndarray  # pages per bin whose decision is keep (overrides included)
    rejected: np.ndarray

    @property
    def total(self) -> np.ndarray:
        return self.kept + self.rejected

    def rows(self) -> list[dict]:
        """Long-form rows for a stacked chart: one per bin and decision."""
        rows = []
        for i in range(len(self.kept)):
            for decision, counts in (("kept", self.kept), ("rejected", self.rejected)):
                rows.append({"start": float(self.edges[i]), "end": float(self.edges[i + 1]),
                             "decision": decision, "pages": int(counts[i])})
        return rows


def histogram(manifest: Manifest, threshold: float, bins: int = 60,
              span: tuple[float, float] | None = None) -> Histogram | None:
    """σ of scored pages binned in SQL, each bin split by decision. None when nothing is scored."""
    span = span or sigma_range(manifest)
    if span is None:
        return None
    low, high = math.floor(span[0]), math.ceil(span[1])
    high = max(high, low + 1)
    width = (high - low) / bins
    rows = manifest.conn.execute(
        f"SELECT MIN(MAX(CAST((p.sigma - :low) / :width AS INTEGER), 0), :last) AS bin, "
        f"SUM({KEEP_SQL}) AS kept, COUNT(*) AS pages {PAGES_FROM} "
        f"WHERE {LIVE_DOCUMENT_SQL} AND p.sigma IS NOT NULL GROUP BY bin",
        {"low": low, "width": width, "last": bins - 1, **manifest.decision_params(threshold)},
    ).fetchall()
    kept, total = np.zeros(bins, np.int64), np.zeros(bins, np.int64)
    for row in rows:
        kept[row["bin"]] = row["kept"]
        total[row["bin"]] = row["pages"]
    return Histogram(np.linspace(low, high, bins + 1), kept, total - kept)


def otsu(counts: np.ndarray, edges: np.ndarray) -> float:
    """Otsu's cutoff for a histogram: the edge that maximises the variance between the two sides."""
    counts = np.asarray(counts, np.float64)
    centers = (edges[:-1] + edges[1:]) / 2
    weight = np.cumsum(counts)[:-1]  # pages at or below each candidate edge
    total = counts.sum()
    if total == 0 or len(counts) < 2:
        return float(edges[len(edges) // 2])
    mass = np.cumsum(counts * centers)[:-1]
    mean_total = mass[-1] + counts[-1] * centers[-1]
    with np.errstate(divide="ignore", invalid="ignore"):
        between = (mean_total * weight / total - mass) ** 2 / (weight * (total - weight))
    between = np.nan_to_num(between, nan=-1.0, posinf=-1.0)
    return float(edges[int(np.argmax(between)) + 1])


@dataclass(frozen=True)
class Suggestion:
    threshold: float
    kept: int
    rejected: int
    how: str


def suggest_threshold(manifest: Manifest, bins: int = 256) -> Suggestion | None:
    """A cutoff from the σ distribution alone (Otsu's method), with what it would keep."""
    hist = histogram(manifest, threshold=0.0, bins=bins)
    if hist is None or hist.total.sum() < 2:
        return None
    cut = round(otsu(hist.total, hist.edges), 1)
    counts = filter_counts(manifest, cut)
    how = (
        "Otsu's method: σ of all scored pages is split into two groups, text-like below and "
        "picture-like above, at the value that makes each group as tight as possible (the largest "
        "variance between the groups). It looks only at the numbers, so check the borderline pages."
    )
    return Suggestion(cut, counts["kept"], counts["rejected"], how)


def borderline(manifest: Manifest, threshold: float, count: int = 8) -> tuple[list[dict], list[dict]]:
    """The scored pages just below (or at) and just above the cutoff, nearest first; both by the sigma index."""
    below = manifest.pages(threshold, where="p.sigma <= :threshold", order="p.sigma DESC, p.doc_id, p.page",
                           limit=count)
    above = manifest.pages(threshold, where="p.sigma > :threshold", order="p.sigma, p.doc_id, p.page",
                           limit=count)
    return [dict(r) for r in below], [dict(r) for r in above]


# -- documents and jobs -----------------------------------------------------------------------


def document_rows(manifest: Manifest) -> list[dict]:
    """Documents for the ingest table, with whether their file is still where the manifest says."""
    return [{**dict(row), "missing": not os.path.exists(row["path"])} for row in manifest.documents()]


def missing_sources(manifest: Manifest) -> list[str]:
    """Paths of live documents whose PDF is gone: their pages can be reviewed but not opened or exported."""
    rows = manifest.conn.execute(f"SELECT d.path FROM documents d WHERE {LIVE_DOCUMENT_SQL} ORDER BY d.path")
    return [row[0] for row in rows if not os.path.exists(row[0])]


def job_progress(job: sqlite3.Row | dict) -> dict:
    """A job row as a person reads it: fraction done, speed and time left as text."""
    done, total = job["done"] or 0, job["total"] or 0
    return {
        "fraction": min(1.0, done / total) if total else 0.0,
        "done": done,
        "total": total,
        "rate": f"{job['rate']:.1f} pages/s" if job["rate"] else "measuring speed…",
        "eta": duration(job["eta"]) + " left" if job["eta"] is not None and job["status"] == "running" else "",
    }


def duration(seconds: float | None) -> str:
    if seconds is None:
        return ""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


# -- opening a page large ---------------------------------------------------------------------


class PageUnavailable(Exception):
    """The page cannot be drawn from its PDF; the message says why, for a person."""


def render_page(manifest: Manifest, doc_id: int, page: int, long_side: int = RENDER_LONG_SIDE) -> bytes:
    """A page drawn fresh from its PDF at high resolution, as JPEG bytes.

    Raises PageUnavailable when the file is gone, changed since it was scored, or unreadable.
    """
    doc = manifest.document(doc_id)
    if doc is None:
        raise PageUnavailable(f"document {doc_id} is not in the manifest")
    path = doc["path"]
    try:
        size = os.stat(path).st_size
    except OSError:
        raise PageUnavailable(
            f"The source PDF is no longer at {path}. The thumbnail is all the manifest holds; "
            "ingest the file from its new place to open its pages again."
        ) from None
    if size != doc["size"]:
        raise PageUnavailable(f"{path} has changed since it was scored; ingest it again to see it as it is now.")
    try:
        with pymupdf.open(path, filetype="pdf") as pdf:
            drawn = pdf[page]
            zoom = min(RENDER_MAX_ZOOM, long_side / max(drawn.rect.width, drawn.rect.height))
            pix = drawn.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), colorspace=pymupdf.csRGB, alpha=False)
            return pix.tobytes("jpeg", jpg_quality=90)
    except Exception as exc:  # MuPDF raises plain RuntimeError/ValueError for damaged files
        raise PageUnavailable(f"{path}, page {page + 1}, cannot be drawn: {error_text(exc)}") from exc


# -- home -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    page: str  # the page script that does it
    label: str
    why: str


def next_steps(summary: dict, threshold_saved: bool, job_running: bool) -> list[Step]:
    """What a curator should do next, in workflow order, given what the manifest holds."""
    documents = sum(summary["documents"].values())
    if job_running:
        return [Step("pages/ingest.py", "Watch the ingest", "Pages are being scored; figures grow as they arrive.")]
    if documents == 0:
        return [Step("pages/ingest.py", "Add your PDFs", "Upload PDFs or give a folder on the server.")]
    steps = []
    broken = sum(n for status, n in summary["documents"].items() if status not in ("ok", "replaced"))
    if broken:
        steps.append(Step("pages/ingest.py", "Check the documents that did not score fully",
                          f"{broken} document(s) are failed, partial or unfinished; the reasons are listed."))
    if not threshold_saved:
        steps.append(Step("pages/threshold.py", "Choose the cutoff",
                          f"σ > {summary['threshold']:g} is the default; look at the histogram and the pages "
                          "at the edge."))
    if summary["overrides"] == 0:
        steps.append(Step("pages/review.py", "Review the pages near the cutoff",
                          "Include the faded engravings σ misses, exclude the dark text pages it keeps."))
    steps.append(Step("pages/export.py", "Export the training set",
                      f"{summary['kept']:,} pages are kept now."))
    return steps
