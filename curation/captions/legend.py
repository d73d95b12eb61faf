"""A picture's printed legend: the lines of type directly under it (or, failing that, over it), within
its width, before the next picture or the body text starts, read by Tesseract; failing both, a column of
vertical type beside it (a Japanese or Chinese book's figure title: `vertical`), read by the recognizer.

Where the lines are is worked out on the page itself, read at OCR resolution around the pictures
(the 144-dpi reference image is too coarse for 7-pt type): rows of ink under the picture are lines
of type. The first must start close to the picture (or to a frame's rule under it), the next follow
closely in type of the same size, and a clear gap, a rule, or type of another size end them; they are
few, centred under the picture, and none runs on past its sides into a column of text. Body text fails
one of these: beside the picture it is not under it, under it it is a paragraph of many lines, or its
lines run across the whole column. A single line under a corner is an engraver's credit, passed over.
Cuts under a square inch (an advertisement's stock cuts) are not read: the text round them is the
advertisement's.

The engine is tesserocr's (its wheel carries libtesseract); the language data comes from the system
(Debian's tesseract-ocr-* packages). Without either, `installed_languages()` is empty, nothing is
read, and `engine_note()` says how to get legends.
"""

from __future__ import annotations

import functools
import json
import math
import os
import pathlib
import threading
from dataclasses import dataclass, replace

import cv2
import numpy as np

from ..manifest.settings import DEFAULT_LEGEND_LANGUAGES as DEFAULT_LANGUAGES
from ..manifest.settings import language_codes
from ..scoring.scorer import decode_gray, full_page_jpeg, reference_size
from . import recognizer, type_lines, vertical
from .best import LEGEND_CONFIDENCE_MIN
from .type_lines import FIRST_GAP_IN, LINE_MAX_IN, LINE_MIN_IN

LANGUAGE_NAMES = {"eng": "English", "deu": "German", "fra": "French", "frk": "German (Fraktur)", "rus": "Russian",
                  "ita": "Italian", "spa": "Spanish", "nld": "Dutch", "pol": "Polish", "lat": "Latin"}
LANGUAGE_PACKAGES = "tesseract-ocr-eng tesseract-ocr-deu tesseract-ocr-fra tesseract-ocr-frk tesseract-ocr-rus"
INSTALL_HINT = f"apt-get install {LANGUAGE_PACKAGES}"
TESSDATA_FOLDERS = ("/usr/share/tesseract-ocr/5/tessdata", "/usr/share/tesseract-ocr/4.00/tessdata",
                    "/usr/share/tessdata", "/usr/local/share/tessdata")

