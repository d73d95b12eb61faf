"""Ingest: hash the archive's PDFs, then score every page not yet in the manifest.

The unit of work is a `Task`: inspect one document, or score a range of its pages. Tasks run in a
`concurrent.futures` executor (a process pool by default: MuPDF is not thread-safe) and only the
coordinator writes to the manifest, one transaction per finished task. A run that is killed loses
at most the tasks in flight; the next run plans only the pages that have no row yet.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import functools
import multiprocessing
import multiprocessing.connection
import os
import pathlib
import resource
import signal
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum

import cv2
import psutil
import pymupdf

from ..captions.legend import check_languages, engine_note, installed_languages, with_legends
from ..decisions.duplicates import refresh_duplicates
from ..manifest.store import Manifest
from ..scoring.result import PageResult
from ..scoring.features import FEATURES_VERSION
from ..pictures.verdict import check_installed, checked_columns
from ..scoring.scorer import score_page_and_scan
from ..sources.paths import REFUSAL, document_roots, reading_roots
from ..sources.reader import (DocumentError, DocumentInfo, OutsideAllowedFolders, error_text, exists, file_sha256,
                              file_stat, find_pdfs, inspect_document, open_document, readable)
from ..manifest.views.jobs import unreadable_documents
from .jobs import PROGRESS_INTERVAL, DiskFull, JobProgress, Stopped, is_disk_full, plural, stop_on_sigterm

PAGES_PER_TASK = 16
TASKS_PER_CHILD = 500  # a worker is replaced now and then so nothing it leaks can pile up
MIN_WORKER_ROOM = 256 << 20  # bytes a worker may always allocate, whatever its memory limit
CRASH_MESSAGE = "the PDF engine crashed on this page (twice, in fresh workers); skipped"


@dataclass(frozen=True)
class Task:
    """Inspect a document (`pages` is None) or score the listed pages of it; with `hash`, hash the
    file and inspect it in one read where it is read (a cluster's worker), before it is a document.
    `roots`: the folders the file must really lie in when the worker opens it (None: no check).
    `legend_languages`: Tesseract's languages to read the pictures' legends in (None: none read).
    `learned_pictures`: the pictures are the picture stage's, checked by its learned verdict, rather than
    the rule-based finder's."""

    doc_id: int | None
    path: str
    pages: tuple[int, ...] | None = None
    hash: bool = False
    roots: tuple[str, ...] | None = None
    legend_languages: str | None = None
    learned_pictures: bool = False


@dataclass
class IngestReport:
    documents: int = 0
    new_documents: int = 0
    pages_scored: int = 0
    pages_failed: int = 0
    pages_timed_out: int = 0  # of pages_failed: skipped for the time limit
    refused: int = 0  # files not read: their real path is outside the allowed folders
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
    def incidents(self) -> str:
        """'; 2 worker crashes retried, 1 time-out' when there were any, else ''."""
        parts = []
        if self.refused:
            parts.append(f"{self.refused} file{'' if self.refused == 1 else 's'} refused: {REFUSAL}")
        if self.crashes:
            parts.append(f"{self.crashes} worker crash{'' if self.crashes == 1 else 'es'} retried")
        if self.timeouts:
            parts.append(f"{self.timeouts} time-out{'' if self.timeouts == 1 else 's'}")
        return "; " + ", ".join(parts) if parts else ""


def run_task(task: Task):
    """Worker side: what one task produces. Runs in a worker process."""
    if task.hash:
        return file_sha256(task.path, roots=task.roots), run_task(replace(task, hash=False))
    if task.pages is None:
        try:
            return inspect_document(task.path, task.roots)
        except DocumentError as exc:
            return exc
    doc = open_document(task.path, task.roots)
    try:
        check = checked_columns if task.learned_pictures else None
        return [_score_and_shrink(doc, number, task.legend_languages, check) for number in task.pages]
    finally:
        doc.close()


def _score_and_shrink(doc, number: int, legend_languages: str | None = None, check_pictures=None) -> PageResult:
    try:
        result, scan = score_page_and_scan(doc, number, check_pictures)
        if legend_languages and result.status == "ok":
            result = with_legends(result, doc, legend_languages, scan)
        # Imported here: the export's package imports this module (its workers share the memory words).
        from ..export.card import with_picture_cards
        result = with_picture_cards(result, doc)
    finally:
        # MuPDF caches every image it touched (up to 256 MB per process); a page is never needed twice.
        pymupdf.TOOLS.store_shrink(100)
    if result.status == "failed":
        return replace(result, error=memory_message() if out_of_memory(result.error) else readable(result.error))
    return result


def out_of_memory(text: str | None) -> bool:
    """MuPDF's and NumPy's words for an allocation the worker's memory limit refused."""
    return bool(text) and any(sign in text for sign in ("malloc (", "out of memory", "MemoryError", "Unable to allocate"))


def memory_message() -> str:
    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    share = f" ({limit / (1 << 30):.1f} GB; --worker-memory)" if limit != resource.RLIM_INFINITY else ""
    return f"needed more memory than a worker may take{share}; skipped"


def _init_worker(memory_limit: int | None = None) -> None:
    # Ctrl-C is the coordinator's to handle; workers are shut down by it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # MuPDF's messages would garble the progress bar; the reasons are recorded per document instead.
    pymupdf.TOOLS.mupdf_display_errors(False)
    pymupdf.TOOLS.mupdf_display_warnings(False)
    # One process per core already: OpenCV's own threads would only compete (and each reserves memory).
    cv2.setNumThreads(1)
    if memory_limit:
        # Past its share an allocation fails in the worker (MuPDF and NumPy raise, the page fails with a
        # message); the kernel's OOM killer never has to choose, so the coordinator is never its victim.
        # The limit is on address space, which starts well above what is used (libraries, thread
        # arenas: more on many-core machines), so a worker always keeps some room to work.
        limit = max(memory_limit, psutil.Process().memory_info().vms + MIN_WORKER_ROOM)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def process_pool(workers: int, memory_limit: int | None = None) -> cf.Executor:
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["curation.runs.ingest"])
    return cf.ProcessPoolExecutor(
        max_workers=workers, mp_context=context, initializer=_init_worker, initargs=(memory_limit,),
        max_tasks_per_child=TASKS_PER_CHILD,
    )


