"""The manifest: one SQLite file holding documents, page scores, thumbnails, overrides, settings and jobs
(thumbnails may instead be kept in a folder beside it, or not at all: curation.manifest.thumbnail_store).

WAL mode lets the dashboard read while an ingest writes. Decisions are never stored: a page's
decision is the curator's override where one exists, else the rule at the current threshold, so
re-scoring can never overwrite what a person decided.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import sqlite3

from . import history, undoing
from .caption_rows import CaptionRows
from .document_rows import DocumentRows
from .history import now
from .job_rows import HEARTBEAT_STALE_SECONDS, HUNG_SECONDS, JobRows, JobRunning, pid_alive  # noqa: F401 (imported from here)
from .page_decisions import PageDecisionRows
from .page_rows import PageRows
from .pictures import PictureRows
from .rules import DEFAULT_THRESHOLD  # noqa: F401 (imported from here)
from .schema import MIGRATIONS, statements
from .settings import Settings


class ManifestError(Exception):
    """The manifest cannot be opened or is not one of ours."""


class Manifest(Settings, DocumentRows, PageRows, PageDecisionRows, CaptionRows, PictureRows, JobRows):
    """`user` is who the changes made through this object are recorded for (curation.manifest.history):
    by default $CURATION_USER, else the login name; `account` (issuer, subject) who their sign-in provider
    says they are, by default from the job's environment (history.default_account)."""

    def __init__(self, path: str | os.PathLike, *, create: bool = True, user: str | None = None,
                 account: tuple[str, str] | None = None):
        self.path = pathlib.Path(path)
        self.user = user or history.default_user()
        self.account = account or (None if user else history.default_account())
        self._action: int | None = None
        if not create and not self.path.exists():
            raise ManifestError(f"no manifest at {self.path}")
        if create:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.conn = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
            self.conn.row_factory = sqlite3.Row
            self.conn.execute("PRAGMA busy_timeout = 30000")
            self.conn.execute("PRAGMA journal_mode = WAL")
            self.conn.execute("PRAGMA synchronous = NORMAL")
            self.conn.execute("PRAGMA foreign_keys = ON")
            self.migrate()
        except sqlite3.DatabaseError as exc:
            raise ManifestError(f"{self.path} is not a readable manifest: {exc}") from exc

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Manifest:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- schema -------------------------------------------------------------------------------

    @property
    def schema_version(self) -> int:
        return self.conn.execute("PRAGMA user_version").fetchone()[0]

    def migrate(self) -> None:
        version = self.schema_version
        if version > len(MIGRATIONS):
            raise ManifestError(
                f"{self.path} was written by a newer version (schema {version}); upgrade this program"
            )
        for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
            with self.transaction():
                if self.schema_version >= number:  # another process migrated meanwhile
                    continue
                for statement in statements(script):
                    self.conn.execute(statement)
                self.conn.execute(f"PRAGMA user_version = {number}")

    def transaction(self):
        return _Transaction(self.conn)

    @contextlib.contextmanager
    def recording(self, kind: str, note: str | None = None):
        """One action by self.user, in one transaction: what changes inside is recorded under its id (yielded),
        and undone together. A recording inside another joins it."""
        if self._action is not None:
            yield self._action
            return
        with self.transaction():
            self._action = history.begin(self.conn, self.user, kind, now(), note, self.account)
            try:
                yield self._action
                history.finish(self.conn, self._action)
            finally:
                self._action = None

    def undo(self, action: int | None = None) -> tuple[dict, int]:
        """Undo `action`, or this user's latest override, caption or setting change not undone yet, in one
        step; returns the undo action and how many of its changes were left because they changed since.
        Raises history.UndoError."""
        with self.transaction():
            if action is None:
                last = history.last_undoable(self.conn, self.user)
                if last is None:
                    raise history.UndoError(f"{self.user} has nothing left to undo")
                action = last["id"]
            with self.recording("undo") as undo:
                left = undoing.undo(self.conn, undo, int(action), now())
            return history.action(self.conn, undo), left


class _Transaction:
    """BEGIN IMMEDIATE ... COMMIT, nestable: inner blocks join the outer transaction."""

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn
        self.outer = False

    def __enter__(self):
        if not self.conn.in_transaction:
            self.conn.execute("BEGIN IMMEDIATE")
            self.outer = True
        return self.conn

    def __exit__(self, exc_type, exc, tb):
        if self.outer:
            self.conn.execute("ROLLBACK" if exc_type else "COMMIT")
