"""Find archive PDFs, know them by content, and open them with a reason a person understands."""

from __future__ import annotations

import datetime
import hashlib
import os
import pathlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import pymupdf

from guards.folders import (REFUSAL, OutsideAllowedFolders, inside, open_binary_inside, open_inside, real_path,
                            reopenable)

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


def is_url(path: str | os.PathLike) -> bool:
    """`s3://…`, `gs://…`, `https://…`, `file://…`: a location fsspec reads, not a local path."""
    return "://" in str(path)


def url_files(url: str):
    """The fsspec filesystem of a URL and the URL's path within it."""
    import fsspec  # only archives given as URLs need it

    return fsspec.core.url_to_fs(url)


def exists(path: str | os.PathLike) -> bool:
    """Whether the path or URL can be seen from this process (a cluster's worker asks it too)."""
    if is_url(path):
        fs, inner = url_files(str(path))
        return fs.exists(inner)
    return pathlib.Path(path).exists()


Roots = Iterable[str | os.PathLike] | None  # the folders a reader may read; None: a path a person named


def open_binary(path: str | os.PathLike, roots: Roots = None):
    """The file at a path or URL, open for reading bytes.

    With `roots`, a local file is read only if its real path, links followed at the moment it is
    opened, lies under one of them (else OutsideAllowedFolders). A URL is not in any folder: only a
    person on the command line can name one (the app accepts server paths only).
    """
    if is_url(path):
        fs, inner = url_files(str(path))
        return fs.open(inner, "rb")
    return open_binary_inside(path, roots)


@dataclass(frozen=True)
class FileStat:
    st_size: int
    st_mtime_ns: int


def file_stat(path: str | os.PathLike):
    """Size and modification time of a path or URL (time 0 where the store keeps none: a changed file
    of the same size then keeps its cached hash)."""
    if not is_url(path):
        return pathlib.Path(path).stat()
    fs, inner = url_files(str(path))
    info = fs.info(inner)
    stamp = next((info[key] for key in ("mtime", "LastModified", "updated", "created") if info.get(key)), 0)
    if isinstance(stamp, str):  # an ISO date (Google Cloud Storage)
        stamp = datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    if isinstance(stamp, datetime.datetime):  # S3
        stamp = stamp.timestamp()
    return FileStat(int(info["size"]), int(float(stamp) * 1e9))


def find_urls(url: str) -> list[str]:
    """The PDFs at a URL: itself, or every PDF under it when it names a folder (a prefix)."""
    fs, inner = url_files(url)
    if not fs.isdir(inner):
        return [url]
    return [fs.unstrip_protocol(name) for name in sorted(fs.find(inner)) if name.lower().endswith(".pdf")]


def find_pdfs(paths: Iterable[str | os.PathLike], roots: Roots = None,
              on_refused: Callable[[pathlib.Path], None] = lambda path: None,
              on_misnamed: Callable[[str], None] = lambda name: None) -> list:
    """Every PDF named or found (recursively) under the given paths, each once, in a stable order.
    Local files come as resolved `pathlib.Path`s, URLs as strings. With `roots`, a file whose real
    path lies outside them is left out and handed to `on_refused` as found (a link, not its target).
    A file whose path is not valid UTF-8 (MISNAMED) is left out and handed to `on_misnamed`, escaped.

    Raises FileNotFoundError naming every path that does not exist, before anything is read.
    """
    paths = [str(p) if is_url(p) else pathlib.Path(p) for p in paths]
    missing = [str(p) for p in paths if not exists(p)]
    if missing:
        raise FileNotFoundError(f"no such file or directory: {', '.join(missing)}")
    found: dict = {}
    for path in paths:
        if isinstance(path, str):
            found.update(dict.fromkeys(find_urls(path)))
        elif path.is_dir():
            for child in sorted(path.rglob("*")):
                if child.suffix.lower() == ".pdf" and child.is_file():
                    _keep_inside(found, child, roots, on_refused, on_misnamed)
        else:
            _keep_inside(found, path, roots, on_refused, on_misnamed)
    return list(found)


def _keep_inside(found: dict, path: pathlib.Path, roots: Roots, on_refused, on_misnamed) -> None:
    if not storable(path):
        on_misnamed(escaped_name(path))
        return
    real = path.resolve()
    if roots is None or inside(real, roots):
        found[real] = None
    else:
        on_refused(path)


