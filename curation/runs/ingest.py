"""Ingest: hash the archive's PDFs, then score every page not yet in the manifest.

The unit of work is a `Task`: inspect one document, or score a range of its pages. Tasks run in a
`concurrent.futures` executor (a process pool by default: MuPDF is not thread-safe) and only the
coordinator writes to the manifest, one transaction per finished task. A run that is killed loses
at most the tasks in flight; the next run plans only the pages that have no row yet.

The task and what a worker makes of it are `ingest_task`'s, the local pool `worker_pool`'s and the
scheduling that survives crashes and time-outs `scheduler`'s.
"""

from __future__ import annotations

import concurrent.futures as cf
import os
import pathlib
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from guards import uploads as server_limits

from ..captions.legend import check_languages, engine_note, installed_languages
from ..decisions.duplicates import refresh_duplicates
from ..manifest import finders
from ..manifest.store import Manifest
from ..pictures import finder, verdict
from ..scoring.features import FEATURES_VERSION
from ..scoring.result import PageResult
from ..sources.paths import REFUSAL, document_roots, reading_roots
from ..views import cutoff_counts
from ..sources.reader import (MISNAMED, DocumentError, DocumentInfo, OutsideAllowedFolders, error_text, exists,
                              file_sha256, file_stat, find_pdfs)
from ..views.jobs import unreadable_documents
from .embed import missing_parts
from .ingest_task import Task, run_task
from .jobs import DiskFull, JobProgress, Stopped, claim_manifest, is_disk_full, plural, stop_on_sigterm
from .scheduler import CRASH_MESSAGE, Scheduler, timeout_message
from .worker_pool import bounded_pool, default_workers, kill_executor, process_pool

# The picture stages other than the rules, each of which says before any page is read what it lacks.
CHECKED_FINDERS = {"network": finder, "learned": verdict}
PAGES_PER_TASK = 16
TOO_LONG = "too-long"  # a document's status: more pages than the server's bound (guards.uploads.max_pages)


@dataclass
class IngestReport:
    documents: int = 0
    new_documents: int = 0
    pages_scored: int = 0
    pages_failed: int = 0
    pages_timed_out: int = 0  # of pages_failed: skipped for the time limit
    documents_failed: int = 0  # this run's documents that gave no page: not a PDF, empty, encrypted, broken
    refused: int = 0  # files not read: their real path is outside the allowed folders
    misnamed: list[str] = field(default_factory=list)  # files not read: their names (escaped) are not UTF-8
    crashes: int = 0  # workers lost to a crash, each followed by retries
    timeouts: int = 0  # executors torn down because a task ran past the page time limit
    seconds: float = 0.0
    page_timeout: float | None = None
    legend_note: str | None = None  # why legends were not read, and how to get them
    stopped: bool = False
    problems: list[str] = field(default_factory=list)

    @property
    def pages_per_second(self) -> float:
        return self.pages_scored / self.seconds if self.seconds else 0.0

    @property
    def failures(self) -> str:
        """'3 failed' (pages), '1 document failed', '1 document and 3 pages failed', with how many pages
        were over the time limit; the reasons are in the summary's tail, `docs` and the Ingest page."""
        if not self.documents_failed:
            text = f"{self.pages_failed} failed"
        elif not self.pages_failed:
            text = f"{plural(self.documents_failed, 'document')} failed"
        else:
            text = f"{plural(self.documents_failed, 'document')} and {plural(self.pages_failed, 'page')} failed"
        if self.pages_timed_out:
            text += f" ({self.pages_timed_out} over the {self.page_timeout:g} s time limit)"
        return text

    @property
    def incidents(self) -> str:
        """'; 2 worker crashes retried, 1 time-out' when there were any, else ''."""
        parts = []
        if self.refused:
            parts.append(f"{self.refused} file{'' if self.refused == 1 else 's'} refused: {REFUSAL}")
        if self.misnamed:  # named here, escaped: no listing of documents holds them
            more = f" and {len(self.misnamed) - 3} more" if len(self.misnamed) > 3 else ""
            parts.append(f"{plural(len(self.misnamed), 'file')} not read ({', '.join(self.misnamed[:3])}{more}): "
                         f"{MISNAMED}")
        if self.crashes:
            parts.append(f"{self.crashes} worker crash{'' if self.crashes == 1 else 'es'} retried")
        if self.timeouts:
            parts.append(f"{self.timeouts} time-out{'' if self.timeouts == 1 else 's'}")
        return "; " + ", ".join(parts) if parts else ""


