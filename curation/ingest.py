"""Ingest: hash the archive's PDFs, then score every page not yet in the manifest.

The unit of work is a `Task`: inspect one document, or score a range of its pages. Tasks run in a
`concurrent.futures` executor (a process pool by default: MuPDF is not thread-safe) and only the
coordinator writes to the manifest, one transaction per finished task. A run that is killed loses
at most the tasks in flight; the next run plans only the pages that have no row yet.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
import pathlib
import signal
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import pymupdf

from .jobs import Stopped, stop_on_sigterm
from .manifest import Manifest, PageResult
from .reader import DocumentError, DocumentInfo, error_text, file_sha256, find_pdfs, inspect_document, open_document
from .duplicates import refresh_duplicates
from .features import FEATURES_VERSION
from .scorer import score_page

PAGES_PER_TASK = 16
TASKS_PER_CHILD = 500  # a worker is replaced now and then so nothing it leaks can pile up
PROGRESS_INTERVAL = 0.5
CRASH_MESSAGE = "the PDF engine crashed on this page (twice, in fresh workers); skipped"


@dataclass(frozen=True)
class Task:
    """Inspect a document (`pages` is None) or score the listed pages of it."""

    doc_id: int
    path: str
    pages: tuple[int, ...] | None = None


@dataclass
class IngestReport:
    documents: int = 0
    new_documents: int = 0
    pages_scored: int = 0
    pages_failed: int = 0
    seconds: float = 0.0
    stopped: bool = False
    problems: list[str] = field(default_factory=list)

    @property
    def pages_per_second(self) -> float:
        return self.pages_scored / self.seconds if self.seconds else 0.0


def run_task(task: Task):
    """Worker side: what one task produces. Runs in a worker process."""
    if task.pages is None:
        try:
            return inspect_document(task.path)
        except DocumentError as exc:
            return exc
    doc = open_document(task.path)
    try:
        return [_score_and_shrink(doc, number) for number in task.pages]
    finally:
        doc.close()


def _score_and_shrink(doc, number: int) -> PageResult:
    try:
        return score_page(doc, number)
    finally:
        # MuPDF caches every image it touched (up to 256 MB per process); a page is never needed twice.
        pymupdf.TOOLS.store_shrink(100)


def _init_worker() -> None:
    # Ctrl-C is the coordinator's to handle; workers are shut down by it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # MuPDF's messages would garble the progress bar; the reasons are recorded per document instead.
    pymupdf.TOOLS.mupdf_display_errors(False)
    pymupdf.TOOLS.mupdf_display_warnings(False)


def process_pool(workers: int) -> cf.Executor:
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["curation.ingest"])
    return cf.ProcessPoolExecutor(
        max_workers=workers, mp_context=context, initializer=_init_worker, max_tasks_per_child=TASKS_PER_CHILD
    )


def default_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))


class Scheduler:
    """Runs tasks on an executor and survives workers that die.

    When a worker process dies the pool is broken and every task in flight is a suspect: each one
    is retried alone in a fresh worker. A task that crashes again alone is split into single pages,
    each run alone, so only the page that kills the engine is marked failed.
    """

    def __init__(self, make_executor: Callable[[int], cf.Executor], workers: int,
                 task_fn: Callable = run_task, should_stop: Callable[[], bool] = lambda: False,
                 on_idle: Callable[[], None] = lambda: None):
        self.make_executor = make_executor
        self.workers = workers
        self.task_fn = task_fn
        self.should_stop = should_stop
        self.on_idle = on_idle

    def run(self, tasks: Iterable[Task], on_result: Callable[[Task, object], None],
            on_crash: Callable[[Task], None]) -> None:
        queue = deque(tasks)
        while queue:
            suspects = self._run_pool(queue, on_result)
            for task in suspects:
                self._run_alone(task, on_result, on_crash, split=True)

    def _run_pool(self, queue: deque, on_result) -> list[Task]:
        executor = self.make_executor(self.workers)
        in_flight: dict[cf.Future, Task] = {}
        try:
            while queue or in_flight:
                while queue and len(in_flight) < 2 * self.workers:
                    task = queue.popleft()
                    in_flight[executor.submit(self.task_fn, task)] = task
                done, _ = cf.wait(in_flight, timeout=PROGRESS_INTERVAL, return_when=cf.FIRST_COMPLETED)
                broken = []
                for future in done:
                    task = in_flight.pop(future)
                    try:
                        result = future.result()
                    except cf.BrokenExecutor:
                        broken.append(task)
                        continue
                    except Exception as exc:  # a bug or an I/O error in the worker, not a crash
                        result = exc
                    on_result(task, result)
                if broken:
                    return broken + list(in_flight.values())
                self.on_idle()
                if self.should_stop():
                    raise Stopped()
            return []
        finally:
            executor.shutdown(wait=not in_flight, cancel_futures=True)

    def _run_alone(self, task: Task, on_result, on_crash, split: bool) -> None:
        if self.should_stop():
            raise Stopped()
        executor = self.make_executor(1)
        try:
            result = executor.submit(self.task_fn, task).result()
        except cf.BrokenExecutor:
            if split and task.pages is not None and len(task.pages) > 1:
                for number in task.pages:
                    self._run_alone(Task(task.doc_id, task.path, (number,)), on_result, on_crash, split=False)
            else:
                on_crash(task)
            return
        except Exception as exc:
            result = exc
        finally:
            executor.shutdown(wait=True)
        on_result(task, result)


class Ingest:
    """One ingest run over a manifest. Use `run()`; progress goes to `on_progress(done, total)`."""

    def __init__(self, manifest: Manifest, paths: Sequence[str | os.PathLike], *, workers: int | None = None,
                 pages_per_task: int = PAGES_PER_TASK,
                 make_executor: Callable[[int], cf.Executor] = process_pool, task_fn: Callable = run_task,
                 on_progress: Callable[[int, int], None] = lambda done, total: None,
                 on_hash_progress: Callable[[int, int], None] = lambda done, total: None):
        self.manifest = manifest
        self.pdfs = find_pdfs(paths)  # raises before any work when a path is missing
        self.workers = workers or default_workers()
        self.pages_per_task = pages_per_task
        self.make_executor = make_executor
        self.task_fn = task_fn
        self.on_progress = on_progress
        self.on_hash_progress = on_hash_progress
        self.report = IngestReport()
        self.job_id: int | None = None
        self._pending: list[int] = []
        self._remaining: dict[int, set[int]] = {}
        self._done = 0
        self._total = 0
        self._started = 0.0
        self._last_beat = 0.0

    def run(self) -> IngestReport:
        with stop_on_sigterm():
            return self._run()

    def _run(self) -> IngestReport:
        self._started = time.monotonic()
        self.job_id = self.manifest.start_job("ingest", {"paths": [str(p) for p in self.pdfs], "workers": self.workers})
        status, message = "failed", None
        try:
            documents = self._register_documents()
            scheduler = Scheduler(self.make_executor, self.workers, self.task_fn,
                                  should_stop=lambda: self.manifest.stop_requested(self.job_id),
                                  on_idle=self._heartbeat)
            scheduler.run(self._inspect_tasks(documents), self._on_result, self._on_crash)
            self._plan_totals()
            scheduler.run(self._score_tasks(), self._on_result, self._on_crash)
            if self.report.pages_scored:
                refresh_duplicates(self.manifest)
            status = "done"
        except (Stopped, KeyboardInterrupt):
            self.report.stopped = True
            status, message = "stopped", "stopped; run ingest again to resume"
        except Exception as exc:
            message = error_text(exc)
            raise
        finally:
            self.report.seconds = time.monotonic() - self._started
            self._heartbeat(force=True)
            self.manifest.finish_job(self.job_id, status, message or self._summary())
        return self.report

    # -- planning -----------------------------------------------------------------------------

    def _register_documents(self) -> list:
        stats = [(path, path.stat()) for path in self.pdfs]
        to_hash = [(p, s) for p, s in stats if self.manifest.cached_hash(str(p), s.st_size, s.st_mtime_ns) is None]
        total_bytes, hashed = sum(s.st_size for _, s in to_hash), 0

        def advance(n: int) -> None:
            nonlocal hashed
            hashed += n
            self.on_hash_progress(hashed, total_bytes)

        documents = []
        for path, stat in stats:
            sha = self.manifest.cached_hash(str(path), stat.st_size, stat.st_mtime_ns)
            if sha is None:
                sha = file_sha256(path, advance)
                self.manifest.remember_hash(str(path), stat.st_size, stat.st_mtime_ns, sha)
                self._heartbeat()
            known = self.manifest.document_by_hash(sha) is not None
            documents.append(self.manifest.register_document(sha, str(path), stat.st_size))
            self.report.new_documents += not known
        self.report.documents = len(documents)
        return documents

    def _inspect_tasks(self, documents) -> list[Task]:
        self._pending = [doc["id"] for doc in documents if doc["status"] == "pending"]
        return [Task(doc["id"], doc["path"]) for doc in documents if doc["status"] == "pending" and doc["pages"] is None]

    def _plan_totals(self) -> None:
        for doc_id in self._pending:
            doc = self.manifest.document(doc_id)
            if doc["status"] == "pending" and doc["pages"]:
                self._remaining[doc_id] = self._pages_to_score(doc)
        live = self.manifest.conn.execute(
            "SELECT COALESCE(SUM(pages), 0) FROM documents WHERE status != 'replaced' AND id IN "
            f"({','.join(str(int(i)) for i in self._pending) or 'NULL'})"
        ).fetchone()[0]
        self._total = int(live)
        self._done = self._total - sum(len(r) for r in self._remaining.values())
        self._heartbeat(force=True)
        for doc_id, remaining in list(self._remaining.items()):
            if not remaining:  # scored by a run that died before it could close the document
                self._close_document(doc_id)

    def _pages_to_score(self, doc) -> set[int]:
        return set(range(doc["pages"])) - self.manifest.done_pages(doc["id"])

    def _score_tasks(self):
        for doc_id, remaining in list(self._remaining.items()):
            path = self.manifest.document(doc_id)["path"]
            pages = sorted(remaining)
            for start in range(0, len(pages), self.pages_per_task):
                yield Task(doc_id, path, tuple(pages[start:start + self.pages_per_task]))

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

    def _save(self, doc_id: int, results: list[PageResult]) -> None:
        self.manifest.save_pages(doc_id, results)
        failed = sum(r.status == "failed" for r in results)
        self.report.pages_failed += failed
        self.report.pages_scored += len(results) - failed
        self._done += len(results)
        remaining = self._remaining.get(doc_id)
        if remaining is not None:
            remaining.difference_update(r.page for r in results)
            if not remaining:
                self._close_document(doc_id)
        self.on_progress(self._done, self._total)
        self._heartbeat()

    def _close_document(self, doc_id: int) -> None:
        self.manifest.finish_document(doc_id)
        self._remaining.pop(doc_id, None)

    # -- progress -----------------------------------------------------------------------------

    def _heartbeat(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last_beat < PROGRESS_INTERVAL:
            return
        self._last_beat = now
        elapsed = max(now - self._started, 1e-9)
        rate = self.report.pages_scored / elapsed if self.report.pages_scored else None
        left = self._total - self._done
        eta = left / rate if rate else None
        self.manifest.update_job(self.job_id, done=self._done, total=self._total, rate=rate, eta=eta)

    def _summary(self) -> str:
        r = self.report
        return (f"{r.documents} documents ({r.new_documents} new), {r.pages_scored} pages scored, "
                f"{r.pages_failed} failed, in {r.seconds:.1f} s")


class Rescore(Ingest):
    """Score pages again with the current scorer: pages whose features are missing or older than
    FEATURES_VERSION, or every page with `all_pages`. Scores are replaced; overrides, captions and
    documents are not touched. Runs as an ingest job, so it never overlaps one."""

    def __init__(self, manifest: Manifest, *, all_pages: bool = False, **options):
        super().__init__(manifest, [], **options)
        self.all_pages = all_pages

    def _register_documents(self) -> list:
        documents = []
        for doc in self.manifest.documents():
            if doc["status"] not in ("ok", "partial") or not doc["pages"]:
                continue
            if not pathlib.Path(doc["path"]).exists():
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
