"""Worker side of an export: one page in, one finished JPEG out. Runs in a pool process or inline."""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import pymupdf
from PIL import Image

from ..pictures.region import Box, MaskSource
from ..runs.ingest_task import memory_message, out_of_memory
from ..sources.reader import DocumentError, error_text, open_document
from .geometry import Region, crop_box, crop_region, picture_region
from .settings import ExportSettings
from .shape import encode_jpeg, encode_mask, shape_image, shape_mask
from .source import measure_source, read_source


@dataclass(frozen=True)
class MaskTask:
    """What an image's mask is made of: the picture's mask (`source`, None: its box) over `span`, the part of the
    page the image shows, bounded by `box`, the picture's box as the curator left it (reference pixels both)."""

    span: Box
    box: Box
    source: MaskSource | None = None

    def mask(self) -> np.ndarray:
        return (self.source or MaskSource()).mask(self.span, self.box)


@dataclass(frozen=True)
class PageTask:
    doc: str
    doc_size: int  # the size the manifest knows: a file that changed since scoring is not read
    page: int
    settings: ExportSettings
    region: Region | None = None  # the part of the page exported (crop="picture"); None: all of it
    roots: tuple[str, ...] | None = None  # the folders the PDF must really lie in when opened (None: no check)
    known_scan: bool = False  # ingest read the page as one plain JPEG covering it (its method "jpeg")
    picture: Region | None = None  # the picture's own box in `region`, whose margin is made paper (None: none)
    mask: MaskTask | None = None  # the picture's mask, where the export writes masks (None: all of `region`)


def page_task(item, settings: ExportSettings, roots=None) -> PageTask:
    """The task of exporting one selected page (an `Item`) under `settings`, read only under `roots`."""
    return PageTask(item.doc, item.doc_size, item.page, settings, crop_region(item, settings),
                    None if roots is None else tuple(str(root) for root in roots), item.method == "jpeg",
                    picture_region(item, settings), mask_task(item, settings))


def mask_task(item, settings: ExportSettings) -> MaskTask | None:
    """The mask of an item's image where the export writes masks and the image is cut to a picture; None where
    the whole image is learned (a page exported whole) or no mask is written."""
    span = crop_box(item, settings) if settings.writes_masks else None
    return None if span is None else MaskTask(span, item.picture_box, item.mask)


@dataclass(frozen=True)
class Exported:
    jpeg: bytes
    width: int
    height: int
    method: str  # "jpeg" (the embedded scan, decoded reduced) or "render"
    upscale: float = 1.0  # times the source's own pixels were enlarged (1.0: not enlarged)
    source_side: int | None = None  # the kept part's shorter side in the source's pixels (None: drawn)
    mask_png: bytes | None = None  # its mask, where the export writes masks (shape.shape_mask)
    mask_share: float | None = None  # the share of the image its mask learns (its mean weight)


@dataclass(frozen=True)
class NotExported:
    reason: str


@dataclass(frozen=True)
class TooSmall(NotExported):
    """Left out on purpose: the source is smaller than the export's minimum (`min_source_side`)."""

    source_side: int = 0


def export_page(doc: pymupdf.Document, number: int, settings: ExportSettings, *, use_scan: bool = True,
                region: Region | None = None, known_scan: bool = False,
                picture: Region | None = None, mask: MaskTask | None = None) -> Exported | TooSmall:
    """The training image of one page, or of its `region`: read at the size it needs, shaped, encoded
    (`known_scan`: see source.read_source; `picture`: the picture's box in `region`, its margin made paper,
    shape.paper_margin), with its mask where `settings` writes masks (`mask`: the picture's; None: all of
    `region` learned); TooSmall when the source has fewer pixels on its short side than
    `settings.min_source_side` (an enlarged small cut comes out soft)."""
    source = read_source(doc, number, settings, use_scan=use_scan, region=region, known_scan=known_scan)
    side = source.native_side
    if side is not None and side < settings.min_source_side:
        return TooSmall(f"{side} px on its short side, under the minimum of {settings.min_source_side} px", side)
    image = shape_image(source, settings, picture)
    png = share = None
    if settings.writes_masks:
        shaped = shape_mask(None if mask is None else mask.mask(), region, source.plan)
        png, share = encode_mask(shaped), round(float(shaped.mean()) / 255, 4)
    return Exported(encode_jpeg(image, settings.quality), image.shape[1], image.shape[0], source.method,
                    round(source.upscale, 2), side, png, share)