REFERENCE_DPI = 144  # picture boxes are in pixels of the reference render
OCR_DPI = 300  # 7-pt capitals are about 20 px tall here, where Tesseract reads best
MIN_PICTURE_IN2 = 1.0  # square inches: smaller cuts (a manicule, a pair of boots) stand in advertisements' text
SEARCH_DEPTH_IN = 1.2  # a legend lies within this distance of its picture
SIDE_IN, SIDE_SHARE = 0.15, 0.3  # a legend's line may run past the picture's sides by this much at most
GUTTER_IN = 0.25  # room beside a legend's widest line, for a neighbouring column's text to be seen
GUTTER, GUTTER_MIN_IN = 1.6, 0.03  # under a picture, a gap narrower than this many line heights is a word space
WORD_SPACE = 0.8  # beside it, a plain word space is narrower than this many line heights
EDGE_INK = 0.5  # columns of ink, in line heights, by the strip's side that make a word cut by it
CENTRE_SHARE = 0.12  # a legend's middle is this share of the picture's width from the picture's middle at most
UPRIGHT_IN = 0.25  # an upright stroke this tall is a column rule or a frame's side, not a letter
LINE_GAP = 1.2  # a gap wider than this many line heights ends the legend
SIZE_CHANGE = 1.8  # and so does a line this many times taller or shorter than its lines
MAX_LINES = 4  # more lines than this close together are a paragraph of body text
RULE_SHARE = 0.6  # a rule (or a frame's foot) runs across this share of the picture at least
SOLID_SHARE = 0.85  # a row inked across this share of the picture is a rule whatever its thickness
MIN_CONTRAST = 60  # gray levels between the paper and the darkest ink: less is no type at all
MIN_CONFIDENCE = LEGEND_CONFIDENCE_MIN  # below this the OCR read hatching, an ornament or a stamp
# A title is set to a measure a reader takes in: more characters a line than this is small print run across
# a page (a masthead's), not a legend (chosen leave one source out).
MAX_LINE_CHARS = 90
RECOGNIZER_MIN_CONFIDENCE = 0.85  # the recognizer's floor, on the mean probability of its characters
# "tesseract" alone; "foreign": the recognizer where what it reads is in a script Tesseract has no data for,
# or a line of capitals where Tesseract sees no letters (display type: outline or shaded capitals);
# "fallback": that, and whatever it reads where Tesseract reads no letters (a hand too); the "recognizer"
# alone. Measured each, leave one source out (bench/legend_quality.py --readers): "fallback" and the
# "recognizer" alone invent legends from a hand's labels.
READER = "foreign"
CAPITALS_SHARE = 0.9  # display capitals: this share of the letters read are capitals at least
CJK_LANGUAGES = {"jpn", "jpn_vert", "chi_sim", "chi_tra", "chi_sim_vert", "chi_tra_vert", "kor", "kor_vert"}
# A line of the column's text under the legend, in type this much larger than the legend's, ends it, gap
# or none (whether it does is chosen leave one source out).
BODY_ENDS_LEGEND, BODY_SIZE = True, 1.25
PAD_IN = 0.06  # paper around a legend, for the OCR
UNREAD = -1.0  # a picture's legend confidence while its legend is left to be read when wanted (captions.unread)


@dataclass(frozen=True)
class Legend:
    text: str
    confidence: float  # 0..1: Tesseract's mean word confidence


# -- the engine ---------------------------------------------------------------------------------


def tessdata_folder() -> str | None:
    """Where Tesseract's language data is: $TESSDATA_PREFIX, else Debian's and the usual folders."""
    candidates = [os.environ.get("TESSDATA_PREFIX", ""), *TESSDATA_FOLDERS]
    for folder in filter(None, candidates):
        if any(pathlib.Path(folder).glob("*.traineddata")):
            return folder
    return None


@functools.cache
def installed_languages() -> frozenset[str]:
    """Languages the engine can read; empty when tesserocr or the language data is missing."""
    folder = tessdata_folder()
    if folder is None:
        return frozenset()
    try:
        import tesserocr  # noqa: F401  (the engine: a wheel that can be missing on a platform without one)
    except ImportError:
        return frozenset()
    return frozenset(path.stem for path in pathlib.Path(folder).glob("*.traineddata")) - {"osd"}


def engine_note() -> str | None:
    """None when legends can be read; else one line saying how to get them."""
    try:
        import tesserocr  # noqa: F401
    except ImportError:
        return "Legends are not read: the OCR engine is missing (pip install -r requirements.txt)."
    if not installed_languages():
        return f"Legends are not read: Tesseract's language data is missing ({INSTALL_HINT})."
    return None


def check_languages(text: str) -> str:
    """'eng+deu' as Tesseract takes it (settings.language_codes); ValueError naming what is wrong. Where the
    engine is present, each language must be installed."""
    codes = language_codes(text).split("+")
    installed = installed_languages()
    missing = [code for code in codes if installed and code not in installed]
    if missing:
        raise ValueError(f"legend language not installed: {', '.join(missing)}; installed: "
                         f"{', '.join(sorted(installed))} (more with apt-get install tesseract-ocr-LANG)")
    return "+".join(codes)


_engines = threading.local()  # a Tesseract instance is not thread-safe, and loading one takes 0.3 s


