"""Find archive PDFs, know them by content, and open them with a reason a person understands."""

from __future__ import annotations

import hashlib
import os
import pathlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import pymupdf

HASH_BLOCK = 1 << 20
# What a file that is not a PDF usually is, by its first bytes.
SIGNATURES = [
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"GIF8", "a GIF image"),
    (b"II*\x00", "a TIFF image"),
    (b"MM\x00*", "a TIFF image"),
    (b"PK\x03\x04", "a ZIP archive (or an Office document)"),
    (b"%!PS", "a PostScript file"),
    (b"<", "an HTML or XML file"),
]
REPAIRED_NOTE = "repaired: the file is damaged (truncated?); these are the pages MuPDF could recover"


class DocumentError(Exception):
    """A document that cannot be scored at all; `status` is the word shown in listings."""

    def __init__(self, status: str, message: str):
        self.status = status
        super().__init__(message)

    def __reduce__(self):  # it travels back from worker processes
        return type(self), (self.status, str(self))


@dataclass(frozen=True)
class DocumentInfo:
    pages: int
    note: str | None = None


def find_pdfs(paths: Iterable[str | os.PathLike]) -> list[pathlib.Path]:
    """Every PDF named or found (recursively) under the given paths, each once, in a stable order.

    Raises FileNotFoundError naming every path that does not exist, before anything is read.
    """
    paths = [pathlib.Path(p) for p in paths]
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        raise FileNotFoundError(f"no such file or directory: {', '.join(missing)}")
    found: dict[pathlib.Path, None] = {}
    for path in paths:
        if path.is_dir():
            for child in sorted(path.rglob("*")):
                if child.suffix.lower() == ".pdf" and child.is_file():
                    found[child.resolve()] = None
        else:
            found[path.resolve()] = None
    return list(found)


def file_sha256(path: pathlib.Path, on_bytes: Callable[[int], None] | None = None) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(HASH_BLOCK):
            digest.update(block)
            if on_bytes:
                on_bytes(len(block))
    return digest.hexdigest()


def open_document(path: str | os.PathLike) -> pymupdf.Document:
    """Open a PDF for scoring, or raise DocumentError saying why it cannot be."""
    path = pathlib.Path(path)
    try:
        with open(path, "rb") as handle:
            head = handle.read(1024)
    except OSError as exc:
        raise DocumentError("failed", f"cannot read the file: {exc.strerror or exc}") from exc
    if not head:
        raise DocumentError("empty", "the file is empty (0 bytes)")
    if b"%PDF" not in head:
        kind = next((name for magic, name in SIGNATURES if head.lstrip().startswith(magic)), None)
        reason = f"this is {kind}, not a PDF (renamed?)" if kind else "not a PDF: the file has no %PDF header"
        raise DocumentError("not-pdf", reason)
    try:
        doc = pymupdf.open(path, filetype="pdf")
    except Exception as exc:
        raise DocumentError("failed", f"MuPDF cannot open it: {error_text(exc)}") from exc
    if doc.needs_pass:
        doc.close()
        raise DocumentError("encrypted", "the PDF is password-protected; it cannot be read without the password")
    try:
        pages = doc.page_count
    except Exception as exc:  # a page tree that lies about its count, or loops
        doc.close()
        raise DocumentError("failed", f"MuPDF cannot read its page tree: {error_text(exc)}") from exc
    if pages == 0:
        doc.close()
        raise DocumentError("empty", "the PDF has no pages")
    return doc


def inspect_document(path: str | os.PathLike) -> DocumentInfo:
    doc = open_document(path)
    try:
        note = REPAIRED_NOTE if doc.is_repaired else None
        return DocumentInfo(pages=doc.page_count, note=note)
    finally:
        doc.close()


def error_text(exc: Exception) -> str:
    """The first line of an exception's message, short enough for a table cell."""
    text = str(exc).strip() or type(exc).__name__
    return readable(text.splitlines()[0][:300])


def readable(text: str) -> str:
    """`text` safe to store and print: MuPDF quotes the raw bytes of damaged names, not always UTF-8."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
