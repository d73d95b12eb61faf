"""What the dashboard draws: thumbnails wherever the manifest keeps them, picture boxes on them, the
pictures listing, and a page drawn large from its PDF (only under the allowed folders).
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import time
from collections.abc import Iterable

import PIL.Image
import PIL.ImageDraw
import pymupdf

from ..captions.best import kind_of
from ..decisions.picture_kinds import learned_kinds
from ..manifest import thumbnail_store
from ..scoring.scorer import THUMBNAIL_QUALITY, THUMBNAIL_SIDE
from ..sources.page_numbers import page_number
from ..sources.paths import reading_roots
from ..sources.reader import error_text, open_document
from ..manifest.rules import (KEEP_SQL, LIVE_DOCUMENT_SQL, OUTLINED_SQL, PICTURE_AREA_SQL, PICTURE_BOX_SQL, PICTURE_DECIDED_BY_SQL,
                     PICTURE_KEEP_SQL)
from ..manifest.store import Manifest
from .filters import _by_keys, decision_params


RENDER_LONG_SIDE = 2400  # pixels: enough to judge an engraving's line work on a large screen


RENDER_MAX_ZOOM = 4.0


OUTLINE_COLOUR = (232, 93, 4)  # picture boxes on thumbnails: an orange no scan is printed in


def thumbnails(manifest: Manifest, keys: Iterable[tuple[int, int]], *,
               draw_missing: bool = False) -> dict[tuple[int, int], bytes]:
    """The thumbnails of the given (doc_id, page) pairs, wherever the manifest keeps them: its table, then
    the folder beside it, whatever the store set now (thumbnails stored before a change stay readable).
    Pages without one are absent; with `draw_missing`, a scored page without one (the store `none`) is
    drawn from its PDF at thumbnail size when the PDF is at hand (kept in memory, DRAWN_KEPT of them)."""
    keys = list(keys)
    found = _by_keys(manifest, "thumbnails", "jpeg", keys)
    missing = [key for key in keys if key not in found]
    folder = manifest.thumbnail_folder
    if not missing or not (draw_missing or folder.is_dir()):
        return found
    documents = {row["id"]: row for row in manifest.conn.execute(
        f"SELECT id, sha256, path, size FROM documents WHERE id IN ({', '.join(str(int(d)) for d, _ in missing)})")}
    missing = [key for key in missing if key[0] in documents]
    if folder.is_dir():
        for doc_id, page in missing:
            jpeg = thumbnail_store.read_file(thumbnail_store.file_of(folder, documents[doc_id]["sha256"], page))
            if jpeg is not None:
                found[(doc_id, page)] = jpeg
    missing = [key for key in missing if key not in found]
    if draw_missing and missing:
        # Only pages that were scored: a failed page may be one that takes hours to draw.
        scored = _by_keys(manifest, "pages", "status", missing)
        roots = _document_roots(manifest, {documents[doc_id]["path"] for doc_id, _ in missing})
        for doc_id, page in missing:
            doc = documents[doc_id]
            if scored.get((doc_id, page)) == "ok":
                with contextlib.suppress(PageUnavailable):
                    found[(doc_id, page)] = _drawn_thumbnail(doc["path"], doc["size"], doc["sha256"], page, roots)
    return found


DRAWN_KEPT = 400  # drawn thumbnails kept in memory (about 10 kB each): ten screens of Review


@functools.lru_cache(maxsize=DRAWN_KEPT)
def _drawn_thumbnail(path: str, size: int, sha256: str, page: int, roots: tuple[str, ...]) -> bytes:
    """Keyed by content as well as path: another manifest's document at the same path is drawn anew."""
    return draw_page(path, size, page, THUMBNAIL_SIDE, quality=THUMBNAIL_QUALITY, roots=roots)


def _document_roots(manifest: Manifest, paths: Iterable[str]) -> tuple[str, ...]:
    """The folders these documents may be drawn from: the allowed folders, and the folder of a document a
    command-line ingest read from outside them; a document under them must still lie there when opened."""
    return tuple(str(root) for root in reading_roots(manifest.path, manifest, {os.path.dirname(p) for p in paths}))


