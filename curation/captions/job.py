"""A caption job: the captioning model describes each picture, as a job like ingest and export.

The job claims the manifest (one caption job at a time), loads the model once for the whole run
(inference.captioner: the model slot, unloaded at the end) and writes each batch's captions as soon
as they are made, so a stopped or killed run loses at most one batch and the next run resumes: a
picture already captioned by the same model is skipped unless `overwrite`. It writes only the
model's caption (`auto_caption`, `auto_caption_model`); the curator's caption is never touched.

Each picture is read as the export reads it (its page's scan or render, cut to the picture's box with
the export's margin), through the same allowed-folders check, at the size the model reads.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace

from PIL import Image

from inference.errors import InferenceError

from ..export.geometry import crop_region
from ..export.settings import ExportSettings
from ..export.worker import Exported, PageTask, close_document, run_page_task
from ..manifest.store import Manifest
from ..views.images import open_jpeg
from ..runs.jobs import DiskFull, JobProgress, Stopped, claim_manifest, is_disk_full, stop_on_sigterm
from ..sources.page_numbers import page_number
from ..sources.paths import document_roots
from ..sources.reader import error_text
from .edit import Pictures

KIND = "caption"
KEPT = Pictures(kept=True)  # what the export writes: kept pictures of kept pages
BATCH = 4  # pictures per generate(): what a stop or a kill can lose, and one write to the manifest
# Florence-2 reads every picture at 768 x 768: read it at that size, padded to a square with its own
# paper so that its proportions are kept.
READING = ExportSettings(size=768, fit="pad", crop="pictures", quality=95)


@dataclass
class CaptionReport:
    model: str = ""
    pictures: int = 0  # selected: kept (or all) pictures
    captioned: int = 0  # by this run
    already: int = 0  # captioned by the same model before, skipped
    failed: list[dict] = field(default_factory=list)  # pictures that could not be read, with the reason
    load_seconds: float = 0.0
    seconds: float = 0.0  # captioning, from the first picture read to the last caption written
    stopped: bool = False

    @property
    def seconds_per_image(self) -> float | None:
        return self.seconds / self.captioned if self.captioned else None


class CaptionJob:
    """Caption `pictures` of `manifest` (a filter, as for the caption edits; default: the kept ones).
    Use `run()`; progress goes to `on_progress(done, total)`, counting pictures captioned earlier as done."""

    def __init__(self, manifest: Manifest, model_dir=None, *, pictures: Pictures = KEPT, overwrite: bool = False,
                 device: str | None = None, batch: int = BATCH,
                 on_progress: Callable[[int, int], None] = lambda done, total: None):
        self.manifest = manifest
        self.model_dir = model_dir
        self.pictures = pictures
        self.overwrite = overwrite
        self.device = device
        self.batch = max(1, batch)
        self.on_progress = on_progress
        self.report = CaptionReport()
        self.job_id: int | None = None
        self.progress = JobProgress(manifest, worked=lambda: self.report.captioned)

    def run(self) -> CaptionReport:
        with stop_on_sigterm():
            return self._run()

    def _run(self) -> CaptionReport:
        rows = list(self.pictures.rows(self.manifest))  # in document order: one document open at a time
        self.report.pictures = self.progress.total = len(rows)
        self.job_id = self.progress.job_id = claim_manifest(self.manifest, KIND, {
            "model": str(self.model_dir or ""), "pictures": len(rows), "kept": self.pictures.kept,
            "overwrite": self.overwrite})
        status, message = "failed", None
        try:
            with self._captioner() as model:
                self.report.model, self.report.load_seconds = model.name, model.seconds["load"]
                todo = [row for row in rows if self.overwrite or row["auto_caption_model"] != model.name]
                self.report.already = self.progress.done = len(rows) - len(todo)
                self.progress.start()  # the rate counts from the first picture, not the model's loading
                self.progress.beat(force=True)
                self._caption_all(model, todo)
            status = "done"
        except (Stopped, KeyboardInterrupt):
            self.report.stopped = True
            status, message = "stopped", f"stopped after {self.report.captioned} captions; run again to resume"
        except Exception as exc:
            # The captioner's messages are one line already, and say what to do in full.
            message = str(exc) if isinstance(exc, InferenceError) else error_text(exc)
            if is_disk_full(exc):
                raise DiskFull(self.manifest.path) from None
            raise
        finally:
            close_document()
            started = self.progress.started
            self.report.seconds = time.monotonic() - started if started else 0.0
            self.progress.finish(status, message or self._summary(), lambda: DiskFull(self.manifest.path))
        return self.report

    def _captioner(self):
        """The model for this run, downloaded first where it is missing (saying so in the job's message)."""
        from inference.captioner import captioner_status, loaded_captioner  # torch only when captioning

        if not self.model_dir and not captioner_status()["installed"]:
            self.manifest.update_job(self.job_id, message="downloading the captioning model (once)")
        captioner = loaded_captioner(self.model_dir, self.device)
        self.manifest.update_job(self.job_id, message=None)
        return captioner

    def _caption_all(self, model, rows: list) -> None:
        roots = document_roots(self.manifest.path, self.manifest)  # each PDF checked again as it is opened
        sizes: dict[int, int] = {}
        for start in range(0, len(rows), self.batch):
            pictures = [(row, self._read(row, roots, sizes)) for row in rows[start:start + self.batch]]
            readable = [(row, image) for row, image in pictures if image is not None]
            texts = model.caption([image for _, image in readable]) if readable else []
            self.manifest.set_auto_captions((row["id"], text, model.name) for (row, _), text in zip(readable, texts))
            self.report.captioned += len(readable)
            self.progress.done += len(pictures)
            self.on_progress(self.progress.done, self.report.pictures)
            self.progress.beat()

    def _read(self, row, roots, sizes: dict[int, int]) -> Image.Image | None:
        """The picture as the model reads it, or None (with the reason in the report) when it cannot be read."""
        if row["doc_id"] not in sizes:
            sizes[row["doc_id"]] = self.manifest.document(row["doc_id"])["size"]
        picture = SimpleNamespace(picture_box=(row["bx0"], row["by0"], row["bx1"], row["by1"]),
                                  width=row["width"], height=row["height"], picture=row["number"])
        task = PageTask(row["doc"], sizes[row["doc_id"]], row["page"], READING, crop_region(picture, READING),
                        tuple(str(root) for root in roots))
        result = run_page_task(task)
        if isinstance(result, Exported):
            return open_jpeg(result.jpeg)
        self.report.failed.append({"document": row["doc"], "page": page_number(row["page"]),
                                   "picture": row["number"], "reason": result.reason})
        return None

    def _summary(self) -> str:
        r = self.report
        text = f"{r.captioned} pictures captioned by {r.model}"
        if r.seconds_per_image:
            text += f", {r.seconds_per_image:.2f} s per picture (model loaded in {r.load_seconds:.1f} s)"
        if r.already:
            text += f"; {r.already} already captioned by it, skipped"
        if r.failed:
            text += f"; {len(r.failed)} could not be read"
        return text


def caption_pictures(manifest: Manifest, model_dir=None, **options) -> CaptionReport:
    """Caption the kept pictures of `manifest` (see CaptionJob)."""
    return CaptionJob(manifest, model_dir, **options).run()
