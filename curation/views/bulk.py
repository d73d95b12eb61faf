"""A bulk action (include, exclude, clear or caption every page or picture of a view) described as data, so it
runs in the page's script on a small view and as a job of the manifest on a large one.

`Bulk` says what to do to which view; `run` does it in one transaction, as the dashboard always did; `run_job`
(`python -m curation bulk`, which the Review page launches for a view over JOB_MIN pages or pictures) takes the
view once into a temporary table and writes it a chunk per short transaction, each chunk with its history
rows and the job's progress, all under one history action, so the whole bulk action is undone in one step.

Stopped or killed part-way, the manifest is consistent: every chunk written is written with its history, and
nothing else is (a chunk is one transaction). The action then holds the chunks written so far, and undo takes
back exactly those. The same bulk action started again resumes it: the view is taken again (the pages or
pictures already done no longer differ from the value asked for, so they record and write nothing) and the
rest joins the same history action, so the two runs are still undone as one.
"""

from __future__ import annotations

import dataclasses
import json

from ..decisions import picture_similarity
from ..manifest import history
from ..manifest.history import now
from ..manifest.store import Manifest
from . import cutoff_counts, filters, picture_bulk, picture_views, review

JOB = "bulk"  # the job kind of `python -m curation bulk`
JOB_MIN = 10_000  # a view with more pages or pictures than this is changed by a job, not in the script run
CHUNK = 10_000  # pages or pictures written in one transaction by the job: about 0.2 s at 1 M pages
DOINGS = {"include": True, "exclude": False, "clear": None, "caption": None}


@dataclasses.dataclass(frozen=True)
class Bulk:
    """What a bulk action does (`do`: include, exclude, clear or caption, with `text` and `replace` for a
    caption) to which view: `view` "pages" (`filter`, a views.PageFilter's fields) or "pictures" (a
    picture_views.PictureFilter's), under the decision `threshold`, `rule` and `picture_area_min`; with `like`,
    only the view's pictures at least `like["similarity"]` alike to `like["picture"]` (More like this)."""

    view: str
    do: str
    filter: dict
    threshold: float | None = None
    rule: str | None = None
    picture_area_min: float | None = None
    text: str | None = None
    replace: bool = False
    like: dict | None = None  # pictures only: {"picture": id, "similarity": s}, the view's pictures that alike


    def __post_init__(self):
        if self.view not in ("pages", "pictures"):
            raise ValueError(f"a bulk action applies to pages or pictures, not {self.view!r}")
        if self.do not in DOINGS:
            raise ValueError(f"a bulk action includes, excludes, clears or captions, not {self.do!r}")

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Bulk:
        return cls(**json.loads(text))

    @property
    def unit(self) -> str:
        return self.view

    @property
    def kind(self) -> str:
        """The history's kind of the action."""
        return "picture" if self.view == "pictures" else ("caption" if self.do == "caption" else "override")

    def note(self, manifest: Manifest) -> str | None:
        return review.view_note(manifest, filters.PageFilter(**self.filter)) if self.view == "pages" else None

    def take(self, manifest: Manifest, name: str) -> int:
        """The view's pages or pictures this action writes, taken now as the temporary table `name`; how many."""
        if self.view == "pages":
            extra = review.caption_condition(self.replace) if self.do == "caption" else ""
            return review.bulk_pages_table(manifest, name, self.threshold, filters.PageFilter(**self.filter),
                                           self.rule, self.picture_area_min, extra)
        extra = picture_bulk.caption_condition(self.replace) if self.do == "caption" else ""
        if self.like is not None:
            picture_similarity.hold_like(manifest, self.like["picture"], self.like["similarity"])
            extra += " " + picture_similarity.AMONG_LIKE
        return picture_bulk.bulk_pictures_table(manifest, name, self.threshold,
                                                 picture_views.PictureFilter(**self.filter), self.rule, extra)

    def write(self, manifest: Manifest, action: int, keys: str) -> None:
        """Write the action to the pages or pictures of the table `keys`, recorded under `action`."""
        module = review if self.view == "pages" else picture_bulk
        if self.do == "caption":
            module.write_captions(manifest, action, keys, self.text)
        else:
            module.write_overrides(manifest, action, keys, DOINGS[self.do])


def run(manifest: Manifest, bulk: Bulk) -> int:
    """The bulk action in one transaction, recorded as one action; how many pages or pictures the view held."""
    with manifest.recording(bulk.kind, bulk.note(manifest)) as action:
        try:
            count = bulk.take(manifest, "bulk_keys")
            bulk.write(manifest, action, "temp.bulk_keys")
        finally:
            for name in ("bulk_keys", picture_similarity.LIKE_TABLE):
                manifest.conn.execute(f"DROP TABLE IF EXISTS temp.{name}")
    return count


def is_job(count: int, minimum: int | None = None) -> bool:
    """Whether a view of `count` pages or pictures is changed by a job (more than `minimum`, JOB_MIN)."""
    return count > (JOB_MIN if minimum is None else minimum)


