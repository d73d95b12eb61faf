"""An export run: kept pages, in order, through the workers into the ZIP, with progress in the manifest.

The page selection is a snapshot taken at the start, with the decision rule and cutoffs that made it
and the near-duplicates it leaves out. Pages are read in parallel (a process pool by
default: MuPDF is not thread-safe) but written in selection order, with at most a few pages in
flight per worker, so the ZIP is the same whatever the number of workers and memory stays flat.
"""

from __future__ import annotations

import concurrent.futures as cf
import functools
import os
import pathlib
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import closing
from dataclasses import dataclass, field

from ..captions.unread import read_unread
from ..manifest.store import Manifest
from ..runs.scheduler import Failure, Scheduler, timeout_message
from ..runs.worker_pool import bounded_pool, process_pool
from ..runs.jobs import DiskFull, JobProgress, Stopped, claim_manifest, is_disk_full, plural, stop_on_sigterm
from ..sources.paths import document_roots
from ..sources.page_numbers import page_number
from ..sources.reader import error_text
from .captions import CaptionTooLong, caption_for
from .geometry import crop_box
from .layouts import Record, dataset_files, export_json, image_folder, mask_file, provenance_csv
from .selection import Item, LeftOut, select
from .settings import ExportSettings
from .worker import Exported, NotExported, TooSmall, close_document, page_task, run_page_task
from .zipwriter import ZipTarget

IN_FLIGHT_PER_WORKER = 3
CRASH_REASON = "the PDF engine crashed on this page (twice, in fresh workers); skipped"


class ExportError(Exception):
    """An export that cannot be made; the message says why, for a person."""


@dataclass
class ExportReport:
    path: pathlib.Path
    images: int = 0
    skipped: list[dict] = field(default_factory=list)
    bytes: int = 0
    seconds: float = 0.0
    stopped: bool = False
    left_out: list[LeftOut] = field(default_factory=list)  # near-duplicates not written
    cropped: int = 0  # images cut to the page's picture
    too_small: list[dict] = field(default_factory=list)  # left out: under settings.min_source_side
    upscales: list[float] = field(default_factory=list)  # each written image's enlargement (1.0: none)

    @property
    def images_per_second(self) -> float:
        return self.images / self.seconds if self.seconds else 0.0

    @property
    def enlarged(self) -> str:
        """'12 enlarged from smaller sources, 1.2-3.4x (5 more than 2x)', or '' when none is."""
        return enlarged_words(self.upscales)


ENLARGED = 1.05  # an image enlarged less than this is as sharp as its source


def enlarged_words(upscales: list[float], of: str = "") -> str:
    """How many of these images are enlarged from their source and by how much, in words ('' when none is)."""
    factors = [factor for factor in upscales if factor >= ENLARGED]
    if not factors:
        return ""
    twice = sum(factor > 2 for factor in factors)
    return (f"{len(factors):,}{of} enlarged from a smaller source, {min(factors):.1f}-{max(factors):.1f}x"
            + (f" ({twice:,} more than 2x: soft)" if twice else ""))