def pictures_for(manifest: Manifest, keys: Iterable[tuple[int, int]]) -> dict[tuple[int, int], list[tuple]]:
    """Every picture box of the given pages as the curator left them (x0, y0, x1, y1, square inches;
    reference pixels; deleted ones and candidates under the score cutoff left out, as Manifest.pictures), the scorer's largest first, in one query; pages without a
    picture are absent."""
    keys = list(keys)
    if not keys:
        return {}
    boxes: dict[tuple[int, int], list[tuple]] = {}
    rows = manifest.conn.execute(
        f"WITH k(doc_id, page) AS (VALUES {', '.join('(?, ?)' for _ in keys)}) "
        f"SELECT x.doc_id, x.page, {PICTURE_BOX_SQL}, {PICTURE_AREA_SQL} FROM k JOIN pictures x "
        f"ON x.doc_id = k.doc_id AND x.page = k.page WHERE NOT x.deleted AND {OUTLINED_SQL} "
        f"ORDER BY x.doc_id, x.page, x.rank IS NULL, x.rank, x.number", [n for key in keys for n in key])
    for doc_id, page, *box in rows:
        boxes.setdefault((doc_id, page), []).append(tuple(box))
    return boxes


PICTURE_OVERRIDES = {1: "include", 0: "exclude", None: "auto"}
LEARNED_BATCH = 2048  # pictures whose learned kinds are read at once, as the rows stream


def picture_rows(manifest: Manifest, threshold: float | None = None, *, rule: str | None = None,
                 picture_area_min: float | None = None) -> Iterable[dict]:
    """Every picture, in document and page order: `picture` is its number on its page (1 the scorer's
    largest when first found; stable while the manifest holds it, as export names it), x0 y0 x1 y1 its box
    as fractions of the page (the curator's where redrawn), `area` its square inches; `keep` whether
    `export --crop pictures` writes it (its page is kept and so is the picture), `decided_by` who decided it
    (override, page, added, deleted or threshold), `override` the curator's decision on it (include,
    exclude or auto), `found` whether the scorer still finds it, `kind` (the curator's, else the kind learned from
    the pictures like it the curator marked, else the shipped model's suggestion; `kind_by` says which), the printed `legend` with its OCR `legend_confidence`, the model's
    `auto_caption` and `auto_caption_model`, and whether the curator switched the legend or the model's
    caption off (`no_legend`, `no_auto_caption`: the export then leaves it out), and `score`, the learned
    verdict's probability that it is a picture (None where the rule-based finder found it or a curator drew
    it). One query, streamed."""
    bound = decision_params(manifest, threshold, rule, picture_area_min)
    rows = manifest.conn.execute(
        f"SELECT x.id, d.path AS doc, x.page, x.number AS picture, {PICTURE_BOX_SQL}, p.width, p.height, "
        f"{PICTURE_AREA_SQL} AS area, ({KEEP_SQL}) AND ({PICTURE_KEEP_SQL}) AS keep, "
        f"{PICTURE_DECIDED_BY_SQL} AS decided_by, x.keep AS override, x.rank IS NOT NULL OR x.added AS found, "
        f"x.caption, x.kind, x.kind_suggested, x.legend, x.legend_confidence, x.auto_caption, "
        f"x.auto_caption_model, x.no_legend, x.no_auto_caption, x.score "
        f"FROM pictures x JOIN pages p ON p.doc_id = x.doc_id AND p.page = x.page "
        f"JOIN documents d ON d.id = p.doc_id LEFT JOIN overrides o ON o.doc_id = p.doc_id AND o.page = p.page "
        f"WHERE {LIVE_DOCUMENT_SQL} AND p.status = 'ok' ORDER BY d.path, x.page, x.number", bound)
    for batch in iter(lambda: rows.fetchmany(LEARNED_BATCH), []):
        learned = learned_kinds(manifest, (row["id"] for row in batch if not row["kind"]))
        yield from (_picture_row(row, learned.get(row["id"])) for row in batch)


def _picture_row(row, learned) -> dict:
    """One of picture_rows' rows; `learned` the kind learned from the curator's marks, or None."""
    box = {k: round(row[b] / row[size], 4) for k, b, size in
           (("x0", "bx0", "width"), ("y0", "by0", "height"), ("x1", "bx1", "width"), ("y1", "by1", "height"))}
    return {"doc": row["doc"], "page": row["page"], "picture": row["picture"], **box,
            "area": round(row["area"], 3), "keep": bool(row["keep"]), "decided_by": row["decided_by"],
            "override": PICTURE_OVERRIDES[row["override"]], "found": bool(row["found"]), "caption": row["caption"],
            "kind": kind_of(row, learned), "kind_by": _kind_by(row, learned),
            "legend": row["legend"], "legend_confidence": row["legend_confidence"],
            "auto_caption": row["auto_caption"], "auto_caption_model": row["auto_caption_model"],
            "no_legend": bool(row["no_legend"]), "no_auto_caption": bool(row["no_auto_caption"]),
            "score": row["score"]}