def _engine(languages: str):
    import tesserocr

    engines = _engines.__dict__.setdefault("by_languages", {})
    if languages not in engines:
        engines[languages] = tesserocr.PyTessBaseAPI(path=tessdata_folder(), lang=languages,
                                                     psm=tesserocr.PSM.SINGLE_BLOCK)
    return engines[languages]


def ocr(gray: np.ndarray, languages: str = DEFAULT_LANGUAGES, dpi: int = OCR_DPI) -> Legend | None:
    """The text of an image of a few lines of type, with the confidence; None where it holds none, or
    what it holds reads as no legend (`is_legend`). Tesseract reads first; what it cannot read (a script
    it has no language data for: Japanese, Chinese; display capitals it sees no letters in) the recognizer
    reads, where it is installed (READER)."""
    read = ""
    if READER != "recognizer":
        read, confidence, lines = read_text(gray, languages, dpi)
        if is_legend(read, confidence, lines):
            return Legend(read, round(confidence, 3))
    if READER != "tesseract" and recognizer.available():
        text, confidence, lines = recognize(gray, dpi)
        if READER != "recognizer" and not _recognizers(text, read, languages):
            return None  # Tesseract read letters of its languages, unsurely: a hand, an ornament, Fraktur
        if is_legend(text, confidence, lines, RECOGNIZER_MIN_CONFIDENCE):
            return Legend(text, round(confidence, 3))
    return None


def _recognizers(text: str, read: str, languages: str) -> bool:
    """Whether the recognizer's read `text` is taken where Tesseract's, `read`, is no legend: a script
    Tesseract has no data for, or, where it saw no letters at all, capitals ("fallback": anything). Display
    capitals (outline, shaded) are shapes to Tesseract; a hand, which it sees no letters in either, writes
    in lower case."""
    if _foreign(text, languages):
        return True
    return _letters(read) < 2 and (READER == "fallback" or _capitals(text))


def _capitals(text: str) -> bool:
    letters = [ch for ch in text if ch.isalpha()]
    return len(letters) >= 2 and sum(ch.isupper() for ch in letters) >= CAPITALS_SHARE * len(letters)


def _letters(text: str) -> int:
    return sum(ch.isalnum() for ch in text)


def _wide(text: str) -> int:
    """Characters of Chinese, Japanese or Korean (East Asian wide or full-width)."""
    return sum(map(recognizer.is_wide, text))


def _foreign(text: str, languages: str) -> bool:
    """Whether `text` is mostly in a script none of Tesseract's `languages` reads: Chinese or Japanese
    without their data."""
    return _wide(text) * 2 > len(text.replace(" ", "")) and not set(languages.split("+")) & CJK_LANGUAGES


def read_text(gray: np.ndarray, languages: str, dpi: int) -> tuple[str, float, int]:
    """What Tesseract reads in `gray`: the text (lines joined by a space), its mean word confidence (0..1)
    and its number of lines."""
    from PIL import Image

    engine = _engine(languages)
    engine.SetImage(Image.fromarray(gray))
    engine.SetSourceResolution(dpi)
    # Column rules and a frame's sides beside the lines come out as "|".
    lines = [" ".join(w for w in line.split() if w.strip("|¦")) for line in engine.GetUTF8Text().splitlines()]
    lines = [line for line in lines if line]
    confidence = engine.MeanTextConf() / 100
    engine.Clear()
    return " ".join(lines), confidence, len(lines)


def recognize(gray: np.ndarray, dpi: float) -> tuple[str, float, int]:
    """What the recognizer reads in `gray`, line by line: the text (lines joined by a space), the mean
    probability of its characters (0..1) and its number of lines."""
    found = _ink(gray, dpi)
    if found is None:
        return "", 0.0, 0
    bands = type_lines.bands(found[0].sum(axis=1))
    rows = [(top, bottom) for top, bottom in bands if bottom - top >= LINE_MIN_IN * dpi]
    texts, weights = [], []
    for top, bottom in rows:
        pad = max(2, round(0.25 * (bottom - top)))
        text, confidence = recognizer.read_line(gray[max(0, top - pad):bottom + pad])
        if text:
            texts.append(text)
            weights.append((confidence, len(text)))
    if not texts:
        return "", 0.0, 0
    confidence = sum(c * n for c, n in weights) / sum(n for _, n in weights)
    return " ".join(texts), confidence, len(texts)


