"""A picture's card in Review: its crop exactly as the export writes it (crop "pictures", square, padded with
the paper's colour, its margin paper where the page around it is not), read and shaped by the export's own code
at a card's size. (A picture's kind is suggested by the picture job, from the embedding's input:
curation.pictures.kind.)

The export reads a picture's region of the page at the resolution its output needs (source.read_source), so
a card made here is the exported image scaled down, whatever the picture's size: a one-square-inch cut is as
sharp on its card as in the ZIP, where a card cut from the page's 256-pixel thumbnail was a 30-pixel blur.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from types import SimpleNamespace

import pymupdf

from ..scoring.result import PageResult
from .geometry import crop_region, picture_region
from .settings import ExportSettings
from .shape import encode_jpeg, shape_image
from .source import read_source, scans_decoded_once

CARD_SIDE = 256  # pixels: a card is 130-200 CSS pixels wide; as a page thumbnail (about 10 kB a card)
CARD_QUALITY = 80
CARD_SETTINGS = ExportSettings(size=CARD_SIDE, crop="pictures")  # the export's defaults otherwise: square, pad


def picture_card(doc: pymupdf.Document, number: int, box: Sequence[float], width: int, height: int, *,
                 known_scan: bool = False) -> bytes:
    """The card (a JPEG CARD_SIDE square) of the picture `box` (reference pixels of a page `width` by
    `height`) on page `number` of `doc`. `known_scan`: see source.read_source."""
    item = SimpleNamespace(picture_box=tuple(box[:4]), width=width, height=height, picture=1)
    source = read_source(doc, number, CARD_SETTINGS, region=crop_region(item, CARD_SETTINGS), known_scan=known_scan)
    return encode_jpeg(shape_image(source, CARD_SETTINGS, picture_region(item, CARD_SETTINGS)), CARD_QUALITY)


def with_picture_cards(result: PageResult, doc: pymupdf.Document) -> PageResult:
    """A scored page with the cards of the pictures it found (ingest's worker, while the page is open and its
    scan in MuPDF's cache). A picture whose card cannot be cut has none: its page is scored all the same."""
    found = json.loads((result.features or {}).get("pictures", "[]"))
    if result.status != "ok" or not found:
        return result
    cards = []
    with scans_decoded_once():  # the page's pictures read at one reduction decode its scan once
        for picture in found:
            try:
                cards.append(picture_card(doc, result.page, picture[:4], result.width, result.height,
                                          known_scan=result.method == "jpeg"))
            except Exception:  # MuPDF raises plain RuntimeError/ValueError for damaged content: no card, no failure
                cards.append(None)
    return replace(result, picture_cards=tuple(cards))
