"""Export: the curator's decisions become a LoRA training ZIP that kohya_ss, ai-toolkit and diffusers
take as it is.

Stages, one module each: `settings` (the options, checked once), `selection` (kept pages, one per
group of near-duplicates, each one image or one per picture, and their file names), `source` (each page's picture at the resolution the
output needs: the embedded scan decoded reduced, or a render), `geometry` and `shape` (the whole page
or its picture; square pad/crop/stretch or SDXL buckets, Lanczos-3 by fast_image_resize, JPEG), `captions` (the template),
`layouts` (kohya, folder, diffusers; provenance and settings), `zipwriter` (deterministic, streamed,
renamed into place when complete), `worker` (one page in, one JPEG out), `job` (the run, its workers
and its progress in the manifest), `preview` (every image as exported, a screen at a time, and the ZIP's size,
for the app) and `card` (a picture's card in Review: its exported crop at a card's size, and its suggested kind).
"""

from .geometry import crop_box, nearest_bucket, plan_image, sdxl_buckets
from .job import Export, ExportError, ExportReport, export
from .layouts import image_folder
from .preview import (Counted, Estimate, Preview, count_export, estimate, estimate_export, estimate_items, preview,
                      sample_items, screen_items, screens)
from .selection import Item, LeftOut, Selection, select, select_items, thumbnail_sizes
from .settings import CROPS, DUPLICATES, FITS, LAYOUTS, MODES, ExportSettings, SettingsError
from .worker import export_page
from .zipwriter import safe_zip_name

__all__ = [
    "CROPS", "Counted", "DUPLICATES", "FITS", "LAYOUTS", "MODES", "Export", "ExportError", "ExportReport", "ExportSettings",
    "Estimate", "Item", "LeftOut", "Preview", "Selection", "SettingsError", "count_export", "crop_box", "estimate", "estimate_export", "estimate_items",
    "export",
    "export_page", "image_folder", "nearest_bucket", "plan_image", "preview", "safe_zip_name", "sample_items",
    "screen_items", "screens", "sdxl_buckets", "select", "select_items", "thumbnail_sizes",
]