def bounded_pool(make_executor: Callable[[int], cf.Executor], workers: int,
                 memory_limit: int | None = None) -> Callable[[int], cf.Executor]:
    """The default process pool with each worker's memory capped (a fair share unless given); any
    other executor as it is."""
    if make_executor is not process_pool:
        return make_executor
    return functools.partial(process_pool, memory_limit=memory_limit or default_worker_memory(workers))


def kill_executor(executor: cf.Executor) -> None:
    """Tear an executor down now, tasks still running included (a page stuck in MuPDF never returns).

    A process pool's workers are killed (Python 3.14 has `kill_workers`; before it the pool's own
    process table is the only handle); any other executor is asked to cancel what it can.
    """
    processes = list((getattr(executor, "_processes", None) or {}).values())
    kill = getattr(executor, "kill_workers", None)
    if kill is not None:
        kill()
    else:
        for process in processes:
            with contextlib.suppress(Exception):
                process.kill()
    if isinstance(executor, cf.ProcessPoolExecutor):
        _end_result_pipe(executor, processes)
    executor.shutdown(wait=isinstance(executor, cf.ProcessPoolExecutor), cancel_futures=True)


def _end_result_pipe(executor: cf.ProcessPoolExecutor, processes: list) -> None:
    """A worker killed while sending its result leaves half a message in the pool's result pipe, and the pool's
    manager thread would wait for the rest forever (and `shutdown` with it). Once the workers are dead the
    parent's copy is the pipe's last write end: closing it gives that reader EOF, and the pool breaks and ends."""
    sentinels = [process.sentinel for process in processes]
    deadline = time.monotonic() + 5
    while sentinels and time.monotonic() < deadline:  # a sentinel is ready once its process has exited
        ended = multiprocessing.connection.wait(sentinels, deadline - time.monotonic())
        sentinels = [sentinel for sentinel in sentinels if sentinel not in ended]
    if sentinels:
        return
    writer = getattr(getattr(executor, "_result_queue", None), "_writer", None)
    with contextlib.suppress(Exception):
        writer.close()