def task_sizes(pages: int, workers: int, largest: int = PAGES_PER_TASK) -> Iterator[int]:
    """How many pages each scoring task takes, in order (an endless supply; `pages` in all is planned).

    Progress moves when a task's pages are saved, so the first task of each worker is one page (the first
    figures come after one page, not after sixteen), then each round of tasks doubles up to `largest`,
    which amortises opening the PDF. A run of few pages never gets that far: each worker gets at least
    four tasks, so one large PDF moves in steps of a few pages, whatever the number of documents."""
    cap = max(1, min(largest, pages // (4 * max(1, workers))))
    size, given = 1, 0
    while True:
        yield min(size, cap)
        given += 1
        if given % max(1, workers) == 0:
            size *= 2


class Ingest:
    """One ingest run over a manifest. Use `run()`; progress goes to `on_progress(done, total)`."""

    def __init__(self, manifest: Manifest, paths: Sequence[str | os.PathLike], *, workers: int | None = None,
                 pages_per_task: int = PAGES_PER_TASK,
                 make_executor: Callable[[int], cf.Executor] = process_pool, task_fn: Callable = run_task,
                 page_timeout: float | None = None, worker_memory: int | None = None, cluster=None,
                 roots: Sequence[str | os.PathLike] | None = None, legend_languages: str | None = None,
                 max_pages: int | None = None, on_progress: Callable[[int, int], None] = lambda done, total: None,
                 on_hash_progress: Callable[[int, int], None] = lambda done, total: None):
        """`page_timeout`: seconds a page may take (None: the manifest's setting; 0: no limit).
        `worker_memory`: bytes each pool worker may allocate (None: a fair share of the machine's).
        `cluster`: a `curation.runs.cluster.Cluster` whose workers run the tasks instead of a local pool.
        `roots`: the folders every file read must really lie in, checked as it is opened (None: the
        allowed folders, and `paths` that lie outside them: see `paths.reading_roots`).
        `legend_languages`: Tesseract's languages for the pictures' legends, e.g. "eng+deu" (None: the
        manifest's setting; "": none read). Without the OCR engine none are read (`report.legend_note`).
        `max_pages`: the most pages a document may have (None: the server's, guards.uploads.max_pages);
        a longer one is refused, status TOO_LONG, and looked at again by each later run."""
        self.manifest = manifest
        self.max_pages = max_pages or server_limits.max_pages()
        self.report = IngestReport()
        if roots is None:
            roots = reading_roots(manifest.path, manifest, paths)
        self.roots = tuple(str(root) for root in roots)
        # Raises before any work when a path is missing; a file refused or misnamed is said, the run goes on.
        self.pdfs = find_pdfs(paths, self.roots, self._refuse, self._misnamed)
        self.pages_per_task = pages_per_task
        self.page_timeout = (manifest.page_timeout if page_timeout is None else page_timeout) or None
        self.legend_languages = self._legend_languages(legend_languages)
        self.picture_finder = manifest.picture_finder
        # The network finds with the head this manifest learned from its curator's boxes, where it learned one.
        version = finders.current_version(manifest.conn) if self.picture_finder == finders.SHIPPED else None
        self.finder_weights = finders.weights(manifest.conn, version)
        self.finder_label = finders.label(self.picture_finder, version)
        # ... and judges its pictures with the judge it learned from its curator's decisions, where it learned one.
        self.picture_judge = finders.judge(manifest.conn) if self.picture_finder == finders.SHIPPED else None
        # The picture job follows where it is on and can run here: the workers cut its inputs from the pages
        # they decode, so it never reads a page again (curation.runs.embed).
        self.embedding_inputs = manifest.picture_job and missing_parts() is None
        # A picture scored under the score cutoff is judged not a picture: its legend waits until it is wanted.
        self.score_min = manifest.picture_score_min
        if self.picture_finder in CHECKED_FINDERS:
            # The network's ONNX export is made here, for this manifest's head, before any worker needs it.
            if self.picture_finder == "network":
                finder.check_installed(self.finder_weights)
            else:
                CHECKED_FINDERS[self.picture_finder].check_installed()
        self.kill = kill_executor
        # On a cluster the coordinator reading every byte would be the bottleneck: workers hash what they read.
        self.hash_in_workers = cluster is not None
        self.cluster = cluster
        if cluster is not None:
            cluster.check_paths(self.pdfs)  # before any work: a worker that cannot see the archive
            self.workers, self.make_executor, self.kill = cluster.workers(), cluster.make_executor, cluster.kill
        else:
            self.workers = workers or default_workers()
            self.make_executor = bounded_pool(make_executor, self.workers, worker_memory)
        self.task_fn = task_fn
        self.on_progress = on_progress
        self.on_hash_progress = on_hash_progress
        self.report.page_timeout = self.page_timeout
        self.job_id: int | None = None
        self._pending: list[int] = []
        self._remaining: dict[int, set[int]] = {}
        # The stop request is read by the scheduler, between tasks.
        self.progress = JobProgress(manifest, worked=lambda: self.report.pages_scored, checks_stop=False)

    def _legend_languages(self, chosen: str | None) -> str | None:
        """The languages legends are read in, checked before any work; None when none are read."""
        if chosen == "":
            return None
        if not installed_languages():
            self.report.legend_note = engine_note()
            return None
        return check_languages(self.manifest.legend_languages if chosen is None else chosen)

    def run(self) -> IngestReport:
        with stop_on_sigterm():
            return self._run()

    def _run(self) -> IngestReport:
        self.progress.start()
        self.job_id = self.progress.job_id = claim_manifest(
            self.manifest, "ingest", {"paths": [str(p) for p in self.pdfs], "workers": self.workers,
                                      "page_timeout": self.page_timeout, "legend_languages": self.legend_languages},
            self._room_needed)
        status, message = "failed", None
        scheduler = self._scheduler = Scheduler(
            self.make_executor, self.workers, self.task_fn, should_stop=lambda: self.manifest.stop_requested(self.job_id),
            on_idle=self.progress.beat, page_timeout=self.page_timeout, kill=self.kill)
        try:
            if self.cluster is not None:  # the job panel shows it while the job runs: workers, dashboard link
                self.manifest.update_job(self.job_id, message=self.cluster.describe())
            documents = self._register_documents()
            scheduler.run(self._inspect_tasks(documents), self._on_result, self._on_crash, self._on_timeout)
            self._plan_totals()
            scheduler.run(self._score_tasks(), self._on_result, self._on_crash, self._on_timeout)
            if self.report.pages_scored:
                refresh_duplicates(self.manifest)
                cutoff_counts.counted_after_job(self.manifest)  # Threshold's tables, for what was scored
            self.manifest.remove_orphan_thumbnails()
            status = "done"
        except (Stopped, KeyboardInterrupt):
            self.report.stopped = True
            status, message = "stopped", "stopped; run ingest again to resume"
        except Exception as exc:
            if not is_disk_full(exc):
                message = error_text(exc)
                raise
            full = DiskFull(self.manifest.path, self._room_needed())
            message = str(full)
            raise full from None
        finally:
            self.report.seconds = time.monotonic() - self.progress.started
            self.report.crashes, self.report.timeouts = scheduler.crashes, scheduler.timeouts
            self.progress.finish(status, message or self._summary(),
                                 lambda: DiskFull(self.manifest.path, self._room_needed()))
        return self.report

    # -- planning -----------------------------------------------------------------------------

    def _register_documents(self) -> list:
        stats = [(path, file_stat(path)) for path in self.pdfs]
        to_hash = [(p, s) for p, s in stats if self.manifest.cached_hash(str(p), s.st_size, s.st_mtime_ns) is None]
        total_bytes, hashed = sum(s.st_size for _, s in to_hash), 0

        def advance(n: int) -> None:
            nonlocal hashed
            hashed += n
            self.on_hash_progress(hashed, total_bytes)

        read = self._read_in_workers(to_hash, advance) if self.hash_in_workers else {}
        documents = []
        for path, stat in stats:
            sha = self.manifest.cached_hash(str(path), stat.st_size, stat.st_mtime_ns)
            if sha is None:
                # A file its worker could not read (or crashed on) is hashed here, and inspected as ever.
                try:
                    sha = read[str(path)][0] if str(path) in read else file_sha256(path, advance, self.roots)
                except OutsideAllowedFolders:  # replaced by a link since it was listed
                    self._refuse(path)
                    continue
                self.manifest.remember_hash(str(path), stat.st_size, stat.st_mtime_ns, sha)
                self.progress.beat()
            known = self.manifest.document_by_hash(sha) is not None
            doc = self.manifest.register_document(sha, str(path), stat.st_size)
            if str(path) in read and doc["status"] == "pending" and doc["pages"] is None:
                self._on_inspected(Task(doc["id"], str(path)), read[str(path)][1])
                doc = self.manifest.document(doc["id"])
            documents.append(doc)
            self.report.new_documents += not known
        self.report.documents = len(documents)
        return documents

    def _read_in_workers(self, to_hash, advance) -> dict:
        """{path: (sha256, what inspecting it gave)} for the files the workers could read."""
        sizes = {str(path): stat.st_size for path, stat in to_hash}
        read = {}
        for task, result in self._scheduler.results(Task(None, path, hash=True, roots=self.roots) for path in sizes):
            advance(sizes[task.path])
            if isinstance(result, tuple):
                read[task.path] = result
            self.progress.beat()
        return read

    def _inspect_tasks(self, documents) -> list[Task]:
        # A document refused for its length is opened again: the server's bound may have been raised since.
        self._pending = [doc["id"] for doc in documents if doc["status"] in ("pending", TOO_LONG)]
        return [Task(doc["id"], doc["path"], roots=self.roots) for doc in documents
                if (doc["status"] == "pending" and doc["pages"] is None) or doc["status"] == TOO_LONG]

    def _plan_totals(self) -> None:
        for doc_id in self._pending:
            doc = self.manifest.document(doc_id)
            if doc["status"] == "pending" and doc["pages"]:
                self._remaining[doc_id] = self._pages_to_score(doc)
        live = self.manifest.conn.execute(
            "SELECT COALESCE(SUM(pages), 0) FROM documents WHERE status != 'replaced' AND id IN "
            f"({','.join(str(int(i)) for i in self._pending) or 'NULL'})"
        ).fetchone()[0]
        self.progress.total = int(live)
        self.progress.done = self.progress.total - sum(len(r) for r in self._remaining.values())
        self.progress.beat(force=True)
        for doc_id, remaining in list(self._remaining.items()):
            if not remaining:  # scored by a run that died before it could close the document
                self._close_document(doc_id)

    def _pages_to_score(self, doc) -> set[int]:
        return set(range(doc["pages"])) - self.manifest.done_pages(doc["id"])

    def _score_tasks(self):
        sizes = task_sizes(sum(map(len, self._remaining.values())), self.workers, self.pages_per_task)
        for doc_id, remaining in list(self._remaining.items()):
            path = self.manifest.document(doc_id)["path"]
            pages = sorted(remaining)
            start = 0
            while start < len(pages):
                end = start + next(sizes)
                yield Task(doc_id, path, tuple(pages[start:end]), roots=self.roots,
                           legend_languages=self.legend_languages, picture_finder=self.picture_finder,
                           embedding_inputs=self.embedding_inputs, finder_weights=self.finder_weights,
                           picture_judge=self.picture_judge,
                           score_min=self.score_min)
                start = end

    def _refuse(self, path) -> None:
        """A file not read because it really lies outside the allowed folders: said in the job's summary."""
        self.report.refused += 1
        self.report.problems.append(f"{path}: not read, {REFUSAL}")

    def _misnamed(self, name: str) -> None:
        """A file not read because its name is not valid UTF-8: said, escaped, in the job's summary."""
        self.report.misnamed.append(name)
        self.report.problems.append(f"{name}: not read, {MISNAMED}")

    # -- results ------------------------------------------------------------------------------

    def _on_result(self, task: Task, result) -> None:
        if task.pages is None:
            self._on_inspected(task, result)
        elif isinstance(result, Exception):
            # The file vanished or could not be opened now: leave the pages unscored for a later run.
            self.manifest.set_document(task.doc_id, status="pending", error=f"not finished: {error_text(result)}")
            self.report.problems.append(f"{task.path}: {error_text(result)}")
            self._remaining.pop(task.doc_id, None)
        else:
            self._save(task.doc_id, result)

    def _on_inspected(self, task: Task, result) -> None:
        if isinstance(result, DocumentInfo) and result.pages > self.max_pages:
            result = DocumentError(TOO_LONG, f"{result.pages:,} pages, over the server's limit of {self.max_pages:,} "
                                             "pages per document (CURATION_MAX_PAGES); not read")
        if isinstance(result, DocumentInfo):
            self.manifest.set_document(task.doc_id, status="pending", error=result.note, pages=result.pages)
            return
        status = result.status if isinstance(result, DocumentError) else "failed"
        self.manifest.set_document(task.doc_id, status=status, error=error_text(result), pages=0 if status == "empty" else None)
        self.report.problems.append(f"{task.path}: {error_text(result)}")

    def _on_crash(self, task: Task) -> None:
        if task.pages is None:
            self._on_inspected(task, DocumentError("failed", "the PDF engine crashed while opening this file (twice)"))
        else:
            self._save(task.doc_id, [PageResult(page=n, status="failed", error=CRASH_MESSAGE) for n in task.pages])

    def _on_timeout(self, task: Task) -> None:
        if task.pages is None:
            self._on_inspected(task, DocumentError("failed", timeout_message(self.page_timeout, "open")))
        else:
            message = timeout_message(self.page_timeout)
            self.report.pages_timed_out += len(task.pages)
            self._save(task.doc_id, [PageResult(page=n, status="failed", error=message) for n in task.pages])

    def _save(self, doc_id: int, results: list[PageResult]) -> None:
        self.manifest.save_pages(doc_id, results, self.finder_label)
        failed = sum(r.status == "failed" for r in results)
        self.report.pages_failed += failed
        self.report.pages_scored += len(results) - failed
        self.progress.done += len(results)
        remaining = self._remaining.get(doc_id)
        if remaining is not None:
            remaining.difference_update(r.page for r in results)
            if not remaining:
                self._close_document(doc_id)
        self.on_progress(self.progress.done, self.progress.total)
        self.progress.beat()

    def _close_document(self, doc_id: int) -> None:
        self.manifest.finish_document(doc_id)
        self._remaining.pop(doc_id, None)

    # -- progress -----------------------------------------------------------------------------

    def _room_needed(self) -> int:
        """What the pages left would add to the manifest, at the bytes per page it holds so far."""
        db = pathlib.Path(self.manifest.path)
        size = sum(p.stat().st_size for p in (db, db.with_name(db.name + "-wal")) if p.exists())
        pages = self.manifest.conn.execute("SELECT COUNT(*) FROM pages").fetchone()[0]
        return max(1, self.progress.total - self.progress.done) * (size // max(1, pages))

    def _summary(self) -> str:
        r = self.report
        unreadable = self._unreadable()
        return (f"{plural(r.documents, 'document')} ({r.new_documents} new), {plural(r.pages_scored, 'page')} scored, "
                f"{r.failures}, in {r.seconds:.1f} s{r.incidents}{unreadable}")

    def _unreadable(self) -> str:
        """'; 1 document could not be read: fake.pdf: not a PDF …' for this run's documents that give no page
        (counted in the report's documents_failed)."""
        failed = unreadable_documents(self.manifest, self.pdfs)
        self.report.documents_failed = len(failed)
        if not failed:
            return ""
        reasons = "; ".join(f"{pathlib.Path(row['path']).name}: {row['error'] or row['status']}" for row in failed[:3])
        more = f"; and {len(failed) - 3} more (listed on the Ingest page)" if len(failed) > 3 else ""
        return f"; {plural(len(failed), 'document')} could not be read: {reasons}{more}"


class Rescore(Ingest):
    """Score pages again with the current scorer: pages whose features are missing or older than
    FEATURES_VERSION, or every page with `all_pages`. Scores are replaced; overrides, captions and
    documents are not touched. Runs as an ingest job, so it never overlaps one."""

    def __init__(self, manifest: Manifest, *, all_pages: bool = False, **options):
        if options.get("roots") is None:
            options["roots"] = document_roots(manifest.path, manifest)
        super().__init__(manifest, [], **options)
        self.all_pages = all_pages

    def _register_documents(self) -> list:
        documents = []
        for doc in self.manifest.documents():
            if doc["status"] not in ("ok", "partial") or not doc["pages"]:
                continue
            if not exists(doc["path"]):
                self.report.problems.append(f"{doc['path']}: the file is gone; its pages keep their old scores")
                continue
            self.manifest.set_document(doc["id"], status="pending", error=doc["error"])
            documents.append(self.manifest.document(doc["id"]))
        self.report.documents = len(documents)
        return documents

    def _pages_to_score(self, doc) -> set[int]:
        if self.all_pages:
            return set(range(doc["pages"]))
        stale = self.manifest.conn.execute(
            "SELECT page FROM pages WHERE doc_id = ? AND status = 'ok' "
            "AND (features_version IS NULL OR features_version < ?)", (doc["id"], FEATURES_VERSION))
        return {row[0] for row in stale} | (set(range(doc["pages"])) - self.manifest.done_pages(doc["id"]))


def ingest(manifest: Manifest, paths: Sequence[str | os.PathLike], **options) -> IngestReport:
    """Score every page of the PDFs under `paths` that the manifest does not hold yet."""
    return Ingest(manifest, paths, **options).run()
