"""Documents, jobs and Home: the documents table, sources gone missing, a job's progress and duration,
and the next steps Home suggests.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sqlite3
from dataclasses import dataclass


from ..decisions import learn
from ..runs.jobs import plural as count  # noqa: F401 (views.count: a count in words)
from ..manifest.rules import DEFAULT_RULE, LIVE_DOCUMENT_SQL
from ..manifest.store import Manifest
from ..scoring.pictures import DEFAULT_PICTURE_AREA_MIN
from .threshold import rule_summary


def document_rows(manifest: Manifest) -> list[dict]:
    """Documents for the ingest table, with whether their file is still where the manifest says."""
    return [{**dict(row), "missing": not os.path.exists(row["path"])} for row in manifest.documents()]


FOLDER_CHARS = 56  # what the Documents table's folder column (400 px wide) shows whole at 1440 px


def folder_words(path: str, chars: int = FOLDER_CHARS) -> str:
    """A document's folder as the Documents table shows it: whole where it fits, else its head cut ("…" then
    its end), since the end is what tells two folders apart ("…/data/uploads", not "/home/ana/cur…")."""
    folder = os.path.dirname(path) or path
    if len(folder) <= chars:
        return folder
    tail = folder[len(folder) - chars + 1:]
    return "…" + (tail[tail.index(os.sep):] if os.sep in tail[1:] else tail)  # from a folder's start


def missing_sources(manifest: Manifest) -> list[str]:
    """Paths of live documents whose PDF is gone: their pages can be reviewed but not opened or exported."""
    rows = manifest.conn.execute(f"SELECT d.path FROM documents d WHERE {LIVE_DOCUMENT_SQL} ORDER BY d.path")
    return [row[0] for row in rows if not os.path.exists(row[0])]


UNREADABLE = ("failed", "not-pdf", "empty", "encrypted", "outside", "too-long")  # document statuses that give no page


def unreadable_documents(manifest: Manifest, paths) -> list[sqlite3.Row]:
    """The documents at `paths` (as an ingest job lists them) that could not be read, with the reason."""
    return manifest.conn.execute(  # the paths as one JSON list: an archive may hold more than SQLite's variables
        f"SELECT path, status, error FROM documents WHERE path IN (SELECT value FROM json_each(?)) AND status IN "
        f"({', '.join(repr(s) for s in UNREADABLE)}) ORDER BY path", (json.dumps([str(p) for p in paths]),)).fetchall()


def job_outcome(manifest: Manifest, job: sqlite3.Row | dict) -> str:
    """How a finished ingest went, as the colour of its message: "error" when none of its documents could be
    read, "warning" when some documents or pages failed, else "success"."""
    paths = [str(p) for p in json.loads(job["args"] or "{}").get("paths", [])] if job["kind"] == "ingest" else []
    if not paths:
        return "success"
    unreadable, pages_failed = manifest.conn.execute(
        f"SELECT COALESCE(SUM(status IN ({', '.join(repr(s) for s in UNREADABLE)})), 0), COALESCE(SUM(failed), 0) "
        f"FROM documents WHERE status != 'replaced' AND path IN (SELECT value FROM json_each(?))",
        (json.dumps(paths),)).fetchone()
    if unreadable == len(paths):
        return "error"
    return "warning" if unreadable or pages_failed else "success"


def job_progress(job: sqlite3.Row | dict) -> dict:
    """A job row as a person reads it: fraction done, speed and time left as text. Until the speed is known,
    the time since it started, so the line moves from the first second."""
    done, total = job["done"] or 0, job["total"] or 0
    return {
        "fraction": min(1.0, done / total) if total else 0.0,
        "done": done,
        "total": total,
        "rate": f"{job['rate']:.1f} pages/s" if job["rate"] else f"{duration(elapsed(job))} so far",
        "eta": duration(job["eta"]) + " left" if job["eta"] is not None and job["status"] == "running" else "",
    }


def elapsed(job: sqlite3.Row | dict) -> float:
    """Seconds since the job started (0 when its start cannot be read)."""
    try:
        started = dt.datetime.fromisoformat(job["started_at"])
    except (KeyError, IndexError, TypeError, ValueError):
        return 0.0
    return max(0.0, (dt.datetime.now(dt.timezone.utc) - started).total_seconds())


def duration(seconds: float | None) -> str:
    if seconds is None:
        return ""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


@dataclass(frozen=True)
class Step:
    page: str  # the page script that does it
    label: str
    why: str


def next_steps(summary: dict, rule_saved: bool, job_running: bool, *, picture_area_min: float = DEFAULT_PICTURE_AREA_MIN,
               suggestions: int = 0, pictures_kept: int | None = None) -> list[Step]:
    """What a curator should do next, in workflow order, given what the manifest holds.

    `rule_saved`: whether a rule or cutoff was ever saved; `suggestions`: pages the model suggests for;
    `pictures_kept`: the pictures the saved decision keeps (what the export cuts apart), when known.
    """
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
    rule = summary.get("rule", DEFAULT_RULE)
    in_words = rule_summary(rule, summary["threshold"], picture_area_min)
    if not rule_saved:
        steps.append(Step("pages/threshold.py", "Choose the decision rule and its cutoff",
                          f"Pages are decided by the {in_words[0].lower() + in_words[1:]} (the default). See what "
                          f"it keeps, compare it with σ only, the original method, and look at the pages at the edge."))
    if summary["overrides"] == 0:
        steps.append(Step("pages/review.py", "Review the pages at the edge",
                          "Include the engravings the rule misses, exclude the pages it keeps wrongly; every "
                          "decision you make also teaches the model."))
    elif summary["overrides"] >= learn.MIN_LABELS and not suggestions:
        steps.append(Step("pages/review.py", "Let the model learn from your overrides",
                          f"You have made {summary['overrides']:,} overrides: press Learn from my overrides on "
                          "Review, then look at the pages where the model disagrees with the rule."))
    if pictures_kept is None:
        kept = f"{summary['kept']:,} pages are kept now ({in_words}, and your overrides)."
    else:
        kept = (f"{pictures_kept:,} pictures are kept now, on {summary['kept']:,} kept pages ({in_words}, and your "
                "overrides): the export writes each picture as its own image (a kept page without a picture whole).")
    steps.append(Step("pages/export.py", "Export the training set", kept))
    return steps
