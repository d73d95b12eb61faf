"""Which server folders the dashboard may read, and where uploads go.

A person in a browser types a path and the server reads it, so only paths under allowed roots are
accepted: the manifest's own folder (`data/` by default), the folders in $CURATION_ROOTS (separated
by the OS path separator) and those in the manifest setting `allowed_roots` (a JSON list; add one
with `python -m curation folders add FOLDER`, see curation/cli/folders.py). Paths are checked twice: as written (so a path
outside the roots is refused without saying whether it exists) and with every link followed (so a
symlink out of a root is refused too). `..` is refused outright.

A check when a path is typed can be raced (a link planted after it), so every job reads with the
same roots again, checked on each file as it is opened (`allowed_folders.open_inside`).
"""

from __future__ import annotations

import errno
import json
import os
import pathlib
import re
import shutil
import tempfile
import unicodedata
from collections.abc import Iterable
from typing import BinaryIO

from guards.folders import REFUSAL, inside  # noqa: F401 - one check for every reader, curation's and the Vet scanner's
from guards.uploads import PDF_UPLOADS

from .reader import file_sha256, find_pdfs, is_url

ROOTS_ENV = "CURATION_ROOTS"
ROOTS_SETTING = "allowed_roots"
UPLOADS = "uploads"
MAX_NAME = 120
LINKS_SHOWN = 3
# What one session may upload to the Ingest page ($CURATION_UPLOAD_MAX_FILE_MB, _SESSION_MB, _FILES);
# Streamlit's server.maxUploadSize (.streamlit/config.toml) caps any one file before the page sees it.
UPLOAD_LIMITS = PDF_UPLOADS


class PathRefused(ValueError):
    """A path the dashboard will not read; the message says why, for the person who typed it."""


class OutsideRoots(PathRefused):
    """A path under none of the allowed folders (`path`: absolute, as typed, links not followed)."""

    def __init__(self, message: str, path: pathlib.Path):
        super().__init__(message)
        self.path = path


def data_dir(db: str | os.PathLike) -> pathlib.Path:
    """The manifest's folder: uploads and the sample archive go here, and it is always an allowed root."""
    return pathlib.Path(os.path.abspath(db)).parent


def allowed_roots(db: str | os.PathLike, manifest=None) -> list[pathlib.Path]:
    """Every folder archives may be read from, absolute, each once, in the order they were given."""
    roots = [data_dir(db)]
    roots += [pathlib.Path(p) for p in os.environ.get(ROOTS_ENV, "").split(os.pathsep) if p.strip()]
    if manifest is not None:
        roots += [pathlib.Path(p) for p in configured_roots(manifest)]
    absolute = [pathlib.Path(os.path.abspath(root.expanduser())) for root in roots]
    return list(dict.fromkeys(absolute))


def reading_roots(db: str | os.PathLike, manifest,
                  named: Iterable[str | os.PathLike] = ()) -> list[pathlib.Path]:
    """The folders a job may read: the allowed roots, plus each local path in `named` that lies
    outside them, with its links resolved.

    `named` are paths a person gave on the command line (or documents such a run ingested): whoever
    runs the command may read them anyway. The app only ever names paths inside the allowed roots, so
    a path there gets no such pass: what it holds must really lie under the roots, links followed.
    """
    roots = allowed_roots(db, manifest)
    extra = [pathlib.Path(p).resolve() for p in named
             if not is_url(p) and not inside(pathlib.Path(os.path.abspath(p)), roots)]
    return list(dict.fromkeys(roots + extra))


def document_roots(db: str | os.PathLike, manifest) -> list[pathlib.Path]:
    """The folders a job over the manifest's documents (rescore, export) may read: the allowed roots,
    plus the folders of documents a command-line ingest read from outside them."""
    folders = {os.path.dirname(row[0]) for row in manifest.conn.execute("SELECT DISTINCT path FROM documents")}
    return reading_roots(db, manifest, folders)


def configured_roots(manifest) -> list[str]:
    try:
        value = json.loads(manifest.get_setting(ROOTS_SETTING, "[]"))
    except json.JSONDecodeError:
        return []
    return [str(p) for p in value] if isinstance(value, list) else []


ROOT_SOURCES = ("the manifest's folder", f"${ROOTS_ENV}", "added")