def run_job(manifest: Manifest, bulk: Bulk, chunk: int | None = None) -> int:
    """The bulk action as a job of the manifest: a chunk of pages or pictures per transaction under one history
    action, with the job's progress, stopped on request between chunks; resumes the same action stopped or
    killed before. Returns how many it wrote in this run. Raises JobRunning while another bulk job runs."""
    chunk = chunk or CHUNK
    previous = manifest.latest_job(JOB)
    job_id = manifest.start_job(JOB, dataclasses.asdict(bulk))
    written, action = 0, None
    try:
        with manifest.transaction():
            action = _resumed(manifest, previous, bulk) or history.begin(
                manifest.conn, manifest.user, bulk.kind, now(), bulk.note(manifest), manifest.account)
            total = bulk.take(manifest, "bulk_job_keys")
            # Until it ends, the action says what it is doing (the Undo bar may show it meanwhile).
            manifest.conn.execute("UPDATE history SET description = ? WHERE id = ?",
                                  (f"{_words(bulk, total)} (running)", action))
            manifest.update_job(job_id, args=json.dumps({**dataclasses.asdict(bulk), "action": action}), done=0,
                                total=total, message=_words(bulk, total))
        last = 0
        while written < total:
            with manifest.transaction():
                if _undone(manifest, action):
                    manifest.finish_job(job_id, "stopped", "the bulk action was undone while it ran")
                    return written
                manifest.conn.execute("DROP TABLE IF EXISTS temp.bulk_chunk")
                manifest.conn.execute("CREATE TEMP TABLE bulk_chunk AS SELECT rowid AS seq, * FROM temp.bulk_job_keys "
                                      "WHERE rowid > ? ORDER BY rowid LIMIT ?", (last, chunk))
                count, last = manifest.conn.execute("SELECT COUNT(*), MAX(seq) FROM temp.bulk_chunk").fetchone()
                bulk.write(manifest, action, "temp.bulk_chunk")
                written += count
                manifest.update_job(job_id, done=written, total=total)
            if written < total and manifest.stop_requested(job_id):
                _end(manifest, job_id, action, "stopped", f"stopped after {written:,} of {total:,} {bulk.unit}; "
                     "undo takes back what was written, the same bulk action again does the rest")
                return written

        cutoff_counts.counted_after_job(manifest)  # Threshold's tables, for the decisions written
        _end(manifest, job_id, action, "done", f"{_words(bulk, total)}: done")
    except BaseException as exc:
        if manifest.conn.in_transaction:
            manifest.conn.rollback()
        _end(manifest, job_id, action, "failed", f"the bulk action failed after {written:,} {bulk.unit}: {exc}")
        raise
    finally:
        for name in ("bulk_chunk", "bulk_job_keys", picture_similarity.LIKE_TABLE):
            manifest.conn.execute(f"DROP TABLE IF EXISTS temp.{name}")
    return written


def _end(manifest: Manifest, job_id: int, action: int | None, status: str, message: str) -> None:
    """The job's outcome, and its action described as it stands (what was written)."""
    with manifest.transaction():
        if action is not None:
            history.finish(manifest.conn, action)
        manifest.finish_job(job_id, status, message)


def settle(manifest: Manifest) -> None:
    """Describe the action of a bulk job whose process died (killed, the machine stopped) as it stands, so the
    history and Undo say what it wrote, not that it runs; the same bulk action again still resumes it."""
    job = manifest.latest_job(JOB)  # a job whose process died is marked interrupted here
    if job is None or job["status"] != "interrupted":
        return
    action = json.loads(job["args"] or "{}").get("action")
    row = history.action(manifest.conn, action) if action is not None else None
    if row is not None and (row["description"] or "").endswith("(running)"):
        with manifest.transaction():
            history.finish(manifest.conn, action)


def _resumed(manifest: Manifest, previous, bulk: Bulk) -> int | None:
    """The history action of the previous bulk job when it was this same bulk action, ended before it finished
    and not undone: this run joins it. Any other unfinished one is described as it stands (history.finish)."""
    if previous is None or previous["status"] not in ("stopped", "interrupted", "failed"):
        return None
    args = json.loads(previous["args"] or "{}")
    action = args.pop("action", None)
    if action is None or history.action(manifest.conn, action) is None:
        return None
    if args == dataclasses.asdict(bulk) and not _undone(manifest, action):
        return action
    history.finish(manifest.conn, action)
    return None


def _undone(manifest: Manifest, action: int) -> bool:
    row = manifest.conn.execute("SELECT undone_by FROM history WHERE id = ?", (action,)).fetchone()
    return row is None or row[0] is not None


def _words(bulk: Bulk, total: int) -> str:
    verb = {"include": "including", "exclude": "excluding", "clear": "clearing the overrides of",
            "caption": "captioning"}[bulk.do]
    like = (f" like picture {bulk.like['picture']} (likeness {bulk.like['similarity']:.2f} and up)"
            if bulk.like else "")
    return f"{verb} {total:,} {bulk.unit}{like}"
