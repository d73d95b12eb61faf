"""Hostile PDFs, for the fuzz campaign in the tests and bench/fuzz_ingest.py.

Two families. Crafted files each attack one resource: time (a tiling pattern with a microscopic
step, operator floods), memory (a flate bomb, an image that declares 24000 x 24000 pixels) or the
parser (page-tree loops, deep nesting, a page count that lies). Mutations start from a good
generated scan PDF and damage it the way transfers and bad tools do: byte flips in streams and in
JPEG headers, truncations, garbage over the xref and trailer, corrupted object headers.

Everything is deterministic for a seed and small on disk; the bombs inflate only when read.
"""

from __future__ import annotations

import pathlib
import re
import zlib
from collections.abc import Callable, Iterator

import numpy as np

from .synthetic import PageSpec, periodical_specs, write_pdf

PAGE = (216, 288)  # points: the 3 x 4 inch pages the tests use
CHUNK = 1 << 20


def raw_pdf(objects: list[bytes], root: int = 1) -> bytes:
    """A PDF made of `objects` (the bodies of objects 1, 2, ...), with a correct xref and trailer."""
    out = bytearray(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<</Size %d/Root %d 0 R>>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, root, xref)
    return bytes(out)


def stream(dictionary: bytes, data: bytes) -> bytes:
    return b"<<" + dictionary + b"/Length %d>>\nstream\n" % len(data) + data + b"\nendstream"


def deflated(chunks: Iterator[bytes]) -> bytes:
    """zlib data of the chunks, compressed as they come (a bomb never exists inflated here)."""
    packer = zlib.compressobj(9)
    return b"".join(packer.compress(chunk) for chunk in chunks) + packer.flush()