class Export:
    """One export of a manifest's kept pages to a ZIP. Use `run()`; progress goes to `on_progress(done, total)`."""

    def __init__(self, manifest: Manifest, out: str | os.PathLike, settings: ExportSettings = ExportSettings(), *,
                 threshold: float | None = None, workers: int = 1,
                 make_executor: Callable[[int], cf.Executor] = process_pool,
                 page_timeout: float | None = None, worker_memory: int | None = None,
                 on_progress: Callable[[int, int], None] = lambda done, total: None):
        """`page_timeout`: seconds a page may take (None: the manifest's setting; 0: no limit, and one
        worker then runs inline). `worker_memory`: bytes a pool worker may allocate (None: a fair share)."""
        self.manifest = manifest
        self.out = pathlib.Path(os.path.abspath(out))
        self.settings = settings
        self.threshold = manifest.threshold if threshold is None else float(threshold)
        self.workers = max(1, workers)
        self.page_timeout = (manifest.page_timeout if page_timeout is None else page_timeout) or None
        self.make_executor = bounded_pool(make_executor, self.workers, worker_memory)
        self._image_bytes = 0  # JPEG bytes handed to the ZIP so far, to tell the room a full disk lacked
        self.on_progress = on_progress
        self.report = ExportReport(self.out)
        self.job_id: int | None = None
        self.decision: dict = {}
        self.progress = JobProgress(manifest)

    def run(self) -> ExportReport:
        with stop_on_sigterm():
            return self._run()

    def _run(self) -> ExportReport:
        if self.out.is_dir():
            raise ExportError(f"{self.out} is a folder; give the path of the ZIP to write")
        self.decision = self.manifest.decision_params(self.threshold)
        # A picture judged not a picture at ingest had its legend left unread; one the curator kept is read now.
        read_unread(self.manifest, (row for rows in self.manifest.kept_pictures(self.threshold).values() for row in rows))
        selection = select(self.manifest, self.threshold, self.settings.duplicates, self.settings.crop)
        items = selection.items
        if not items:
            raise ExportError(f"nothing to export: no scored page is kept by the {self.decision['rule']} rule at "
                              f"threshold {self.threshold:g} (ingest some PDFs, change the rule or its cutoffs, "
                              "or keep pages on the Review page)")
        self.report.left_out = selection.left_out
        self.progress.total = len(items)
        self.progress.start()
        self.job_id = self.progress.job_id = claim_manifest(self.manifest, "export", {
            "out": str(self.out), "settings": self.settings.as_dict(), "threshold": self.threshold,
            "decision": self.decision, "images": len(items), "left_out": len(selection.left_out),
            "workers": self.workers,
        })
        status, message = "failed", None
        try:
            with ZipTarget(self.out) as target:
                records = self._write_images(target, items)
                if not records:
                    raise ExportError(self._nothing_written())
                self._write_tables(target, records)
            self.report.bytes = self.out.stat().st_size
            status = "done"
        except (Stopped, KeyboardInterrupt):
            self.report.stopped = True
            status, message = "stopped", f"stopped; nothing was written to {self.out}"
        except Exception as exc:
            if not is_disk_full(exc):
                message = error_text(exc)
                raise
            full = DiskFull(self.out, self._room_needed())
            message = str(full)
            raise full from None
        finally:
            close_document()
            self.report.seconds = time.monotonic() - self.progress.started
            self.progress.finish(status, message or self._summary(), lambda: DiskFull(self.out, self._room_needed()))
        return self.report

    def _write_images(self, target: ZipTarget, items: list[Item]) -> list[Record]:
        folder = image_folder(self.settings)
        roots = document_roots(self.manifest.path, self.manifest)  # each PDF checked again as it is opened
        tasks = [page_task(item, self.settings, roots) for item in items]
        records = []
        with closing(in_order(run_page_task, tasks, self.workers, self.make_executor, self.page_timeout)) as results:
            for item, (_, result) in zip(items, results):
                reason = None
                if isinstance(result, Exported):
                    try:
                        records.append(self._add_image(target, folder, item, result))
                        self.report.upscales.append(result.upscale)
                    except CaptionTooLong as exc:  # the image is left out with its caption, and said why
                        reason = str(exc)
                elif isinstance(result, TooSmall):
                    self.report.too_small.append({"document": item.doc, "page": page_number(item.page),
                                                  "picture": item.picture, "source_side": result.source_side})
                else:
                    reason = result.reason
                if reason is not None:
                    self.report.skipped.append({"document": item.doc, "page": page_number(item.page), "reason": reason})
                self.progress.done += 1
                self.on_progress(self.progress.done, self.progress.total)
                self.progress.beat()
        return records

    def _add_image(self, target: ZipTarget, folder: str, item: Item, image: Exported) -> Record:
        caption = caption_for(item, self.settings)
        file = f"{folder}/{item.name}.jpg"
        self._image_bytes += len(image.jpeg)
        target.add(file, image.jpeg)
        target.add(f"{folder}/{item.name}.txt", caption.encode(), compress=True)
        mask = None
        if image.mask_png is not None:
            mask = mask_file(self.settings, item.name)
            target.add(mask, image.mask_png)
        self.report.images += 1
        crop = crop_box(item, self.settings)
        self.report.cropped += crop is not None
        return Record(item, file, caption, image.width, image.height, image.method, crop, mask, image.mask_share)

    def _write_tables(self, target: ZipTarget, records: list[Record]) -> None:
        for name, data in dataset_files(self.settings, records):
            target.add(name, data, compress=True)
        target.add("manifest.csv", provenance_csv(records), compress=True)
        target.add("export.json", export_json(self.settings, self.threshold, len(records), self.report.skipped,
                                              decision=self.decision, left_out=self.report.left_out,
                                              cropped=self.report.cropped, records=records,
                                              sources=self._sources_json()), compress=True)

    def _sources_json(self) -> dict:
        """How sharp the sources were: the minimum asked for, what it left out, and the images enlarged."""
        factors = [factor for factor in self.report.upscales if factor >= ENLARGED]
        return {"min_source_side": self.settings.min_source_side, "too_small": self.report.too_small,
                "enlarged_images": len(factors), "largest_enlargement": max(factors, default=1.0),
                "enlarged_more_than_2x": sum(factor > 2 for factor in factors)}

    def _nothing_written(self) -> str:
        if self.report.skipped:
            return f"no kept page could be read: {self.report.skipped[0]['reason']}"
        return (f"every image's source is under the minimum of {self.settings.min_source_side} px on its short "
                "side; lower the minimum (--min-source) to export them")

    # -- progress -----------------------------------------------------------------------------

    def _room_needed(self) -> int:
        """The ZIP's size when complete, at the bytes per image so far (its temporary file is removed)."""
        return self._image_bytes * self.progress.total // max(1, self.report.images)

    def _summary(self) -> str:
        r = self.report
        text = f"{r.images} images, {r.bytes / 1e6:.1f} MB, in {r.seconds:.1f} s → {self.out}"
        if r.cropped:
            text += f"; {r.cropped} cut to their picture"
        if r.left_out:
            text += f"; {plural(len(r.left_out), 'near-duplicate')} left out (listed in export.json)"
        if r.enlarged:
            text += f"; {r.enlarged}"
        if r.too_small:
            text += (f"; {plural(len(r.too_small), 'image')} left out, under {self.settings.min_source_side} px on "
                     "the short side (listed in export.json)")
        if r.skipped:
            text += f"; {len(r.skipped)} kept pages could not be read (listed in export.json)"
        return text