def open_jpeg(image: bytes) -> PIL.Image.Image:
    """A page image the product made (a thumbnail, a drawn page, an exported picture: JPEG) opened with
    Pillow's JPEG reader only: a thumbnail folder's file replaced by another format (EPS would run
    Ghostscript) is refused (PIL.UnidentifiedImageError), never handed to another of Pillow's readers."""
    return PIL.Image.open(io.BytesIO(image), formats=("JPEG",))


def _kind_by(row, learned) -> str | None:
    """Who said the picture's kind: the curator, the curator's marks on pictures like it ("learned"), the
    shipped model (a suggestion), or nobody yet."""
    return ("curator" if row["kind"] else "learned" if learned else "suggested" if row["kind_suggested"]
            else None)


def outline_pictures(image: bytes, boxes: list[tuple], width: int | None) -> bytes:
    """`image` (a thumbnail or a rendered page, JPEG) with each picture box drawn on it; `width` is the
    page's width in reference pixels, which the boxes are measured in."""
    if not boxes or not width:
        return image
    boxes = tuple(tuple(box[:4]) for box in boxes)
    return _kept_outline(image, boxes, width) if len(image) <= OUTLINE_KEPT_BYTES else _outline(image, boxes, width)


def edge_thumbnails(manifest: Manifest, rows: list[dict], measure: str) -> dict[tuple[int, int], bytes]:
    """The thumbnails of Threshold's pages at the edge (`rows`, cut on `measure`). Where the cut is on the picture
    area, each with the picture that decides its page outlined (its largest), so a page kept for "3.21 sq in"
    shows which 3.21 square inches: a stain, a rule, an engraving."""
    keys = [(row["doc_id"], row["page"]) for row in rows]
    thumbs = thumbnails(manifest, keys, draw_missing=True)
    if measure != "picture_area":
        return thumbs
    boxes, widths = pictures_for(manifest, keys), {key: row["width"] for key, row in zip(keys, rows)}
    deciding = {key: [max(found, key=lambda box: box[4])] for key, found in boxes.items()}
    return {key: outline_pictures(thumb, deciding.get(key), widths.get(key)) for key, thumb in thumbs.items()}


OUTLINES_KEPT = 400  # outlined thumbnails kept in memory (about 10 kB each): ten screens of Review
OUTLINE_KEPT_BYTES = 64_000  # a thumbnail's; a page drawn large is outlined afresh, not kept


@functools.lru_cache(maxsize=OUTLINES_KEPT)
def _kept_outline(image: bytes, boxes: tuple, width: int) -> bytes:
    """Each Review run shows the same screen again after a key: its thumbnails are outlined once. Keyed by the
    image's bytes and the boxes: a redrawn box or a new thumbnail is outlined anew."""
    return _outline(image, boxes, width)


def _outline(image: bytes, boxes: tuple, width: int) -> bytes:
    with open_jpeg(image) as opened:
        picture = opened.convert("RGB")
    scale = picture.width / width
    draw = PIL.ImageDraw.Draw(picture)
    line = max(2, round(picture.width / 150))
    for x0, y0, x1, y1, *_ in boxes:
        draw.rectangle([x0 * scale, y0 * scale, x1 * scale, y1 * scale], outline=OUTLINE_COLOUR, width=line)
    out = io.BytesIO()
    picture.save(out, "JPEG", quality=90)
    return out.getvalue()


class PageUnavailable(Exception):
    """The page cannot be drawn from its PDF; the message says why, for a person."""


def render_page(manifest: Manifest, doc_id: int, page: int, long_side: int = RENDER_LONG_SIDE) -> bytes:
    """A page drawn fresh from its PDF at high resolution, as JPEG bytes.

    Raises PageUnavailable when the file is gone, changed since it was scored, or unreadable.
    """
    doc = manifest.document(doc_id)
    if doc is None:
        raise PageUnavailable(f"document {doc_id} is not in the manifest")
    return draw_page(doc["path"], doc["size"], page, long_side, roots=_document_roots(manifest, [doc["path"]]))


