"""Where a manifest keeps its pages' thumbnails: a setting of the manifest, chosen by the curator.

A thumbnail (a 256-pixel JPEG, about 10 kB) is four fifths of what a page costs in the manifest, so on
millions of pages where they go decides the manifest's size. Three stores:

- sqlite: in the manifest's `thumbnails` table (the default): one file to copy or back up.
- folder: JPEG files beside the manifest, `<manifest stem>.thumbnails/<document sha256>/<page>.jpg`; the
  manifest keeps only scores, so its queries and backups stay small, and the folder can live elsewhere
  through a symbolic link.
- none: no thumbnail is kept; the dashboard draws a page's thumbnail from its PDF when it shows it.

Files are named by the document's content hash, not its row id: a folder left behind by a deleted
manifest can never show one document's pages in place of another's. The manifest's only writer (the
ingest coordinator) is the folder's only writer; a file is written under a temporary name and renamed,
so a reader sees a whole JPEG or none. A missing or unreadable file reads as no thumbnail.
"""

from __future__ import annotations

import os
import pathlib
import re
import shutil
from collections.abc import Iterable

STORES = {
    "sqlite": "in the manifest (one file; about 10 kB a page of its size)",
    "folder": "JPEG files in a folder beside the manifest (the manifest stays small)",
    "none": "not kept (the smallest manifest; pages are drawn from their PDF when shown)",
}
DEFAULT_STORE = "sqlite"
# What changing the setting on a manifest that holds pages does, for a person (CLI and Ingest page help).
CHANGE_NOTE = ("Changing it moves nothing: thumbnails already stored stay where they are and stay readable; "
               "pages scored from then on (new documents, rescore) follow the new setting, and a page scored "
               "again keeps its thumbnail only there (with none, a rescore drops it).")
FOLDER_SUFFIX = ".thumbnails"
SHA256_NAME = re.compile("[0-9a-f]{64}")


def folder_of(manifest_path: str | os.PathLike) -> pathlib.Path:
    """The folder beside a manifest where the folder store keeps its files."""
    path = pathlib.Path(manifest_path)
    return path.with_name(path.stem + FOLDER_SUFFIX)


def file_of(folder: pathlib.Path, sha256: str, page: int) -> pathlib.Path:
    return folder / sha256 / f"{int(page)}.jpg"


def write_file(path: pathlib.Path, jpeg: bytes) -> None:
    """Write whole or not at all: a run killed mid-write leaves the temporary name, which the page's
    next scoring (the resumed run) overwrites."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_bytes(jpeg)
    os.replace(temporary, path)


def read_file(path: pathlib.Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:  # deleted, moved, unreadable: the page shows without a thumbnail
        return None


def remove_file(path: pathlib.Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass


def remove_orphans(folder: pathlib.Path, known_sha256: Iterable[str]) -> int:
    """Delete the thumbnails of documents the manifest no longer holds (a manifest deleted and made
    again, rows removed by hand); returns how many documents' folders went."""
    if not folder.is_dir():
        return 0
    known = set(known_sha256)
    removed = 0
    for child in folder.iterdir():
        # Only folders named as this store names them: anything else someone put there is left alone.
        if child.is_dir() and SHA256_NAME.fullmatch(child.name) and child.name not in known:
            shutil.rmtree(child, ignore_errors=True)
            removed += 1
    return removed


def file_size(path: pathlib.Path) -> int | None:
    try:
        return path.stat().st_size
    except OSError:
        return None
