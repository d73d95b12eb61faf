"""Uploads within the server's limits: size per file, size of all a session holds, number of files.

A browser's own limit (Streamlit's `max_upload_size` on an uploader) is advice to the browser: a
hand-made request ignores it, and sends to Streamlit's upload route whatever a drawn uploader would
never see. So the route itself is bounded too (RouteLimits, applied by the server's middleware before
Streamlit reads a byte), and each uploader sorts what it was given. Streamlit's `server.maxUploadSize` is enforced by the server but is one
cap for every uploader. So each uploader's files are sorted here, by the size the server received
(never by reading them), into those within its limits and those refused with a reason.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

MB = 1 << 20  # a megabyte as Streamlit counts it (server.maxUploadSize, an uploader's "Limit 200MB")


def env_number(name: str, default: float) -> float:
    """A limit from the environment (the server's configuration), else `default`."""
    text = os.environ.get(name, "").strip()
    try:
        return float(text) if text else default
    except ValueError:
        return default


@dataclass(frozen=True)
class UploadLimits:
    file_bytes: int
    session_bytes: int
    files: int
    noun: str = "file"  # how the help and the refusals name one upload

    @classmethod
    def from_env(cls, prefix: str, *, file_mb: float, session_mb: float, files: int, noun: str = "file"):
        """Limits from $PREFIX_MAX_FILE_MB, $PREFIX_MAX_SESSION_MB and $PREFIX_MAX_FILES, else the defaults."""
        return cls(int(env_number(f"{prefix}_MAX_FILE_MB", file_mb) * MB),
                   int(env_number(f"{prefix}_MAX_SESSION_MB", session_mb) * MB),
                   int(env_number(f"{prefix}_MAX_FILES", files)), noun)

    def help(self) -> str:
        """The limits in words, for an uploader's help."""
        return (f"Server limits: up to {self.files} {self.noun}s at a time, {megabytes(self.file_bytes)} each, "
                f"{megabytes(self.session_bytes)} in all.")

    def sort(self, uploads) -> tuple[list, list[tuple[object, str]]]:
        """(uploads within the limits, [(upload, why it is refused)]), in the order given.

        Files are taken in order until the count or the session's total would be passed; a file over
        the size per file is refused on its own. No file is read.
        """
        kept, refused, total = [], [], 0
        for upload in uploads:
            size = upload_size(upload)
            name = getattr(upload, "name", None) or self.noun
            if size > self.file_bytes:
                refused.append((upload, f"{name}: {megabytes(size)} is over the limit of "
                                        f"{megabytes(self.file_bytes)} per {self.noun}; it was not read."))
            elif len(kept) >= self.files:
                refused.append((upload, f"{name}: at most {self.files} {self.noun}s at a time; "
                                        "remove some to add more. It was not read."))
            elif total + size > self.session_bytes:
                refused.append((upload, f"{name}: the {self.noun}s together would pass the limit of "
                                        f"{megabytes(self.session_bytes)}; it was not read."))
            else:
                kept.append(upload)
                total += size
        return kept, refused


# What one session may upload to the Ingest page ($CURATION_UPLOAD_MAX_FILE_MB, _SESSION_MB, _FILES) and to the
# Vet scanner's photo uploader ($VET_UPLOAD_...); Streamlit's server.maxUploadSize caps any one file as well.
PDF_UPLOADS = UploadLimits.from_env("CURATION_UPLOAD", file_mb=200, session_mb=500, files=50, noun="PDF")
PHOTO_UPLOADS = UploadLimits.from_env("VET_UPLOAD", file_mb=50, session_mb=200, files=20, noun="photo")
MULTIPART_MARGIN = 64 * 1024  # a request's form framing around its one file

# The most pages one PDF may have to be ingested ($CURATION_MAX_PAGES), uploaded or in a server folder: a 10 MB
# PDF can hold 100,000 tiny pages, half an hour of the workers' time from one upload. Counted when the
# document is opened, before any page is read; a longer one is refused with the reason.
MAX_PAGES = 10_000


def max_pages() -> int:
    """The server's bound on pages per document: $CURATION_MAX_PAGES, else MAX_PAGES."""
    return max(1, int(env_number("CURATION_MAX_PAGES", MAX_PAGES)))


# What every session's uploads together may hold in the server's memory at once, those arriving included
# ($CURATION_UPLOAD_MAX_SERVER_MB): each session is bounded by its uploaders' limits, but a team's sessions
# (or one person's many tabs) together would not be.
SERVER_UPLOAD_MB = 2_000


@dataclass(frozen=True)
class RouteLimits:
    """What Streamlit's upload route takes, whatever uploader a request claims to be for: one request at most
    the largest file any uploader takes, one session at most what all its uploaders hold together, and all
    sessions together at most `server_bytes`."""

    request_bytes: int
    session_bytes: int
    server_bytes: int = int(SERVER_UPLOAD_MB * MB)

    @classmethod
    def of(cls, *uploaders: UploadLimits, server_mb: float | None = None) -> "RouteLimits":
        server_mb = env_number("CURATION_UPLOAD_MAX_SERVER_MB", SERVER_UPLOAD_MB) if server_mb is None else server_mb
        return cls(max(u.file_bytes for u in uploaders) + MULTIPART_MARGIN,
                   sum(u.session_bytes for u in uploaders) + MULTIPART_MARGIN, int(server_mb * MB))


ROUTE_LIMITS = RouteLimits.of(PDF_UPLOADS, PHOTO_UPLOADS)


def upload_size(upload) -> int:
    """The size of an uploaded file as received: its `size`, else its length by seeking (no reading)."""
    size = getattr(upload, "size", None)
    if isinstance(size, int):
        return size
    position = upload.tell()
    try:
        return upload.seek(0, os.SEEK_END)
    finally:
        upload.seek(position)


def megabytes(size: int) -> str:
    return f"{size / MB:,.0f} MB" if size >= 10 * MB else f"{size / MB:,.1f} MB"
