"""Read files only inside the allowed folders, checked at the moment a file is opened.

A check made before a file is opened can be raced: a link planted between the check and the open
leads anywhere. So a reader opens the file first and then asks where the opened file really is: on
Linux the kernel names it (`/proc/self/fd/N`); elsewhere its device and inode must match those of
its path with every link resolved. The opened descriptor is what is read, so what was checked is
what is read.

The curation jobs and the Vet scanner (`inference`) both read server files with it.
"""

from __future__ import annotations

import os
import pathlib
from collections.abc import Iterable

REFUSAL = "outside the allowed folders"
FD_LINKS = pathlib.Path("/proc/self/fd")


class OutsideAllowedFolders(PermissionError):
    """A file whose real path, links followed, lies under none of the allowed folders."""


def inside(path: str | os.PathLike, roots: Iterable[str | os.PathLike]) -> bool:
    """Whether `path` is a root or under one, comparing with each root as given and as its real path."""
    path = pathlib.Path(path)
    return any(path.is_relative_to(form) for root in map(pathlib.Path, roots) for form in (root, root.resolve()))


def open_inside(path: str | os.PathLike, roots: Iterable[str | os.PathLike] | None) -> int:
    """A descriptor open for reading on `path`, whose real path lies under one of `roots`.

    Raises OutsideAllowedFolders when it does not (the message names `path` as given, never where a
    link led), OSError when the file cannot be opened. `roots` None: no check (a path a person named
    on the command line).
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        if roots is not None and not inside(real_path(fd, path), list(roots)):
            raise OutsideAllowedFolders(f"{path}: {REFUSAL}")
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_binary_inside(path: str | os.PathLike, roots: Iterable[str | os.PathLike] | None):
    """`open_inside` as a binary file object (IsADirectoryError for a folder)."""
    fd = open_inside(path, roots)
    try:
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def real_path(fd: int, path: str | os.PathLike) -> pathlib.Path:
    """Where the file open on `fd` really is."""
    try:
        return pathlib.Path(os.readlink(FD_LINKS / str(fd)))
    except OSError:  # no /proc: the resolved path must still be the very file that is open
        real = os.path.realpath(path)
        opened, found = os.fstat(fd), os.stat(real)
        if (opened.st_dev, opened.st_ino) != (found.st_dev, found.st_ino):
            raise OutsideAllowedFolders(f"{path}: changed while it was being opened") from None
        return pathlib.Path(real)


def reopenable(fd: int) -> str | None:
    """A path that opens the very file open on `fd` (for a library that only takes paths), or None
    where the system has none."""
    link = FD_LINKS / str(fd)
    return str(link) if link.exists() else None


def folder_entries(folder: str | os.PathLike, roots: Iterable[str | os.PathLike] | None,
                   seen: set | None = None) -> list[tuple[str, bool]]:
    """(name, is a folder) of each entry of `folder`, sorted, listed from the folder really opened
    (so it lies under `roots`: OutsideAllowedFolders otherwise). `seen`, the real paths listed so
    far, stops a walk that follows links from going round a loop: a folder already seen lists empty."""
    fd = open_inside(folder, roots)
    try:
        real = str(real_path(fd, folder))
        if seen is not None:
            if real in seen:
                return []
            seen.add(real)
        with os.scandir(fd) as entries:
            return sorted((entry.name, entry.is_dir()) for entry in entries)
    finally:
        os.close(fd)