def is_legend(text: str, confidence: float, lines: int, floor: float | None = None) -> bool:
    """Whether a read is a legend: some letters (one, for a script that writes a word in one), read with
    confidence (`floor`, Tesseract's by default), no longer a line than a title."""
    return (_letters(text) >= (1 if _wide(text) else 2) and confidence >= (MIN_CONFIDENCE if floor is None else floor)
            and len(text) <= MAX_LINE_CHARS * lines)


# -- where a picture's legend is ------------------------------------------------------------------


@dataclass(frozen=True)
class Strip:
    """Where to look for one picture's legend, in reference pixels: `box` (x0, y0, x1, y1) holds the
    picture's columns widened by the sides a legend may use; `below`: it starts at the picture's edge."""

    box: tuple[int, int, int, int]
    picture: tuple[int, int]  # the picture's x0, x1
    below: bool
    open_end: bool  # its far end is the search depth, not the page's edge or another picture


def strips(box, boxes, width: int, height: int) -> list[Strip]:
    """Under the picture `box`, then over it, each stopping at any other picture in its way."""
    x0, y0, x1, y1 = box[:4]
    side = round(min(SIDE_IN * REFERENCE_DPI, SIDE_SHARE * (x1 - x0)) + GUTTER_IN * REFERENCE_DPI)
    left, right = max(0, x0 - side), min(width, x1 + side)
    depth = round(SEARCH_DEPTH_IN * REFERENCE_DPI)
    others = [b for b in boxes if tuple(b[:4]) != tuple(box[:4]) and b[0] < right and b[2] > left]
    below_end = min([height, y1 + depth] + [b[1] for b in others if b[1] >= y1])
    above_end = max([0, y0 - depth] + [b[3] for b in others if b[3] <= y0])
    found = []
    if below_end - y1 > 4:
        found.append(Strip((left, y1, right, below_end), (x0, x1), True, below_end == y1 + depth))
    if y0 - above_end > 4:
        found.append(Strip((left, above_end, right, y0), (x0, x1), False, above_end == y0 - depth))
    return found


def legend_box(gray: np.ndarray, strip: Strip, scale: float) -> tuple[int, int, int, int] | None:
    """The box (x0, y0, x1, y1 in `gray`'s pixels) of the legend in `gray`, the strip read at `scale`
    pixels per reference pixel; None where the strip holds none."""
    dpi = REFERENCE_DPI * scale
    found = _ink(gray, dpi)
    if found is None:
        return None
    ink, upright = found if strip.below else (found[0][::-1], found[1][::-1])  # from the picture outwards
    px0, px1 = (max(0, round((x - strip.box[0]) * scale)) for x in strip.picture)
    lines, rules = _lines(ink[:, px0:px1], dpi)
    def span(line):
        return _span(ink[line[0]:line[1]], upright[line[0]:line[1]], px0, px1, dpi)

    while lines:
        block = _block(lines, rules, ink.shape[0], dpi, strip.open_end, lambda line: span(line) is None)
        spans = [span(line) for line in block or ()]
        if not spans or None in spans:  # no block, or a line runs on into the next column: body text
            return None
        x0, x1 = min(s[0] for s in spans), max(s[1] for s in spans)
        if abs(x0 + x1 - px0 - px1) / 2 <= CENTRE_SHARE * (px1 - px0):
            return _unflipped((x0, block[0][0], x1, block[-1][1]), ink.shape[0], strip.below)
        if len(block) > 1:  # lines beside the middle: a paragraph, not a legend
            return None
        rules, lines = rules + [block[0][1]], lines[1:]  # an engraver's credit under a corner: the legend may follow
    return None