def in_order(fn: Callable, tasks: Iterable, workers: int,
             make_executor: Callable[[int], cf.Executor] = process_pool,
             page_timeout: float | None = None) -> Iterator[tuple[object, object]]:
    """(task, fn(task)) for every task, in the order given, through the ingest's `Scheduler`.

    One worker without a time limit runs inline. Otherwise a page whose worker dies is retried alone
    in a fresh one, and a page still running after `page_timeout` seconds has its worker killed; either
    is given up as `NotExported` with the reason. Results that finish early wait here for the ones
    before them: at most what the workers finish while one page runs up to its time limit.
    """
    if workers == 1 and not page_timeout:
        for task in tasks:
            yield task, fn(task)
        return
    scheduler = Scheduler(make_executor, workers, functools.partial(_numbered, fn), page_timeout=page_timeout,
                          split=lambda task: [task])
    waiting: dict[int, tuple[object, object]] = {}
    following = 0
    for (index, task), result in scheduler.results(enumerate(tasks)):
        if result is Failure.CRASHED:
            result = NotExported(CRASH_REASON)
        elif result is Failure.TIMED_OUT:
            result = NotExported(timeout_message(page_timeout))
        waiting[index] = (task, result)
        while following in waiting:
            yield waiting.pop(following)
            following += 1


def _numbered(fn: Callable, item: tuple[int, object]):
    return fn(item[1])


def export(manifest: Manifest, out: str | os.PathLike, settings: ExportSettings = ExportSettings(),
           **options) -> ExportReport:
    """Write the kept pages of `manifest` to the training ZIP `out`."""
    return Export(manifest, out, settings, **options).run()
