"""A picture's card in Review: its crop exactly as the export writes it (crop "pictures", square, padded with
the paper's colour), read and shaped by the export's own code at a card's size, and a suggested kind.

The export reads a picture's region of the page at the resolution its output needs (source.read_source), so
a card made here is the exported image scaled down, whatever the picture's size: a one-square-inch cut is as
sharp on its card as in the ZIP, where a card cut from the page's 256-pixel thumbnail was a 30-pixel blur.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from types import SimpleNamespace

import cv2
import numpy as np
import pymupdf

from ..scoring.result import PageResult
from .geometry import crop_region
from .settings import ExportSettings
from .shape import encode_jpeg, shape_image
from .source import read_source

CARD_SIDE = 256  # pixels: a card is 130-200 CSS pixels wide; as a page thumbnail (about 10 kB a card)
CARD_QUALITY = 80
CARD_SETTINGS = ExportSettings(size=CARD_SIDE, crop="pictures")  # the export's defaults otherwise: square, pad
# The suggestion (see suggest_kind): a picture mostly of mid-tones with soft edges is a halftone.
HALFTONE_MID_SHARE = 0.45
HALFTONE_MAX_EDGES = 0.15


def picture_card(doc: pymupdf.Document, number: int, box: Sequence[float], width: int, height: int, *,
                 known_scan: bool = False) -> tuple[bytes, str]:
    """The card (a JPEG CARD_SIDE square) of the picture `box` (reference pixels of a page `width` by
    `height`) on page `number` of `doc`, and the kind suggest_kind reads in it. `known_scan`: see
    source.read_source."""
    item = SimpleNamespace(picture_box=tuple(box[:4]), width=width, height=height, picture=1)
    source = read_source(doc, number, CARD_SETTINGS, region=crop_region(item, CARD_SETTINGS), known_scan=known_scan)
    image = shape_image(source, CARD_SETTINGS)
    left, top = source.plan.offset
    part_width, part_height = source.plan.size
    return encode_jpeg(image, CARD_QUALITY), suggest_kind(image[top:top + part_height, left:left + part_width])


def suggest_kind(image: np.ndarray) -> str:
    """"halftone" or "engraving" for a picture (RGB or gray pixels): a suggestion, never a verdict.

    A halftone screen, seen at a card's size, is a continuous tone: most of it mid-grey between paper and
    ink, with soft edges. Line work (engraving, woodcut, a cartoon, a map) is ink lines on paper: few
    mid-tones, sharp edges. Nothing here tells an engraving from a woodcut, a cartoon, a map or a diagram;
    the curator says those."""
    gray = image if image.ndim == 2 else cv2.cvtColor(np.ascontiguousarray(image[..., :3]), cv2.COLOR_RGB2GRAY)
    gray = cv2.GaussianBlur(gray, (0, 0), 1.0)  # a fine screen's dots merge into their tone, lines stay lines
    ink, paper = np.percentile(gray, (2, 98))
    spread = float(paper - ink)
    if spread < 24:  # a blank or flat picture: nothing to read
        return "engraving"
    levels = ((gray.astype(np.float32) - ink) / spread).astype(np.float32)
    mid_share = float(np.mean((levels > 0.2) & (levels < 0.8)))
    edges = float(np.mean(np.abs(cv2.Laplacian(levels, cv2.CV_32F))))
    return "halftone" if mid_share >= HALFTONE_MID_SHARE and edges <= HALFTONE_MAX_EDGES else "engraving"


def with_picture_cards(result: PageResult, doc: pymupdf.Document) -> PageResult:
    """A scored page with the cards of the pictures it found (ingest's worker, while the page is open and its
    scan in MuPDF's cache). A picture whose card cannot be cut has none: its page is scored all the same."""
    found = json.loads((result.features or {}).get("pictures", "[]"))
    if result.status != "ok" or not found:
        return result
    cards = []
    for picture in found:
        try:
            cards.append(picture_card(doc, result.page, picture[:4], result.width, result.height,
                                      known_scan=result.method == "jpeg"))
        except Exception:  # MuPDF raises plain RuntimeError/ValueError for damaged content: no card, no failure
            cards.append(None)
    return replace(result, picture_cards=tuple(cards))