def _unflipped(box, height: int, below: bool) -> tuple[int, int, int, int]:
    """`box` in the strip's rows as read."""
    x0, top, x1, bottom = box
    return box if below else (x0, height - bottom, x1, height - top)


def percentiles(gray: np.ndarray, *qs: float) -> list[float]:
    """`np.percentile(gray, q)` for each q, the same values, from the strip's histogram (gray is 8-bit): the
    sort np.percentile does took 40 % of the time legends take on a page."""
    if gray.dtype != np.uint8:
        return [float(np.percentile(gray, q)) for q in qs]
    below = np.cumsum(np.bincount(gray.ravel(), minlength=256))  # pixels at or under each level
    values = []
    for q in qs:  # numpy's linear method, step by step, so that the float arithmetic is the same
        quantile = np.float64(q) / 100
        index = (gray.size - 1) * quantile
        first = np.floor(index)
        a, b = (np.uint8(np.searchsorted(below, i, side="right")) for i in (first, min(first + 1, gray.size - 1)))
        t, step = index - first, b - a
        values.append(float(b - step * (1 - t) if t >= 0.5 else a + step * t))
    return values


def _ink(gray: np.ndarray, dpi: float) -> tuple[np.ndarray, np.ndarray] | None:
    """Ink against the strip's paper without upright rules (column lines, a frame's sides), and those
    rules; None for a strip of blank paper."""
    paper, dark = percentiles(gray, 90, 0.2)
    if paper - dark < MIN_CONTRAST:
        return None
    ink = (gray < (paper + dark) / 2).astype(np.uint8)
    upright = cv2.morphologyEx(ink, cv2.MORPH_OPEN, np.ones((max(3, round(UPRIGHT_IN * dpi)), 1), np.uint8))
    return (ink & ~upright).astype(bool), upright.astype(bool)


def _lines(ink: np.ndarray, dpi: float) -> tuple[list[tuple[int, int]], list[int]]:
    """Rows of type (top, bottom) under the picture's columns, the picture at row 0, and the bottoms of
    the rules across it. Ink touching row 0 counts as a rule: it is the picture's own (its box hugs its
    strokes, found at a lower resolution), as a frame's rule is (frames are not part of its box)."""
    counts = ink.sum(axis=1)
    bands = type_lines.bands(counts)
    # Strokes that touch the picture's edge are its own (a ground line, a frame's corner, a numeral on the
    # frame); where they reach down to a line of type they would join it to the picture: type is looked
    # for without them.
    count, labels = cv2.connectedComponents(ink.view(np.uint8), connectivity=8)
    if count > 1 and ink[0].any():
        own = np.zeros(count, bool)
        own[labels[0]] = True
        own[0] = False
        mine = own[labels]
        apart = [band for band in type_lines.bands((ink & ~mine).sum(axis=1)) if band[0] > 0]
        bands = type_lines.bands((ink & mine).sum(axis=1))[:1] + apart
    # A band inked all across in one row is a rule, however thick the scan made it: type leaves gaps.
    solid = [counts[top:bottom].max() >= SOLID_SHARE * ink.shape[1] for top, bottom in bands]
    thin = [(top == 0 or bottom - top < LINE_MIN_IN * dpi) and counts[top:bottom].max() >= RULE_SHARE * ink.shape[1]
            for top, bottom in bands]
    # A band cut by the strip's far end is of unknown size: what lies past the end is not read.
    lines = [(top, bottom) for (top, bottom), rule in zip(bands, solid) if not rule
             and 0 < top and bottom < ink.shape[0] and LINE_MIN_IN * dpi <= bottom - top <= LINE_MAX_IN * dpi]
    rules = [bottom for (top, bottom), a, b in zip(bands, solid, thin) if a or b]
    return lines, rules