MISNAMED = "its path is not valid UTF-8, which the manifest cannot store; rename it and ingest again"


def storable(path: str | os.PathLike) -> bool:
    """Whether a path can be stored and shown as text: a name that is not valid UTF-8 comes from the file
    system with its bad bytes as surrogates, which the manifest (SQLite's UTF-8) cannot hold."""
    try:
        str(path).encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def escaped_name(path: str | os.PathLike) -> str:
    """A path as text that can be stored and shown: each byte that is not UTF-8 written as \\xe9."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def file_sha256(path: pathlib.Path, on_bytes: Callable[[int], None] | None = None, roots: Roots = None) -> str:
    digest = hashlib.sha256()
    with open_binary(path, roots) as handle:
        while block := handle.read(HASH_BLOCK):
            digest.update(block)
            if on_bytes:
                on_bytes(len(block))
    return digest.hexdigest()


def open_document(path: str | os.PathLike, roots: Roots = None) -> pymupdf.Document:
    """Open a PDF for scoring, or raise DocumentError saying why it cannot be.

    With `roots`, only a file that really lies under them when it is opened (see `open_binary`);
    MuPDF then reads that very file, never the path again.
    """
    if is_url(path):
        return _open_pdf(path, None)
    try:
        fd = open_inside(path, roots)
    except OutsideAllowedFolders:
        raise DocumentError("outside", f"not read: the file is {REFUSAL} (a link, or replaced by one)") from None
    except OSError as exc:
        raise DocumentError("failed", f"cannot read the file: {exc.strerror or exc}") from exc
    try:
        return _open_pdf(path, fd)
    finally:
        os.close(fd)


def _open_pdf(path: str | os.PathLike, fd: int | None) -> pymupdf.Document:
    """The PDF at a URL (`fd` None) or open on `fd`, checked for what makes it unreadable."""
    try:
        if fd is None:
            with open_binary(path) as handle:
                head = handle.read(1024)
        else:
            head = os.pread(fd, 1024, 0)
    except OSError as exc:
        raise DocumentError("failed", f"cannot read the file: {exc.strerror or exc}") from exc
    if not head:
        raise DocumentError("empty", "the file is empty (0 bytes)")
    if b"%PDF" not in head:
        kind = next((name for magic, name in SIGNATURES if head.lstrip().startswith(magic)), None)
        reason = f"this is {kind}, not a PDF (renamed?)" if kind else "not a PDF: the file has no %PDF header"
        raise DocumentError("not-pdf", reason)
    try:
        if fd is None:  # read where it is stored; MuPDF opens the bytes
            with open_binary(path) as handle:
                doc = pymupdf.open(stream=handle.read(), filetype="pdf")
        elif (same_file := reopenable(fd)) is not None:
            doc = pymupdf.open(same_file, filetype="pdf")
            # `same_file` names the descriptor, closed once this returns and then reused by other files:
            # what the document was opened from is remembered as the file itself (read_opened).
            setattr(doc, _OPENED, (str(real_path(fd, path)), _identity(fd)))
        else:  # no way to name the open file: MuPDF reads its bytes
            doc = pymupdf.open(stream=_read_all(fd), filetype="pdf")
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


_OPENED = "curation_opened_file"  # on a Document: (its file's real path, _identity) when opened on a descriptor


def _identity(fd: int) -> tuple[int, int, int, int]:
    """Which file is open on `fd`, and as it was: device, inode, size, modification time."""
    found = os.fstat(fd)
    return found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns


def read_opened(doc: pymupdf.Document, start: int, length: int) -> bytes | None:
    """`length` bytes at `start` of the very file `open_document` opened `doc` from, or None where that
    file cannot be read again as it was (another file at its path now, changed, or a document opened
    from bytes or a URL): then only MuPDF's own read gives its bytes."""
    opened = getattr(doc, _OPENED, None)
    if opened is None:
        return None
    path, identity = opened
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        if _identity(fd) != identity:
            return None
        data = os.pread(fd, length, start)
    finally:
        os.close(fd)
    return data if len(data) == length else None


def _read_all(fd: int) -> bytes:
    with os.fdopen(os.dup(fd), "rb") as handle:
        handle.seek(0)
        return handle.read()


def inspect_document(path: str | os.PathLike, roots: Roots = None) -> DocumentInfo:
    doc = open_document(path, roots)
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