def roots_with_sources(db: str | os.PathLike, manifest) -> list[tuple[pathlib.Path, str]]:
    """Each allowed folder with where it comes from: the manifest's folder, $CURATION_ROOTS, or added."""
    env = [pathlib.Path(os.path.abspath(pathlib.Path(p).expanduser()))
           for p in os.environ.get(ROOTS_ENV, "").split(os.pathsep) if p.strip()]
    found = []
    for root in allowed_roots(db, manifest):
        where = (ROOT_SOURCES[0] if root == data_dir(db) else ROOT_SOURCES[1] if root in env else ROOT_SOURCES[2])
        found.append((root, where))
    return found


def add_root(manifest, folder: str | os.PathLike) -> pathlib.Path:
    """Allow reading `folder` (its real path, links resolved) from now on; PathRefused when it is not a
    folder, or is the whole file system."""
    if "\x00" in str(folder):
        raise PathRefused("That path contains a NUL character.")
    folder = pathlib.Path(folder).expanduser().resolve()
    if not folder.is_dir():
        raise PathRefused(f"{folder} is not a folder")
    if folder == pathlib.Path(folder.anchor):
        raise PathRefused(f"{folder} is the whole file system: allow the folder that holds the archives")
    roots = configured_roots(manifest)
    if str(folder) not in roots:
        manifest.set_setting(ROOTS_SETTING, json.dumps(roots + [str(folder)]))
    return folder


def remove_root(manifest, folder: str | os.PathLike) -> bool:
    """Stop allowing an added folder; False when it was not one of the added folders."""
    folder = str(pathlib.Path(folder).expanduser().resolve())
    roots = configured_roots(manifest)
    if folder not in roots:
        return False
    manifest.set_setting(ROOTS_SETTING, json.dumps([r for r in roots if r != folder]))
    return True


def check_path(text: str, roots: Iterable[pathlib.Path], base: pathlib.Path, *,
               folders_only: bool = False) -> pathlib.Path:
    """The real path of a folder or PDF a person typed, or PathRefused saying why not.

    Relative paths start at `base` (the data folder). With `folders_only`, a file is refused too
    (the Vet scanner reads folders of photos).
    """
    roots = list(roots)
    text = text.strip().strip("'\"").strip()
    if not text:
        raise PathRefused("Type the path of a folder or a PDF on the server.")
    if "\x00" in text:
        raise PathRefused("That path contains a NUL character.")
    path = pathlib.Path(text).expanduser()
    if ".." in path.parts:
        raise PathRefused("Paths with `..` are not accepted: give the folder itself.")
    path = pathlib.Path(os.path.abspath(base / path))
    if not inside(path, roots):
        raise OutsideRoots(f"{path} is outside the folders this server may read ({_names(roots)}).", path)
    if not os.path.lexists(path):
        raise PathRefused(f"Nothing at {path}.")
    real = _resolved(path, f"{path} is a link that leads round in a loop.")
    if not inside(real, roots):
        # Where the link points is not said: a viewer may type paths, and targets name private places.
        raise PathRefused(f"{path} is a link to a place outside the folders this server may read ({_names(roots)}).")
    if real.is_file():
        if folders_only:
            raise PathRefused(f"{path} is a file: give the folder that holds it.")
        if real.suffix.lower() != ".pdf":
            raise PathRefused(f"{path} is not a PDF (its name does not end in .pdf).")
    elif real.is_dir():
        loops = looping_links(real)
        if loops:
            shown = "; ".join(str(link) for link in loops[:LINKS_SHOWN])
            more = f" and {len(loops) - LINKS_SHOWN} more" if len(loops) > LINKS_SHOWN else ""
            raise PathRefused(f"{path} holds links that lead round in a loop: {shown}{more}.")
        links = escaping_links(real, roots)
        if links:
            shown = "; ".join(str(link) for link, _target in links[:LINKS_SHOWN])  # not where they point
            more = f" and {len(links) - LINKS_SHOWN} more" if len(links) > LINKS_SHOWN else ""
            raise PathRefused(f"{path} holds links to places outside the allowed folders: {shown}{more}.")
    else:
        raise PathRefused(f"{path} is neither a file nor a folder.")
    return real


class LinkLoop(OSError):
    """A path whose links lead round in a loop (ELOOP)."""


def _resolved(path: pathlib.Path, loop_refusal: str) -> pathlib.Path:
    """`path` with every link followed; PathRefused(`loop_refusal`) where the links go round in a loop
    (pathlib raises RuntimeError for that, whose message names the server's own paths)."""
    try:
        return _real(path)
    except LinkLoop:
        raise PathRefused(loop_refusal) from None