def _block(lines, rules: list[int], depth: int, dpi: float, open_end: bool,
           runs_on=lambda line: False) -> list[tuple[int, int]] | None:
    """The legend's lines: the first close to the picture (or to the last rule before it: a frame),
    each next one close to the last, a clear gap, a rule or a line of body text after them, and few.
    `depth`: the strip's height; `open_end`: more may follow past it; `runs_on(line)`: whether a line
    runs on past the strip's side, as the column's text does."""
    edge = max([0] + [rule for rule in rules if rule <= lines[0][0]]) if lines else 0
    if not lines or lines[0][0] - edge > FIRST_GAP_IN * dpi:
        return None
    block = [lines[0]]
    for top, bottom in lines[1:]:
        height = float(np.median([b - t for t, b in block]))
        if top - block[-1][1] > LINE_GAP * max(height, bottom - top) or any(block[-1][1] <= r <= top for r in rules):
            break  # a clear gap or a rule: the legend has ended
        if (BODY_ENDS_LEGEND and bottom - top >= BODY_SIZE * height and runs_on((top, bottom))
                and not runs_on(block[-1])):
            # A line of larger type across the column under a centred one: the text resumes under the
            # legend, set as closely as its own lines are (a book's page; a newspaper leaves a gap).
            break
        if not 1 / SIZE_CHANGE <= (bottom - top) / height <= SIZE_CHANGE:
            # Type of another size with no gap between: a stack of display lines ("THE TRUE / DIGESTIVE
            # FLUID / OR / GASTRIC JUICE"), an advertisement's lettering, not a legend standing apart.
            return None
        block.append((top, bottom))
    else:  # nothing after the block: was the gap after it seen?
        last = block[-1]
        if open_end and depth - last[1] < LINE_GAP * (last[1] - last[0]):
            return None  # it may go on past what was read: a column of text, not a legend
    return block if len(block) <= MAX_LINES else None


def _span(line: np.ndarray, upright: np.ndarray, px0: int, px1: int, dpi: float) -> tuple[int, int] | None:
    """Left and right of the line's words under the picture's columns; None when they run on past the
    strip's side, past where a legend may. Under the picture words join across a title's wide spaces;
    beside it only across a plain word space, so a neighbouring column's words stand apart, and never
    across a column rule."""
    height, width = line.shape
    wide, plain = (max(GUTTER_MIN_IN * dpi, share * height) for share in (GUTTER, WORD_SPACE))
    cols = np.flatnonzero(line.any(axis=0))
    gaps = np.diff(cols)
    beside = (cols[1:] <= px0) | (cols[:-1] >= px1)
    walled = np.diff(np.searchsorted(np.flatnonzero(upright.all(axis=0)), cols)) > 0
    groups = type_lines.runs(cols, (gaps > np.where(beside, plain, wide)) | walled)
    mine = [group for group in groups if group[0] < px1 and group[1] > px0]
    if not mine:
        return None
    left, right = max(mine, key=lambda group: group[1] - group[0])  # specks and a neighbour's words stand apart
    # Words cut by the strip's side run on past it; a speck there does not.
    inked = cols[(cols >= left) & (cols < right)]
    if max(np.count_nonzero(inked < plain), np.count_nonzero(inked >= width - plain)) >= EDGE_INK * height:
        return None
    return left, right


# -- a page's legends -----------------------------------------------------------------------------