def draw_cards(manifest: Manifest, rows: Iterable) -> dict[int, bytes]:
    """The cards of picture `rows` (picture rows, box as the curator left it) drawn from their PDF where it is at
    hand, by id, each kept in the manifest's store for next time (an added or redrawn box, a manifest ingested
    before cards were kept); a picture whose PDF is not at hand is absent."""
    rows = list(rows)
    if not rows:
        return {}
    sizes = {row["id"]: row["size"] for row in manifest.conn.execute(
        f"SELECT id, size FROM documents WHERE id IN ({', '.join(str(int(r['doc_id'])) for r in rows)})")}
    roots = _document_roots(manifest, {row["doc"] for row in rows})
    drawn = {}
    minute = int(time.monotonic() // 60)  # a card that could not be drawn is tried again a minute later
    for row in rows:
        box = (row["bx0"], row["by0"], row["bx1"], row["by1"])
        jpeg = _drawn_card(row["doc"], sizes.get(row["doc_id"], -1), row["sha256"], row["page"], box, row["width"],
                           row["height"], roots, minute)
        if jpeg is not None:
            drawn[row["id"]] = jpeg
    if drawn and manifest.thumbnail_store != "none":
        manifest.store_picture_cards((row, drawn[row["id"]]) for row in rows if row["id"] in drawn)
    return drawn


def _drawn_card(path: str, size: int, sha256: str, page: int, box: tuple, width: int, height: int,
                roots: tuple[str, ...], minute: int) -> bytes | None:
    """The card, or None when its PDF cannot give it: a failure is remembered for the `minute`, so the reruns of
    a screen whose PDFs are gone or refused do not try again and again."""
    failure = (path, size, page, box, minute)
    if failure in _CARDS_FAILED:
        return None
    try:
        return _card(path, size, sha256, page, box, width, height, roots)
    except PageUnavailable:
        if len(_CARDS_FAILED) >= DRAWN_KEPT:
            _CARDS_FAILED.clear()
        _CARDS_FAILED.add(failure)
        return None


_CARDS_FAILED: set[tuple] = set()


@functools.lru_cache(maxsize=DRAWN_KEPT)
def _card(path: str, size: int, sha256: str, page: int, box: tuple, width: int, height: int,
          roots: tuple[str, ...]) -> bytes:
    """Keyed by content and box: kept in memory for the store `none`, which keeps no card on disk."""
    from ..export.card import picture_card  # the export's package reads the manifest: imported when needed
    try:
        if os.stat(path).st_size != size:
            raise PageUnavailable(f"{path} has changed since it was scored")
        with open_document(path, roots) as pdf:
            return picture_card(pdf, page, box, width, height)
    except PageUnavailable:
        raise
    except Exception as exc:  # gone, unreadable, outside the allowed folders, damaged: no card
        raise PageUnavailable(f"{path}, page {page_number(page)}: {error_text(exc)}") from exc


def draw_page(path: str, scored_size: int, page: int, long_side: int, quality: int = 90, roots=None) -> bytes:
    """Page `page` of the PDF at `path`, `long_side` pixels on its long side, as JPEG bytes; raises
    PageUnavailable when the file is gone, is no longer the `scored_size` bytes it had, is unreadable, or
    (with `roots`) no longer lies under them when opened."""
    try:
        size = os.stat(path).st_size
    except OSError:
        raise PageUnavailable(
            f"The source PDF is no longer at {path}. The thumbnail is all the manifest holds; "
            "ingest the file from its new place to open its pages again."
        ) from None
    if size != scored_size:
        raise PageUnavailable(f"{path} has changed since it was scored; ingest it again to see it as it is now.")
    try:
        with open_document(path, roots) as pdf:
            drawn = pdf[page]
            zoom = min(RENDER_MAX_ZOOM, long_side / max(drawn.rect.width, drawn.rect.height))
            pix = drawn.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), colorspace=pymupdf.csRGB, alpha=False)
            return pix.tobytes("jpeg", jpg_quality=quality)
    except Exception as exc:  # MuPDF raises plain RuntimeError/ValueError for damaged files
        raise PageUnavailable(f"{path}, page {page_number(page)}, cannot be drawn: {error_text(exc)}") from exc
