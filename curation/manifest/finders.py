"""The picture finders a manifest learned from its curator's boxes (curation.runs.learn_boxes), and which finder
found each picture.

Every learned head is kept, with the version it was fine-tuned from and its figures on the corrected pages it
did not train on; the setting FINDER_SETTING names the one in use (none: the shipped head). Setting it is
recorded in the history, so undoing a "learn from my boxes" puts the previous finder back. A picture's
`finder` says who found it: "rules", "learned" (the verdict), "network" (the shipped head) or
"network:<version>"; NULL where a curator drew it or where it was found before the manifest kept this. A page's
`boxed` is 1 where a curator gave all its boxes (`boxes --from`): even a page with no picture then teaches the
finder, and is not found again.

Beside the heads, the judges a manifest learned from its curator's picture decisions (curation.runs.learn_judge):
each a logistic head over picture_judge.MEASURES, with its leave-one-page-out figures; JUDGE_SETTING names the
one in use, recorded in the history as the finder's is.
"""

from __future__ import annotations

import json
import sqlite3

from .history import now

FINDER_SETTING = "picture_finder_version"
JUDGE_SETTING = "picture_judge_version"  # the judge in use (curation.runs.learn_judge); none: the shipped one, if any
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


JUDGE_MIGRATION = """
    CREATE TABLE judges (
        version INTEGER PRIMARY KEY,
        created_at TEXT NOT NULL,
        head TEXT NOT NULL,         -- JSON: curation.pictures.picture_judge.Head.as_dict
        held_out TEXT NOT NULL      -- JSON: what it learned from, its leave-one-page-out figures and the finder's
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


def add_judge(conn: sqlite3.Connection, head: dict, held_out: dict) -> int:
    """Keep a judge learned from the curator's decisions (`head`: Head.as_dict); its version."""
    return conn.execute("INSERT INTO judges (created_at, head, held_out) VALUES (?, ?, ?)",
                        (now(), json.dumps(head), json.dumps(held_out))).lastrowid


def judge(conn: sqlite3.Connection) -> dict | None:
    """The judge in use (Head.as_dict), or None where the manifest learned none (or its learn was undone)."""
    row = conn.execute("SELECT value FROM settings WHERE key = ?", (JUDGE_SETTING,)).fetchone()
    if not row or row[0] in (None, "", "none", "None"):
        return None
    found = conn.execute("SELECT head FROM judges WHERE version = ?", (int(row[0]),)).fetchone()
    return json.loads(found[0]) if found else None