def with_legends(result, doc, languages: str, scan: np.ndarray | None = None, score_min: float | None = None):
    """A scored page (`PageResult`) with each picture's legend and its confidence appended to its entry
    in `features["pictures"]`: [x0, y0, x1, y1, area, legend or null, confidence or null, score where the
    learned verdict or the finder gave one, region where the finder gave one]. A picture scored under `score_min`
    (judged not a picture) is not read: its confidence is UNREAD, and its legend is read when it is wanted
    (curation.captions.unread). A legend
    that cannot be read leaves the page's score as it is. `scan`: the page's scan in gray at full size,
    where scoring decoded it (scorer.score_page_and_scan)."""
    pictures = json.loads((result.features or {}).get("pictures") or "[]")
    if not pictures:
        return result
    wanted = [score_min is None or len(p) < 8 or p[7] is None or p[7] >= score_min for p in pictures]
    try:
        found = read_legends(doc, result.page, [p[:4] for p in pictures], languages, scan, wanted)
    except Exception:  # MuPDF on a damaged part, the engine, memory: a legend is an extra, the score stands
        return result
    entries = [[*p[:5], f.text if f else None, f.confidence if f else (None if read else UNREAD), *p[7:]]
               for p, f, read in zip(pictures, found, wanted)]
    return replace(result, features={**result.features, "pictures": json.dumps(entries)})


def read_legends(doc, number: int, boxes, languages: str = DEFAULT_LANGUAGES,
                 scan: np.ndarray | None = None, wanted: list[bool] | None = None) -> list[Legend | None]:
    """The legend of each picture of page `number` (`boxes`: x0, y0, x1, y1 in reference pixels), in
    the order given: under or over each picture, then, for those still without one, set vertically beside
    it (where the recognizer is installed); only of those `wanted` says (None: all), the others None. The page is
    read at OCR resolution around the pictures only, once for each (`scan`: the page's scan in gray at full size,
    if already decoded)."""
    width, height = reference_size(doc[number])
    wanted = [True] * len(boxes) if wanted is None else wanted
    read = [box if want and _area(box) >= MIN_PICTURE_IN2 else None for box, want in zip(boxes, wanted)]
    if scan is None and any(read):  # decoded once for every part read
        scan = _scan_gray(doc, number)
    found = _read_places(doc, number, [box and strips(box, boxes, width, height) for box in read], languages, scan)
    if READER != "tesseract" and recognizer.available():
        depth, top = round(SEARCH_DEPTH_IN * REFERENCE_DPI), round(vertical.TOP_IN * REFERENCE_DPI)
        besides = [box and not legend and vertical.beside(box, boxes, width, height, depth, top)
                   for box, legend in zip(read, found)]
        found = [legend or other for legend, other in zip(found, _read_places(doc, number, besides, languages, scan))]
    return found


def _read_places(doc, number: int, places: list, languages: str, scan) -> list[Legend | None]:
    """The legend found in each picture's `places` (a list of `Strip`s or `vertical.Beside`s, or nothing),
    the part of the page that holds them read once."""
    every = [strip for picture in places if picture for strip in picture]
    if not every:
        return [None] * len(places)
    area = tuple(f(s.box[i] for s in every) for i, f in enumerate((min, min, max, max)))
    gray, scale = read_area(doc, number, area, reference_size(doc[number]), scan)
    return [_legend(gray, area, scale, picture or [], languages) for picture in places]


def _area(box) -> float:
    return (box[2] - box[0]) * (box[3] - box[1]) / REFERENCE_DPI ** 2


def _legend(gray, area, scale: float, picture_strips: list, languages: str) -> Legend | None:
    """The first legend found under the picture, else over it, else beside it."""
    for strip in picture_strips:
        x0, y0, x1, y1 = (round((v - o) * scale) for v, o in zip(strip.box, (*area[:2], *area[:2])))
        part = gray[y0:y1, x0:x1]
        if isinstance(strip, vertical.Beside):
            legend = _vertical_legend(part, strip, scale)
            if legend is not None:
                return legend
            continue
        box = legend_box(part, strip, scale)
        if box is not None:
            legend = ocr(_on_paper(part, box, round(PAD_IN * REFERENCE_DPI * scale)), languages,
                         round(REFERENCE_DPI * scale))
            if legend is not None:
                return legend
    return None