@dataclass(frozen=True)
class Measured:
    """What exporting a page (or its region) would give, known without making the image (`measure_page`)."""

    upscale: float = 1.0
    source_side: int | None = None


def measure_page(doc: pymupdf.Document, number: int, settings: ExportSettings, *, region: Region | None = None,
                 known_scan: bool = False, picture: Region | None = None, mask: MaskTask | None = None) -> Measured | TooSmall:
    """`export_page`'s outcome for the figures (enlarged, left out under the minimum source size), from the
    source's header and the page's layout alone: milliseconds, no pixel decoded (the paper margin around
    `picture` changes neither)."""
    side, factor = measure_source(doc, number, settings, region=region, known_scan=known_scan)
    if side is not None and side < settings.min_source_side:
        return TooSmall(f"{side} px on its short side, under the minimum of {settings.min_source_side} px", side)
    return Measured(round(factor, 2), side)


def measure_all(tasks: list[PageTask]) -> list[Measured | NotExported]:
    """`measure_page` for each task in order, each document opened (and checked) once for its run of tasks."""
    results, opened = [], None
    try:
        for task in tasks:
            def document(task=task):
                nonlocal opened
                if opened is None or opened[0] != task.doc:
                    if opened is not None:
                        opened[1].close()
                    opened = None
                    opened = (task.doc, _open_checked(task.doc, task.doc_size, task.roots))
                return opened[1]

            results.append(_exported_or_reason(task, document, measure_page))
    finally:
        if opened is not None:
            opened[1].close()
    return results


# Pages arrive in document order, so one open document per worker serves a run of tasks.
_open: tuple[str, pymupdf.Document] | None = None


def run_page_task(task: PageTask) -> Exported | NotExported:
    """A pool worker's (or the inline run's) task: keeps its document open for the next page."""
    return _exported_or_reason(task, lambda: _document(task.doc, task.doc_size, task.roots))


def export_one(task: PageTask) -> Exported | NotExported:
    """One page on its own, its document opened and closed here (the app's previews)."""
    doc = None

    def document():
        nonlocal doc
        doc = _open_checked(task.doc, task.doc_size, task.roots)
        return doc

    try:
        return _exported_or_reason(task, document)
    finally:
        if doc is not None:
            doc.close()


def _exported_or_reason(task: PageTask, document, make=export_page) -> Exported | NotExported:
    try:
        return make(document(), task.page, task.settings, region=task.region, known_scan=task.known_scan,
                    picture=task.picture, mask=task.mask)
    except (DocumentError, FileChanged) as exc:
        return NotExported(str(exc))
    except FileNotFoundError:
        return NotExported(f"the file is gone: {task.doc}")
    except Image.DecompressionBombError as exc:
        return NotExported(f"the page's image is too large to read safely ({error_text(exc)}); skipped")
    except Exception as exc:  # MuPDF raises plain RuntimeError/ValueError for damaged content
        reason = error_text(exc)
        return NotExported(memory_message() if out_of_memory(reason) else f"could not read the page: {reason}")
    finally:
        pymupdf.TOOLS.store_shrink(100)  # MuPDF's cache is per process; keep it flat


class FileChanged(Exception):
    pass


def _open_checked(path: str, size: int, roots=None) -> pymupdf.Document:
    if os.stat(path).st_size != size:
        raise FileChanged(f"the file changed since it was scored; run ingest again: {path}")
    return open_document(path, roots)


def _document(path: str, size: int, roots=None) -> pymupdf.Document:
    global _open
    if _open is None or _open[0] != path:
        close_document()
        _open = (path, _open_checked(path, size, roots))
    return _open[1]


def close_document() -> None:
    global _open
    if _open is not None:
        _open[1].close()
        _open = None