def repeated(unit: bytes, total: int) -> Iterator[bytes]:
    block = unit * max(1, CHUNK // len(unit))
    for _ in range(total // len(block)):
        yield block
    yield block[: total % len(block)]


def one_page(content: bytes, resources: bytes = b"<<>>", extra: list[bytes] = ()) -> bytes:
    """Catalog, page tree and one page drawing `content`; `extra` objects are numbered from 5."""
    return raw_pdf([
        b"<</Type/Catalog/Pages 2 0 R>>",
        b"<</Type/Pages/Kids[3 0 R]/Count 1>>",
        b"<</Type/Page/Parent 2 0 R/MediaBox[0 0 %d %d]/Resources %s/Contents 4 0 R>>" % (*PAGE, resources),
        content,
        *extra,
    ])


# -- crafted ----------------------------------------------------------------------------------


def tiling_hang() -> bytes:
    """A valid page filled with a tiling pattern whose cell is 0.001 pt: MuPDF draws ~10^11 cells."""
    cell = stream(b"/Type/Pattern/PatternType 1/PaintType 1/TilingType 1/BBox[0 0 1 1]"
                  b"/XStep 0.001/YStep 0.001/Resources<<>>", b"0 0 1 1 re f")
    fill = stream(b"", b"/Pattern cs /P0 scn 0 0 %d %d re f" % PAGE)
    return one_page(fill, b"<</Pattern<</P0 5 0 R>>>>", [cell])


def operator_flood(operators: int = 2_000_000) -> bytes:
    """Millions of tiny filled rectangles in a compressed content stream."""
    data = deflated(repeated(b"0 0 1 1 re f\n", operators * 13))
    return one_page(stream(b"/Filter/FlateDecode", data))


def content_bomb(megabytes: int = 500) -> bytes:
    """A content stream that inflates to `megabytes` MB of blanks from about a thousandth of that."""
    return one_page(stream(b"/Filter/FlateDecode", deflated(repeated(b" " * 4096, megabytes << 20))))


def giant_image(side: int = 24000) -> bytes:
    """A page drawing a `side` x `side` gray image (576 MB decoded at 24000) stored in about 560 KB."""
    data = deflated(repeated(b"\x80" * side, side * side))
    image = stream(b"/Type/XObject/Subtype/Image/Width %d/Height %d/ColorSpace/DeviceGray/BitsPerComponent 8"
                   b"/Filter/FlateDecode" % (side, side), data)
    draw = stream(b"", b"q %d 0 0 %d 0 0 cm /Im0 Do Q" % PAGE)
    return one_page(draw, b"<</XObject<</Im0 5 0 R>>>>", [image])


def lying_jpeg(jpeg: bytes, side: int = 24000) -> bytes:
    """A full-page JPEG scan whose frame header (and the PDF) claim `side` x `side` pixels."""
    marker = re.search(rb"\xff[\xc0-\xc2]", jpeg)
    patched = bytearray(jpeg)
    if marker:
        at = marker.start() + 5  # FFCn, length (2), precision (1), then height and width
        patched[at:at + 4] = side.to_bytes(2, "big") * 2
    image = stream(b"/Type/XObject/Subtype/Image/Width %d/Height %d/ColorSpace/DeviceRGB/BitsPerComponent 8"
                   b"/Filter/DCTDecode" % (side, side), bytes(patched))
    draw = stream(b"", b"q %d 0 0 %d 0 0 cm /Im0 Do Q" % PAGE)
    return one_page(draw, b"<</XObject<</Im0 5 0 R>>>>", [image])


def page_tree_loop() -> bytes:
    """A page-tree node that lists itself among its kids."""
    return raw_pdf([
        b"<</Type/Catalog/Pages 2 0 R>>",
        b"<</Type/Pages/Kids[2 0 R 3 0 R]/Count 2>>",
        b"<</Type/Page/Parent 2 0 R/MediaBox[0 0 %d %d]/Contents 4 0 R>>" % PAGE,
        stream(b"", b"0 0 m 100 100 l S"),
    ])


def deep_nesting(depth: int = 20000) -> bytes:
    """A page whose resources hold an array nested `depth` levels deep, and a page tree 500 levels deep."""
    levels = 500
    objects = [b"<</Type/Catalog/Pages 2 0 R>>"]
    for level in range(levels):  # objects 2 .. levels + 1, each the only kid of the one before
        number = level + 2
        parent = b"/Parent %d 0 R" % (number - 1) if level else b""
        objects.append(b"<</Type/Pages/Kids[%d 0 R]/Count 1%s>>" % (number + 1, parent))
    page = levels + 2
    objects.append(b"<</Type/Page/Parent %d 0 R/MediaBox[0 0 %d %d]/Resources<</Deep %s%s>>/Contents %d 0 R>>"
                   % (page - 1, *PAGE, b"[" * depth, b"]" * depth, page + 1))
    objects.append(stream(b"", b"0 0 m 100 100 l S"))
    return raw_pdf(objects)


def lying_page_count(count: int = 10_000_000) -> bytes:
    """One page, but the page tree says `count`."""
    return raw_pdf([
        b"<</Type/Catalog/Pages 2 0 R>>",
        b"<</Type/Pages/Kids[3 0 R]/Count %d>>" % count,
        b"<</Type/Page/Parent 2 0 R/MediaBox[0 0 %d %d]/Contents 4 0 R>>" % PAGE,
        stream(b"", b"0 0 m 100 100 l S"),
    ])


def many_pages(count: int = 100_000) -> bytes:
    """`count` real, empty, tiny pages: 10 MB at 100,000, written in a fraction of a second."""
    return raw_pdf([
        b"<</Type/Catalog/Pages 2 0 R>>",
        b"<</Type/Pages/Kids[%s]/Count %d>>" % (b" ".join(b"%d 0 R" % (3 + n) for n in range(count)), count),
        *[b"<</Type/Page/Parent 2 0 R/MediaBox[0 0 10 10]>>"] * count,
    ])


def recursive_form() -> bytes:
    """A form XObject that draws itself."""
    form = stream(b"/Type/XObject/Subtype/Form/BBox[0 0 %d %d]/Resources<</XObject<</F 5 0 R>>>>" % PAGE,
                  b"0.5 0 0 0.5 10 10 cm /F Do 0 0 m 50 50 l S")
    return one_page(stream(b"", b"/F Do"), b"<</XObject<</F 5 0 R>>>>", [form])


CRAFTED: dict[str, Callable[[], bytes]] = {
    "tiling-hang": tiling_hang,
    "operator-flood": operator_flood,
    "content-bomb": content_bomb,
    "giant-image": giant_image,
    "page-tree-loop": page_tree_loop,
    "deep-nesting": deep_nesting,
    "lying-page-count": lying_page_count,
    "recursive-form": recursive_form,
}


# -- mutations --------------------------------------------------------------------------------


def flip_stream_bytes(data: bytes, rng: np.random.Generator) -> bytes:
    """Flip a few random bits inside the streams (compressed content, JPEG scan data)."""
    spans = [(m.end(), m.end() + 1 + data[m.end():].find(b"endstream")) for m in re.finditer(rb"stream\r?\n", data)]
    spans = [(start, end) for start, end in spans if end > start + 1]
    return _flip(data, rng, spans or [(0, len(data))], flips=int(rng.integers(1, 20)))


def flip_jpeg_header(data: bytes, rng: np.random.Generator) -> bytes:
    """Damage the first 600 bytes of an embedded JPEG: markers, tables, frame header."""
    spans = [(m.start(), m.start() + 600) for m in re.finditer(rb"\xff\xd8\xff", data)]
    return _flip(data, rng, spans or [(0, len(data))], flips=int(rng.integers(1, 8)))


def truncate(data: bytes, rng: np.random.Generator) -> bytes:
    return data[: int(rng.integers(1, len(data)))]


def garbage_over_xref(data: bytes, rng: np.random.Generator) -> bytes:
    """Random bytes over the end of the file, where the xref table and trailer are."""
    tail = data.rfind(b"xref")
    start = tail if tail > 0 else max(0, len(data) - 200)
    start = max(0, start - int(rng.integers(0, 64)))
    length = len(data) - start
    return data[:start] + rng.bytes(length)


def corrupt_object_headers(data: bytes, rng: np.random.Generator) -> bytes:
    """Break some `N 0 obj` headers: wrong numbers, a misspelt keyword, a missing generation."""
    out = bytearray(data)
    headers = list(re.finditer(rb"\d+ \d+ obj", data))
    for match in rng.permutation(len(headers))[: int(rng.integers(1, 4))]:
        header = headers[int(match)]
        choice = int(rng.integers(0, 3))
        start, end = header.span()
        if choice == 0:
            out[start] = ord(b"9")
        elif choice == 1:
            out[end - 3:end] = b"ojb"
        else:
            out[end - 5] = ord(b"x")
    return bytes(out)


def _flip(data: bytes, rng: np.random.Generator, spans: list[tuple[int, int]], flips: int) -> bytes:
    out = bytearray(data)
    for _ in range(flips):
        start, end = spans[int(rng.integers(0, len(spans)))]
        at = int(rng.integers(start, max(start + 1, min(end, len(data)))))
        out[at] ^= 1 << int(rng.integers(0, 8))
    return bytes(out)


MUTATIONS: dict[str, Callable[[bytes, np.random.Generator], bytes]] = {
    "stream-flip": flip_stream_bytes,
    "jpeg-header": flip_jpeg_header,
    "truncated": truncate,
    "xref-garbage": garbage_over_xref,
    "object-headers": corrupt_object_headers,
}


# -- a campaign -------------------------------------------------------------------------------


def scan_pdf(path: pathlib.Path, pages: int = 3, seed: int = 0, dpi: int = 60) -> pathlib.Path:
    """A good scan PDF of small pages (3 x 4 inches)."""
    return write_pdf(path, periodical_specs(pages, seed=seed, dpi=dpi, inches=(3.0, 4.0)))


def campaign(folder: str | pathlib.Path, files: int, seed: int = 0, *, crafted: bool = True,
             bomb_megabytes: int = 500) -> dict[str, str]:
    """Write `files` hostile PDFs into `folder` (plus good.pdf, untouched) and return {file name: kind}.

    The crafted files come first (once each, when `crafted`), then mutations of a few generated scan
    PDFs in turn, each file with its own seed, so the same arguments write the same bytes.
    """
    folder = pathlib.Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    scan_pdf(folder / "good.pdf", pages=4, seed=seed)
    sources = [scan_pdf(folder / f".source-{n}.pdf", pages=2, seed=seed * 7 + n).read_bytes() for n in range(3)]
    for n in range(3):
        (folder / f".source-{n}.pdf").unlink()
    kinds: dict[str, str] = {}
    makers = dict(CRAFTED) if crafted else {}
    if "content-bomb" in makers:
        makers["content-bomb"] = lambda: content_bomb(bomb_megabytes)
    if crafted:
        makers["lying-jpeg"] = lambda: lying_jpeg(_first_jpeg(sources[0]))
    for name, make in list(makers.items())[:files]:
        (folder / f"{name}.pdf").write_bytes(make())
        kinds[f"{name}.pdf"] = name
    mutations = list(MUTATIONS.items())
    written = {(folder / "good.pdf").read_bytes()}
    index = 0
    while len(kinds) < files:  # each file different: the same bytes twice would be one document
        rng = np.random.default_rng((seed, index))
        kind, mutate = mutations[index % len(mutations)]
        data = mutate(sources[index % len(sources)], rng)
        if data not in written:
            written.add(data)
            name = f"mutant-{index:04d}-{kind}.pdf"
            (folder / name).write_bytes(data)
            kinds[name] = kind
        index += 1
    return kinds


def _first_jpeg(pdf: bytes) -> bytes:
    start = pdf.find(b"\xff\xd8\xff")
    end = pdf.find(b"\xff\xd9", start)
    return pdf[start:end + 2]