def _vertical_legend(part: np.ndarray, strip, scale: float) -> Legend | None:
    """The legend set in a column beside the picture, where `part` (the strip `strip`) holds one."""
    box = column_box(part, strip, scale)
    if box is None:
        return None
    x0, y0, x1, y1 = box
    text, confidence = vertical.read_column(part[y0:y1, x0:x1], round(PAD_IN * REFERENCE_DPI * scale))
    mostly_wide = _wide(text) * 2 > len(text.replace(" ", ""))  # Latin type turned a quarter is not
    if mostly_wide and is_legend(text, confidence, 1, vertical.VERTICAL_MIN_CONFIDENCE):
        return Legend(text, round(confidence, 3))
    return None


def column_box(part: np.ndarray, strip, scale: float) -> tuple[int, int, int, int] | None:
    """The box of the column of vertical type in `part` (the strip `strip` beside a picture, read at `scale`
    pixels per reference pixel) that is the picture's legend; None where it holds none."""
    dpi = REFERENCE_DPI * scale
    found = _ink(part, dpi)
    return None if found is None else vertical.column_box(found[0], strip, scale, dpi)


def _on_paper(gray: np.ndarray, box, pad: int) -> np.ndarray:
    """The legend's lines alone on a margin of paper: Tesseract reads the edge of a neighbouring line or
    word that a plain crop takes in."""
    x0, y0, x1, y1 = box
    paper = np.full((y1 - y0 + 2 * pad, x1 - x0 + 2 * pad), np.percentile(gray, 90), np.uint8)
    paper[pad:pad + y1 - y0, pad:pad + x1 - x0] = gray[y0:y1, x0:x1]
    return paper


def read_area(doc, number: int, area, size, scan: np.ndarray | None = None) -> tuple[np.ndarray, float]:
    """Part `area` (reference pixels) of the page in gray at OCR_DPI (less for a very large part),
    with its pixels per reference pixel. Read from the scan: `scan` (the page's JPEG decoded in gray
    at full size) or the JPEG decoded now; a page that is no plain scan is rendered, just that part,
    as an export renders a picture."""
    # The exporter's package imports the ingest runner, which reads legends: imported when used.
    from ..export.settings import MAX_SIZE, MIN_SIZE, ExportSettings
    from ..export.source import read_source

    x0, y0, x1, y1 = area
    scale = min(OCR_DPI / REFERENCE_DPI, MAX_SIZE / max(x1 - x0, y1 - y0))  # a very large part a little coarser
    target = (max(1, round((x1 - x0) * scale)), max(1, round((y1 - y0) * scale)))
    if scan is None:
        scan = _scan_gray(doc, number)
    if scan is not None:
        fx, fy = scan.shape[1] / size[0], scan.shape[0] / size[1]
        gray = scan[round(y0 * fy):round(y1 * fy), round(x0 * fx):round(x1 * fx)]
    else:
        settings = ExportSettings(size=max(MIN_SIZE, math.ceil(max(x1 - x0, y1 - y0) * scale)))
        region = (x0 / size[0], y0 / size[1], x1 / size[0], y1 / size[1])
        source = read_source(doc, number, settings, region=region, use_scan=False)
        x0, y0, x1, y1 = (round(v) for v in source.box)
        gray = cv2.cvtColor(np.ascontiguousarray(source.image[y0:y1, x0:x1]), cv2.COLOR_RGB2GRAY)
    if gray.shape[::-1] != target:  # a scan at its own resolution: brought to OCR resolution
        gray = cv2.resize(gray, target, interpolation=cv2.INTER_AREA if gray.shape[1] > target[0] else cv2.INTER_CUBIC)
    return gray, scale


def _scan_gray(doc, number: int) -> np.ndarray | None:
    """The page's scan decoded in gray at full size, where the page is one plain JPEG; else None. Its
    luma is what the export's colour decode turns to gray, within a level."""
    page = doc[number]
    jpeg = full_page_jpeg(doc, page, exact_colours=True)  # rendered otherwise, as the export does
    if jpeg is None:
        return None
    try:
        return decode_gray(jpeg[0])
    except ValueError:  # truncated or corrupt: MuPDF draws what it can
        return None