def default_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))


def default_worker_memory(workers: int) -> int:
    """A fair share of the machine's memory per worker, one share left to the coordinator and the rest."""
    return psutil.virtual_memory().total // (workers + 1)


def timeout_message(seconds: float, what: str = "draw") -> str:
    return f"took longer than {seconds:g} s to {what}; skipped"


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


class ExecutorLost(Exception):
    """The executor itself is gone (a cluster's scheduler lost): the run ends; what finished is saved."""


class Failure(Enum):
    """What a task came to when it gave no result."""

    CRASHED = "crashed"  # its worker died, twice, the second time alone
    TIMED_OUT = "timed out"  # it ran past the time limit on its own


def split_pages(task) -> list:
    """The single-page tasks of a multi-page task; any other task as it is."""
    pages = getattr(task, "pages", None)
    if pages is None or len(pages) < 2:
        return [task]
    return [replace(task, pages=(number,)) for number in pages]


class Scheduler:
    """Runs tasks on an executor and survives workers that die or never finish.

    When a worker process dies the pool is broken and every task in flight is a suspect: each one
    is retried alone in a fresh worker. A task that crashes again alone is split into single pages,
    each run alone, so only the page that kills the engine is marked failed.

    With a `page_timeout`, no more tasks are in flight than there are workers, so a task's clock
    starts when it is handed to a worker. A task still running after the limit is abandoned: the
    executor is torn down (`kill`, its workers with it) and a new one made; the other tasks that were
    running go back to the queue; the late task is split into single pages, queued first, and a single
    page that runs past the limit on its own comes out as `Failure.TIMED_OUT`. A page that hangs inside
    a task therefore costs about twice the limit: once in its task, once alone. All of this is
    scheduling, so it holds for any `concurrent.futures` executor that `kill` can tear down.
    """

    def __init__(self, make_executor: Callable[[int], cf.Executor], workers: int,
                 task_fn: Callable = run_task, should_stop: Callable[[], bool] = lambda: False,
                 on_idle: Callable[[], None] = lambda: None, *, page_timeout: float | None = None,
                 split: Callable[[object], list] = split_pages, kill: Callable[[cf.Executor], None] = kill_executor):
        self.make_executor = make_executor
        self.workers = workers
        self.task_fn = task_fn
        self.should_stop = should_stop
        self.on_idle = on_idle
        self.page_timeout = page_timeout
        self.split = split
        self.kill = kill
        self.crashes = 0  # workers lost to a crash (each followed by retries)
        self.timeouts = 0  # executors torn down because a task ran past the limit

    def run(self, tasks: Iterable, on_result: Callable[[object, object], None],
            on_crash: Callable[[object], None], on_timeout: Callable[[object], None] | None = None) -> None:
        for task, result in self.results(tasks):
            if result is Failure.CRASHED:
                on_crash(task)
            elif result is Failure.TIMED_OUT:
                (on_timeout or on_crash)(task)
            else:
                on_result(task, result)

    def results(self, tasks: Iterable) -> Iterator[tuple[object, object]]:
        """(task, result) for every task as it finishes; result is a `Failure` for one given up.

        An exception raised by the task function is its result, not a failure.
        """
        queue = deque(tasks)
        while queue:
            suspects = yield from self._run_pool(queue)
            for task in suspects:
                yield from self._run_alone(task, split=True)

    def _run_pool(self, queue: deque):
        executor = self.make_executor(self.workers)
        in_flight: dict[cf.Future, tuple[object, float]] = {}
        abandon = True
        try:
            self._warm_up(executor)
            slots = getattr(executor, "slots", self.workers)  # an executor may have fewer workers than planned
            most = slots if self.page_timeout else 2 * slots
            broken_at_submit = not self._fill(executor, queue, in_flight, most)
            if broken_at_submit and not in_flight:
                raise RuntimeError("the worker processes die as they start; nothing can be read")
            while in_flight:
                done, _ = cf.wait(in_flight, timeout=PROGRESS_INTERVAL, return_when=cf.FIRST_COMPLETED)
                finished, broken = [], []
                for future in done:
                    task, _ = in_flight.pop(future)
                    outcome = _outcome(future)
                    (broken if outcome is Failure.CRASHED else finished).append((task, outcome))
                if broken or broken_at_submit:
                    self.crashes += 1
                    yield from finished
                    return [task for task, _ in broken] + [task for task, _ in in_flight.values()]
                # Workers get their next task before the results are saved: they never wait on the manifest.
                broken_at_submit = not self._fill(executor, queue, in_flight, most)
                yield from finished
                late = [future for future, (_, started) in in_flight.items() if self._late(started)]
                if late:
                    self.timeouts += 1
                    yield from self._give_up_late(late, in_flight, queue)
                    return []
                self.on_idle()
                if self.should_stop():
                    raise Stopped()
            abandon = False
            return []
        finally:
            if abandon:
                self.kill(executor)
            else:
                executor.shutdown(wait=True)

    def _fill(self, executor: cf.Executor, queue: deque, in_flight: dict, most: int) -> bool:
        """Hand queued tasks to the executor up to `most` in flight; False if it broke meanwhile."""
        while queue and len(in_flight) < most:
            task = queue.popleft()
            try:
                in_flight[executor.submit(self.task_fn, task)] = (task, time.monotonic())
            except cf.BrokenExecutor:  # a worker died before this task could be handed over
                queue.appendleft(task)
                return False
        return True

    def _give_up_late(self, late: list[cf.Future], in_flight: dict, queue: deque):
        """Late tasks split into pages queued first, single late pages failed; the rest queued again."""
        again = [in_flight[future][0] for future in in_flight if future not in late]
        for future in late:
            task = in_flight[future][0]
            pieces = self.split(task)
            if len(pieces) > 1:
                again[:0] = pieces
            else:
                yield task, Failure.TIMED_OUT
        queue.extendleft(reversed(again))

    def _late(self, started: float) -> bool:
        return self.page_timeout is not None and time.monotonic() - started > self.page_timeout

    def _warm_up(self, executor: cf.Executor) -> None:
        # Starting workers (the forkserver's first start imports MuPDF and OpenCV) is not a page's time.
        if self.page_timeout:
            cf.wait([executor.submit(os.getpid) for _ in range(self.workers)])

    def _run_alone(self, task, split: bool):
        if self.should_stop():
            raise Stopped()
        executor = self.make_executor(1)
        abandon = True
        try:
            self._warm_up(executor)
            future = executor.submit(self.task_fn, task)
            try:
                result = _outcome(future, self.page_timeout)
            except cf.TimeoutError:
                result = Failure.TIMED_OUT
            abandon = result in (Failure.CRASHED, Failure.TIMED_OUT)
        finally:
            if abandon:
                self.kill(executor)
            else:
                executor.shutdown(wait=True)
        pieces = self.split(task) if split else [task]
        if result is Failure.TIMED_OUT:
            self.timeouts += 1
        if result in (Failure.CRASHED, Failure.TIMED_OUT) and len(pieces) > 1:
            for piece in pieces:
                yield from self._run_alone(piece, split=False)
        else:
            yield task, result


