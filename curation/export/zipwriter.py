"""A ZIP written member by member to a temporary file, renamed into place only when complete.

Deterministic: fixed timestamps, permissions and compression, members in the order given, so the
same inputs give the same bytes. Streamed: each member goes to disk as it is added; nothing but
the central directory stays in memory. ZIP64 records are written once the file passes 4 GiB or
65,535 members. A run that dies leaves at most a hidden `.NAME.PID.part` beside the target, which
the next export to the same target removes; never a half ZIP under the final name.
"""

from __future__ import annotations

import os
import pathlib
import re
import unicodedata
import zipfile

from ..manifest.store import pid_alive

FIXED_TIME = (1980, 1, 1, 0, 0, 0)  # the earliest time a ZIP can hold
UNIX = 3  # "made by" system: Unix, so the permissions below are honoured on unpacking
FILE_MODE = 0o100644
DIR_MODE = 0o040755
TEXT_LEVEL = 9
PART_SUFFIX = ".part"


class UnsafeName(ValueError):
    """A member name that could land outside the folder the ZIP is unpacked into."""


class ZipTarget:
    """`with ZipTarget(path) as zipped: zipped.add(name, data)`; renamed to `path` on a clean exit."""

    def __init__(self, path: str | os.PathLike):
        self.path = pathlib.Path(path)
        self.part = self.path.with_name(f".{self.path.name}.{os.getpid()}{PART_SUFFIX}")
        self._zip: zipfile.ZipFile | None = None
        self._handle = None
        self._folders: set[str] = set()

    def __enter__(self) -> ZipTarget:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_parts(self.path)
        self._handle = open(self.part, "wb")
        self._zip = zipfile.ZipFile(self._handle, "w", allowZip64=True)
        return self

    def add(self, name: str, data: bytes, *, compress: bool = False) -> None:
        """Write one member now. JPEGs are stored (they do not compress); text is deflated."""
        check_name(name)
        self._add_folders(name)
        info = _info(name, FILE_MODE)
        info.compress_type = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
        self._zip.writestr(info, data, compresslevel=TEXT_LEVEL if compress else None)

    def _add_folders(self, name: str) -> None:
        # Explicit folder entries, so every unzip tool makes them with sane permissions.
        parts = name.split("/")[:-1]
        for depth in range(1, len(parts) + 1):
            folder = "/".join(parts[:depth]) + "/"
            if folder not in self._folders:
                self._folders.add(folder)
                info = _info(folder, DIR_MODE)
                info.external_attr |= 0x10  # MS-DOS directory flag
                self._zip.writestr(info, b"")

    @property
    def bytes_written(self) -> int:
        return self._handle.tell() if self._handle else 0

    def __exit__(self, exc_type, exc, tb) -> None:
        complete = False
        try:
            self._zip.close()
            if exc_type is None:
                self._handle.flush()
                os.fsync(self._handle.fileno())  # the data is on disk before the name says it is complete
                complete = True
        finally:
            try:
                self._handle.close()  # on a full disk this flush fails too
            finally:
                if complete:
                    os.replace(self.part, self.path)
                    _fsync_folder(self.path.parent)
                else:
                    self.part.unlink(missing_ok=True)


def _info(name: str, mode: int) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=FIXED_TIME)
    info.create_system = UNIX
    info.external_attr = mode << 16
    return info


def check_name(name: str) -> None:
    """Refuse names that are absolute, climb with `..`, use backslashes or hold control characters."""
    parts = name.split("/")
    if (not name or name.startswith("/") or "\\" in name or re.search(r"[\x00-\x1f]", name)
            or any(part in ("", ".", "..") for part in parts) or re.match(r"^[A-Za-z]:", name)):
        raise UnsafeName(f"unsafe name for a ZIP member: {name!r}")


def safe_zip_name(text: str, default: str = "lora.zip") -> str:
    """A file name typed in the app made safe: no folders, plain ASCII, not hidden, ends in .zip."""
    name = re.split(r"[\\/]", text.strip())[-1]
    name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    stem = name[:-4] if name.lower().endswith(".zip") else name
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", stem).strip("._-")[:100]
    return f"{stem}.zip" if stem else default


def remove_stale_parts(path: pathlib.Path) -> None:
    """Delete the leftovers of exports to `path` whose process is gone (killed, power cut)."""
    pattern = re.compile(rf"^\.{re.escape(path.name)}\.(\d+){re.escape(PART_SUFFIX)}$")
    if not path.parent.is_dir():
        return
    for entry in path.parent.iterdir():
        match = pattern.match(entry.name)
        if match and (int(match.group(1)) == os.getpid() or not pid_alive(int(match.group(1)))):
            entry.unlink(missing_ok=True)


def _fsync_folder(folder: pathlib.Path) -> None:
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:  # not possible on every system; the rename itself is still atomic
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)