def _real(path: pathlib.Path) -> pathlib.Path:
    """`path` resolved as pathlib does (not strict); LinkLoop where its links go round in a loop."""
    try:
        return path.resolve()
    except RuntimeError as exc:  # Python 3.11-3.12: "Symlink loop from ..."
        raise LinkLoop(errno.ELOOP, "links lead round in a loop", str(path)) from exc
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # Python 3.13 on: an OSError
            raise LinkLoop(errno.ELOOP, "links lead round in a loop", str(path)) from exc
        raise


def looping_links(folder: pathlib.Path) -> list[pathlib.Path]:
    """Links under `folder`, walked as ingest walks it (links followed, each real folder once), whose
    targets lead round in a loop."""
    found, seen = [], set()
    for top, dirs, files in os.walk(folder, followlinks=True):
        real_top = os.path.realpath(top)
        if real_top in seen:
            dirs[:] = []
            continue
        seen.add(real_top)
        for name in dirs + files:
            entry = pathlib.Path(top, name)
            if entry.is_symlink():
                try:
                    _real(entry)
                except LinkLoop:
                    found.append(entry)
    return found


def escaping_links(folder: pathlib.Path, roots: Iterable[pathlib.Path]) -> list[tuple[pathlib.Path, pathlib.Path]]:
    """Links under `folder` whose target is outside every root. Links are followed as ingest follows
    them, so a link to another allowed folder is fine and its contents are checked too."""
    roots = list(roots)
    found, seen = [], set()
    for top, dirs, files in os.walk(folder, followlinks=True):
        real_top = os.path.realpath(top)
        if real_top in seen:  # a link loop, or two links to one folder: read it once
            dirs[:] = []
            continue
        seen.add(real_top)
        for names in (dirs, files):
            for name in list(names):
                entry = pathlib.Path(top, name)
                if entry.is_symlink() and not inside(entry.resolve(), roots):
                    found.append((entry, entry.resolve()))
                    names.remove(name)  # reported, not walked
    return found


def _names(roots: list[pathlib.Path]) -> str:
    return ", ".join(str(r) for r in roots)


# -- sources: the folders and files a curator asked to ingest, kept in the manifest -------------

SOURCES_SETTING = "ingest_sources"


def sources(manifest) -> list[str]:
    try:
        value = json.loads(manifest.get_setting(SOURCES_SETTING, "[]"))
    except json.JSONDecodeError:
        return []
    return [str(p) for p in value] if isinstance(value, list) else []


def add_source(manifest, path: pathlib.Path) -> None:
    """Remember a checked path; Start ingests every source (only what is new is read)."""
    known = sources(manifest)
    if str(path) not in known:
        manifest.set_setting(SOURCES_SETTING, json.dumps(known + [str(path)]))


def remove_source(manifest, path: str) -> None:
    """Forget a source; documents already ingested from it stay in the manifest."""
    manifest.set_setting(SOURCES_SETTING, json.dumps([p for p in sources(manifest) if p != path]))


def pdf_stats(path: str | os.PathLike) -> tuple[int, int]:
    """How many PDFs a source holds and their size in bytes; (0, 0) when it is gone."""
    try:
        pdfs = find_pdfs([path])
        return len(pdfs), sum(p.stat().st_size for p in pdfs)
    except OSError:
        return 0, 0


# -- uploads --------------------------------------------------------------------------------------


def safe_filename(name: str) -> str:
    """A file name that is safe on any file system: no folders, plain ASCII, not hidden, ends in .pdf."""
    name = re.split(r"[\\/]", name or "")[-1]
    name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    if name.lower().endswith(".pdf"):
        name = name[:-4]
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._-")[: MAX_NAME - 4] or "upload"
    return f"{stem}.pdf"


def uploads_dir(db: str | os.PathLike) -> pathlib.Path:
    return data_dir(db) / UPLOADS


def save_upload(folder: pathlib.Path, name: str, source: BinaryIO) -> pathlib.Path:
    """Store an uploaded file under a safe name; the same content uploaded twice is stored once.

    The file is written to a temporary name and renamed, so an ingest never sees half a file.
    """
    folder.mkdir(parents=True, exist_ok=True)
    handle = tempfile.NamedTemporaryFile(dir=folder, prefix=".upload-", suffix=".part", delete=False)
    try:
        with handle:
            shutil.copyfileobj(source, handle, 1 << 20)
        digest = file_sha256(pathlib.Path(handle.name))
        target = folder / safe_filename(name)
        stem, number = target.stem, 1
        while target.exists():
            if file_sha256(target) == digest:
                os.unlink(handle.name)
                return target
            target = folder / f"{stem}-{number}.pdf"
            number += 1
        os.replace(handle.name, target)
        return target
    except BaseException:
        if os.path.exists(handle.name):
            os.unlink(handle.name)
        raise