def _outcome(future: cf.Future, timeout: float | None = None):
    """A finished future's result; a dead worker is `Failure.CRASHED`, an exception is the result."""
    try:
        return future.result(timeout)
    except cf.BrokenExecutor:
        return Failure.CRASHED
    except (cf.TimeoutError, ExecutorLost):
        raise
    except Exception as exc:  # a bug or an I/O error in the worker, not a crash
        return exc


class Ingest:
    """One ingest run over a manifest. Use `run()`; progress goes to `on_progress(done, total)`."""

    def __init__(self, manifest: Manifest, paths: Sequence[str | os.PathLike], *, workers: int | None = None,
                 pages_per_task: int = PAGES_PER_TASK,
                 make_executor: Callable[[int], cf.Executor] = process_pool, task_fn: Callable = run_task,
                 page_timeout: float | None = None, worker_memory: int | None = None, cluster=None,
                 roots: Sequence[str | os.PathLike] | None = None, legend_languages: str | None = None,
                 on_progress: Callable[[int, int], None] = lambda done, total: None,
                 on_hash_progress: Callable[[int, int], None] = lambda done, total: None):
        """`page_timeout`: seconds a page may take (None: the manifest's setting; 0: no limit).
        `worker_memory`: bytes each pool worker may allocate (None: a fair share of the machine's).
        `cluster`: a `curation.runs.cluster.Cluster` whose workers run the tasks instead of a local pool.
        `roots`: the folders every file read must really lie in, checked as it is opened (None: the
        allowed folders, and `paths` that lie outside them: see `paths.reading_roots`).
        `legend_languages`: Tesseract's languages for the pictures' legends, e.g. "eng+deu" (None: the
        manifest's setting; "": none read). Without the OCR engine none are read (`report.legend_note`)."""
        self.manifest = manifest
        self.report = IngestReport()
        if roots is None:
            roots = reading_roots(manifest.path, manifest, paths)
        self.roots = tuple(str(root) for root in roots)
        self.pdfs = find_pdfs(paths, self.roots, self._refuse)  # raises before any work when a path is missing
        self.pages_per_task = pages_per_task
        self.page_timeout = (manifest.page_timeout if page_timeout is None else page_timeout) or None
        self.legend_languages = self._legend_languages(legend_languages)
        self.learned_pictures = manifest.picture_finder == "learned"
        if self.learned_pictures:
            check_installed()
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
        self.job_id = self.progress.job_id = self.manifest.start_job(
            "ingest", {"paths": [str(p) for p in self.pdfs], "workers": self.workers,
                       "page_timeout": self.page_timeout, "legend_languages": self.legend_languages})
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
        self._pending = [doc["id"] for doc in documents if doc["status"] == "pending"]
        return [Task(doc["id"], doc["path"], roots=self.roots)
                for doc in documents if doc["status"] == "pending" and doc["pages"] is None]

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
                           legend_languages=self.legend_languages, learned_pictures=self.learned_pictures)
                start = end

    def _refuse(self, path) -> None:
        """A file not read because it really lies outside the allowed folders: said in the job's summary."""
        self.report.refused += 1
        self.report.problems.append(f"{path}: not read, {REFUSAL}")

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

    def _on_timeout(self, task: Task) -> None:
        if task.pages is None:
            self._on_inspected(task, DocumentError("failed", timeout_message(self.page_timeout, "open")))
        else:
            message = timeout_message(self.page_timeout)
            self.report.pages_timed_out += len(task.pages)
            self._save(task.doc_id, [PageResult(page=n, status="failed", error=message) for n in task.pages])

    def _save(self, doc_id: int, results: list[PageResult]) -> None:
        self.manifest.save_pages(doc_id, results)
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
        return (f"{plural(r.documents, 'document')} ({r.new_documents} new), {plural(r.pages_scored, 'page')} scored, "
                f"{r.pages_failed} failed, in {r.seconds:.1f} s{r.incidents}{self._unreadable()}")

    def _unreadable(self) -> str:
        """'; 1 document could not be read: fake.pdf: not a PDF …' for this run's documents that give no page."""
        failed = unreadable_documents(self.manifest, self.pdfs)
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
