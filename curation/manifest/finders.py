"""The picture finders a manifest learned from its curator's boxes (curation.runs.learn_boxes), and which finder
found each picture.

Every learned head is kept, with the version it was fine-tuned from and its figures on the corrected pages it
did not train on; the setting FINDER_SETTING names the one in use (none: the shipped head). Setting it is
recorded in the history, so undoing a "learn from my boxes" puts the previous finder back. A picture's
`finder` says who found it: "rules", "learned" (the verdict), "network" (the shipped head) or
"network:<version>"; NULL where a curator drew it or where it was found before the manifest kept this. A page's
`boxed` is 1 where a curator gave all its boxes (`boxes --from`): even a page with no picture then teaches the
finder, and is not found again.
"""

from __future__ import annotations

import json
import sqlite3

from .history import now

FINDER_SETTING = "picture_finder_version"
SHIPPED = "network"

# Adding a column without a default rewrites nothing: the migration costs the same on any manifest.
MIGRATION = """
    ALTER TABLE pictures ADD COLUMN finder TEXT;
    ALTER TABLE pages ADD COLUMN boxed INTEGER;
    CREATE TABLE finders (
        version INTEGER PRIMARY KEY,
        created_at TEXT NOT NULL,
        parent INTEGER,             -- the version it was fine-tuned from; NULL: the shipped head
        weights BLOB NOT NULL,      -- the head, as curation.pictures.finder_network.save_head writes it
        held_out TEXT NOT NULL      -- JSON: the held-out pages' figures before and after, the pages used
    );
"""


def label(picture_finder: str, version: int | None) -> str:
    """What a picture found by `picture_finder` (a PICTURE_FINDERS name) with the manifest's finder `version`
    records as its finder."""
    return f"{SHIPPED}:{version}" if picture_finder == SHIPPED and version is not None else picture_finder


def current_version(conn: sqlite3.Connection) -> int | None:
    """The learned finder in use, or None for the shipped head."""
    row = conn.execute("SELECT value FROM settings WHERE key = ?", (FINDER_SETTING,)).fetchone()
    return int(row[0]) if row and row[0] not in (None, "", "none") else None


def weights(conn: sqlite3.Connection, version: int | None) -> bytes | None:
    """The head of `version` (None for the shipped head)."""
    if version is None:
        return None
    row = conn.execute("SELECT weights FROM finders WHERE version = ?", (version,)).fetchone()
    return bytes(row[0]) if row else None


def add(conn: sqlite3.Connection, parent: int | None, head: bytes, held_out: dict) -> int:
    """Keep a learned head; its version."""
    return conn.execute("INSERT INTO finders (created_at, parent, weights, held_out) VALUES (?, ?, ?, ?)",
                        (now(), parent, head, json.dumps(held_out))).lastrowid


def record(conn: sqlite3.Connection, version: int) -> dict:
    """One finder's row: its version, parent, when and its figures (held_out, parsed)."""
    row = conn.execute("SELECT version, created_at, parent, held_out FROM finders WHERE version = ?",
                       (version,)).fetchone()
    return {**dict(row), "held_out": json.loads(row["held_out"])} if row else {}
