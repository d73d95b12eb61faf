"""The manifest: one SQLite file holding documents, page scores, thumbnails, overrides, settings and jobs
(thumbnails may instead be kept in a folder beside it, or not at all: curation.manifest.thumbnail_store).

WAL mode lets the dashboard read while an ingest writes. Decisions are never stored: a page's
decision is the curator's override where one exists, else the rule at the current threshold, so
re-scoring can never overwrite what a person decided.
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import re
import sqlite3
from collections.abc import Iterable, Iterator, Sequence

from ..scoring.result import PageResult
from ..sources.page_numbers import page_number
from . import aggregates, history, page_figures, picture_decisions, picture_thumbnails, pictures, thumbnail_store
from .history import now
from .job_rows import HEARTBEAT_STALE_SECONDS, HUNG_SECONDS, JobRows, JobRunning, _pid_alive  # noqa: F401 (imported from here)
from .rules import (DECIDED_BY_SQL, DEFAULT_PICTURE_AREA_MIN, DEFAULT_PICTURE_SCORE_MIN, DEFAULT_RULE, DEFAULT_THRESHOLD,  # noqa: F401
                    INK_TONE_MIN, KEEP_SQL, LIVE_DOCUMENT_SQL, RULES, SAVED_SCORE_MIN_SQL)
from .schema import MIGRATIONS, statements

DEFAULT_PAGE_TIMEOUT = 60.0  # seconds; a page past it is skipped (a pathological pattern can take hours)
PICTURE_FINDERS = ("rules", "learned")
DEFAULT_PICTURE_FINDER = "rules"  # the learned verdict costs about a second a page on a CPU (README, Pictures)
# Whether the picture job (curation.runs.embed) follows ingest and rescore where the manifest never said: this
# variable's on/off, else on. A server whose CPU should not embed pictures sets it off for every manifest.
PICTURE_JOB_VARIABLE = "CURATION_PICTURE_JOB"
DEFAULT_LEGEND_LANGUAGES = "eng+deu+fra"  # English, German, French: the periodicals most often ingested

LANGUAGE_CODE = re.compile(r"^[a-z][a-z_]{1,15}$")  # Tesseract's names: eng, deu, chi_sim, ...


def language_codes(text: str) -> str:
    """'eng+deu' as Tesseract takes it, from "eng, deu" or "ENG+deu"; ValueError naming what is wrong."""
    codes = [code.strip().lower() for code in str(text).replace(",", "+").split("+") if code.strip()]
    if not codes:
        raise ValueError("name at least one legend language, e.g. eng+deu")
    bad = [code for code in codes if not LANGUAGE_CODE.match(code)]
    if bad:
        raise ValueError(f"not a Tesseract language code: {', '.join(bad)} (e.g. eng, deu, fra, frk, rus)")
    return "+".join(dict.fromkeys(codes))


class ManifestError(Exception):
    """The manifest cannot be opened or is not one of ours."""


class Manifest(pictures.PictureRows, JobRows):
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
                left = history.undo(self.conn, undo, int(action), now())
            return history.action(self.conn, undo), left

    # -- settings -----------------------------------------------------------------------------

    def get_setting(self, key: str, default: str | None = None) -> str | None:
        row = self.conn.execute("SELECT value FROM settings WHERE key = ?", (key,)).fetchone()
        return default if row is None else row[0]

    def set_setting(self, key: str, value) -> None:
        """Save a setting; a person's choice is recorded in the history (history.NOT_RECORDED: bookkeeping)."""
        with self.recording("setting") if key not in history.NOT_RECORDED else contextlib.nullcontext():
            old = self.get_setting(key)
            self.conn.execute(
                "INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, str(value)),
            )
            if self._action is not None:
                history.record(self.conn, self._action, "setting", old, str(value), name=key)

    @property
    def threshold(self) -> float:
        return float(self.get_setting("threshold", str(DEFAULT_THRESHOLD)))

    @threshold.setter
    def threshold(self, value: float) -> None:
        self.set_setting("threshold", float(value))

    @property
    def rule(self) -> str:
        rule = self.get_setting("rule", DEFAULT_RULE)
        return rule if rule in RULES else DEFAULT_RULE

    @rule.setter
    def rule(self, value: str) -> None:
        if value not in RULES:
            raise ValueError(f"unknown rule {value!r}; one of {', '.join(RULES)}")
        self.set_setting("rule", value)

    @property
    def picture_area_min(self) -> float:
        return float(self.get_setting("picture_area_min", str(DEFAULT_PICTURE_AREA_MIN)))

    @picture_area_min.setter
    def picture_area_min(self, value: float) -> None:
        if not value >= 0:
            raise ValueError(f"picture_area_min must be 0 or more square inches, not {value!r}")
        self.set_setting("picture_area_min", float(value))

    @property
    def picture_score_min(self) -> float:
        """The learned verdict's score under which a picture it scored does not count (SAVED_SCORE_MIN_SQL)."""
        return float(self.get_setting("picture_score_min", str(DEFAULT_PICTURE_SCORE_MIN)))

    @picture_score_min.setter
    def picture_score_min(self, value: float) -> None:
        if not 0 <= value <= 1:
            raise ValueError(f"picture_score_min is a score from 0 to 1, not {value!r}")
        self.set_setting("picture_score_min", float(value))

    @property
    def page_timeout(self) -> float:
        """Seconds a page may take to be read before it is skipped (0: no limit)."""
        return float(self.get_setting("page_timeout", str(DEFAULT_PAGE_TIMEOUT)))

    @page_timeout.setter
    def page_timeout(self, value: float) -> None:
        if value < 0:
            raise ValueError("the page time limit cannot be negative")
        self.set_setting("page_timeout", float(value))

    @property
    def legend_languages(self) -> str:
        """Tesseract's languages the pictures' printed legends are read in, e.g. "eng+deu+fra"."""
        return self.get_setting("legend_languages", DEFAULT_LEGEND_LANGUAGES)

    @legend_languages.setter
    def legend_languages(self, value: str) -> None:
        """Checked for its form here; whether the languages are installed is the captions stage's to check
        (curation.captions.legend.check_languages), which ingest does again before reading."""
        self.set_setting("legend_languages", language_codes(value))

    @property
    def picture_finder(self) -> str:
        """Who finds a page's pictures at ingest: "rules" (the page analysis alone) or "learned" (its
        candidates checked by the picture stage's learned verdict, curation.pictures; slower)."""
        return self.get_setting("picture_finder", DEFAULT_PICTURE_FINDER)

    @picture_finder.setter
    def picture_finder(self, value: str) -> None:
        if value not in PICTURE_FINDERS:
            raise ValueError(f"the picture finder is one of {', '.join(PICTURE_FINDERS)}, not {value!r}")
        self.set_setting("picture_finder", value)

    @property
    def picture_job(self) -> bool:
        """Whether ingest and rescore are followed by the picture job (each new picture embedded, for More like
        this and the manifest's own picture model); where never set, $CURATION_PICTURE_JOB (on/off), else on."""
        saved = self.get_setting("picture_job") or os.environ.get(PICTURE_JOB_VARIABLE, "on")
        return saved.strip().lower() not in ("off", "0", "false", "no")

    @picture_job.setter
    def picture_job(self, value: bool) -> None:
        self.set_setting("picture_job", "on" if value else "off")

    @property
    def thumbnail_store(self) -> str:
        """Where thumbnails of pages scored from now on go (thumbnail_store.STORES)."""
        store = self.get_setting("thumbnails", thumbnail_store.DEFAULT_STORE)
        return store if store in thumbnail_store.STORES else thumbnail_store.DEFAULT_STORE

    @thumbnail_store.setter
    def thumbnail_store(self, value: str) -> None:
        if value not in thumbnail_store.STORES:
            raise ValueError(f"unknown thumbnail store {value!r}; one of {', '.join(thumbnail_store.STORES)}")
        self.set_setting("thumbnails", value)

    @property
    def thumbnail_folder(self):
        return thumbnail_store.folder_of(self.path)

    def decision_params(self, threshold: float | None = None, rule: str | None = None) -> dict:
        """What KEEP_SQL binds: the saved rule and cutoffs, or the ones being tried."""
        return {
            "threshold": self.threshold if threshold is None else float(threshold),
            "rule": self.rule if rule is None else rule,
            "picture_area_min": self.picture_area_min,
            "picture_score_min": self.picture_score_min,
            "picture_score_saved": self.picture_score_min,  # the cutoff the pages' figures hold (rules.PAGE_AREA_SQL)
            "ink_tone_min": INK_TONE_MIN,
        }

    # -- files and documents ------------------------------------------------------------------

    def cached_hash(self, path: str, size: int, mtime_ns: int) -> str | None:
        row = self.conn.execute(
            "SELECT sha256 FROM files WHERE path = ? AND size = ? AND mtime_ns = ?", (path, size, mtime_ns)
        ).fetchone()
        return row[0] if row else None

    def remember_hash(self, path: str, size: int, mtime_ns: int, sha256: str) -> None:
        self.conn.execute(
            "INSERT OR REPLACE INTO files (path, size, mtime_ns, sha256) VALUES (?, ?, ?, ?)",
            (path, size, mtime_ns, sha256),
        )

    def register_document(self, sha256: str, path: str, size: int) -> sqlite3.Row:
        """The document with this content, created if new, and known by its latest path.

        A document whose file now holds other content is marked replaced: its pages and
        overrides stay in the manifest but take no part in decisions.
        """
        with self.transaction():
            stamp = now()
            self.conn.execute(
                "UPDATE documents SET status = 'replaced', error = ?, updated_at = ? "
                "WHERE path = ? AND sha256 != ? AND status != 'replaced'",
                ("the file at this path changed; its new content is a new document", stamp, path, sha256),
            )
            row = self.document_by_hash(sha256)
            if row is None:
                self.conn.execute(
                    "INSERT INTO documents (sha256, path, size, added_at, updated_at) VALUES (?, ?, ?, ?, ?)",
                    (sha256, path, size, stamp, stamp),
                )
            elif row["path"] != path or row["status"] == "replaced":
                status = "pending" if row["status"] == "replaced" else row["status"]
                self.conn.execute(
                    "UPDATE documents SET path = ?, status = ?, updated_at = ? WHERE id = ?",
                    (path, status, stamp, row["id"]),
                )
            return self.document_by_hash(sha256)

    def document_by_hash(self, sha256: str) -> sqlite3.Row | None:
        return self.conn.execute("SELECT * FROM documents WHERE sha256 = ?", (sha256,)).fetchone()

    def document(self, doc_id: int) -> sqlite3.Row | None:
        return self.conn.execute("SELECT * FROM documents WHERE id = ?", (doc_id,)).fetchone()

    def documents(self) -> list[sqlite3.Row]:
        """Every document with its scored and failed pages (counted by triggers, schema.MIGRATIONS)."""
        return self.conn.execute("SELECT * FROM documents ORDER BY path").fetchall()

    def set_document(self, doc_id: int, *, status: str, error: str | None = None, pages: int | None = None) -> None:
        self.conn.execute(
            "UPDATE documents SET status = ?, error = ?, pages = COALESCE(?, pages), updated_at = ? WHERE id = ?",
            (status, error, pages, now(), doc_id),
        )

    def finish_document(self, doc_id: int) -> None:
        """Set a fully processed document's status from its pages."""
        doc = self.document(doc_id)
        failed = self.conn.execute(
            "SELECT page, error FROM pages WHERE doc_id = ? AND status = 'failed' ORDER BY page", (doc_id,)
        ).fetchall()
        if not failed:
            note = doc["error"] if (doc["error"] or "").startswith("repaired") else None
            self.set_document(doc_id, status="ok", error=note)
        elif len(failed) == doc["pages"]:
            self.set_document(doc_id, status="failed", error=f"no page could be scored: {failed[0]['error']}")
        else:
            shown = "; ".join(f"page {page_number(row['page'])}: {row['error']}" for row in failed[:3])
            more = f" (and {len(failed) - 3} more)" if len(failed) > 3 else ""
            self.set_document(
                doc_id, status="partial", error=f"{len(failed)} of {doc['pages']} pages failed: {shown}{more}"
            )

    # -- pages --------------------------------------------------------------------------------

    def done_pages(self, doc_id: int) -> set[int]:
        return {row[0] for row in self.conn.execute("SELECT page FROM pages WHERE doc_id = ?", (doc_id,))}

    def save_pages(self, doc_id: int, results: Iterable[PageResult]) -> int:
        """Store scored pages in one transaction. Overrides live elsewhere and are never touched."""
        stamp = now()
        count = 0
        store, folder = self.thumbnail_store, self.thumbnail_folder
        # The folder's files are named by content; looked up unless thumbnails go to SQLite and no folder exists.
        sha256 = self.document(doc_id)["sha256"] if store != "sqlite" or folder.is_dir() else None
        with self.transaction():
            for r in results:
                features = dict(r.features or {})
                pictures = json.loads(features.pop("pictures", "[]"))
                columns = {"doc_id": doc_id, "page": r.page, "status": r.status, "sigma": r.sigma, "width": r.width,
                           "height": r.height, "method": r.method, "error": r.error, "scored_at": stamp, **features}
                self.conn.execute(
                    f"INSERT OR REPLACE INTO pages ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                    list(columns.values()),
                )
                self.set_pictures(doc_id, r.page, pictures)
                if any(len(picture) > 7 and picture[7] is not None for picture in pictures):
                    self.conn.execute(page_figures.update_sql("doc_id = ? AND page = ?", SAVED_SCORE_MIN_SQL),
                                      (doc_id, r.page))
                if r.picture_cards:
                    self._store_picture_cards(doc_id, r.page, pictures, r.picture_cards, store, folder, sha256)
                if r.thumbnail is not None:
                    self._store_thumbnail(doc_id, r.page, r.thumbnail, store,
                                          thumbnail_store.file_of(folder, sha256, r.page) if sha256 else None)
                count += 1
        return count

    def _store_thumbnail(self, doc_id: int, page: int, jpeg: bytes, store: str, file) -> None:
        """A page scored again keeps one thumbnail, in the store set now: a copy in another store goes."""
        if store == "sqlite":
            self.conn.execute("INSERT OR REPLACE INTO thumbnails (doc_id, page, jpeg) VALUES (?, ?, ?)", (doc_id, page, jpeg))
        else:
            self.conn.execute("DELETE FROM thumbnails WHERE doc_id = ? AND page = ?", (doc_id, page))
        if store == "folder":
            thumbnail_store.write_file(file, jpeg)
        elif file is not None:
            thumbnail_store.remove_file(file)

    def _store_picture_cards(self, doc_id: int, page: int, found: list, cards: Sequence, store: str, folder,
                             sha256: str | None) -> None:
        """The cards ingest cut for the pictures it found (PageResult.picture_cards), kept beside the page's
        thumbnail, and each picture's suggested kind."""
        by_rank = {row["rank"]: row for row in self.conn.execute(
            "SELECT id, number, rank FROM pictures WHERE doc_id = ? AND page = ? AND rank IS NOT NULL", (doc_id, page))}
        kept = []
        for rank, (box, card) in enumerate(zip(found, cards)):
            row = by_rank.get(rank)
            if row is None or card is None:
                continue
            self.conn.execute("UPDATE pictures SET kind_suggested = ? WHERE id = ?", (card[1], row["id"]))
            kept.append((row["id"], page, row["number"], box[:4], card[0]))
        if store == "folder" and sha256 is None:
            sha256 = self.document(doc_id)["sha256"]
        picture_thumbnails.store(self.conn, store, folder, sha256, kept)

    def store_picture_cards(self, cards: Iterable[tuple]) -> None:
        """Cards cut for pictures' boxes as the curator left them (an added or redrawn box, a manifest ingested
        before cards were kept): (picture row as picture_rows gives it, jpeg), kept as ingest keeps its cards,
        in one transaction."""
        items = [(row["id"], row["page"], row["number"], (row["bx0"], row["by0"], row["bx1"], row["by1"]), jpeg,
                  row["sha256"]) for row, jpeg in cards]
        with self.transaction():
            for *item, sha256 in items:
                picture_thumbnails.store(self.conn, self.thumbnail_store, self.thumbnail_folder, sha256, [item])

    def picture_cards(self, rows) -> dict[int, bytes]:
        """The kept cards of `rows` (picture rows) cut for their box as it is now, by picture id."""
        return picture_thumbnails.read(self.conn, self.thumbnail_folder, rows)

    def remove_orphan_thumbnails(self) -> int:
        """Thumbnail files of documents this manifest does not hold are deleted (see thumbnail_store)."""
        if not self.thumbnail_folder.is_dir():
            return 0
        return thumbnail_store.remove_orphans(
            self.thumbnail_folder, (row[0] for row in self.conn.execute("SELECT sha256 FROM documents")))

    def pages(self, threshold: float | None = None, *, where: str = "", params: dict | None = None,
              order: str = "d.path, p.page", limit: int | None = None, offset: int = 0,
              rule: str | None = None) -> Iterator[sqlite3.Row]:
        """Pages of live documents with their decision at `threshold` (default: the saved one).

        `where` is an extra SQL condition over the aliases p (pages), d (documents), o (overrides).
        """
        sql = (
            f"SELECT d.path AS doc, p.doc_id, p.page, p.status, p.sigma, p.width, p.height, p.method, p.error, "
            f"{KEEP_SQL} AS keep, {DECIDED_BY_SQL} AS decided_by, o.keep AS override, "
            f"p.sigma_content, p.ink_tone, p.ink_coverage, p.picture_share, p.picture_area, p.picture_count, "
            f"p.text_height, p.picture_x0, p.picture_y0, p.picture_x1, p.picture_y1, p.phash, "
            f"s.keep AS suggestion, s.confidence, g.group_id AS duplicate_group "
            f"FROM pages p JOIN documents d ON d.id = p.doc_id "
            f"LEFT JOIN overrides o ON o.doc_id = p.doc_id AND o.page = p.page "
            f"LEFT JOIN suggestions s ON s.doc_id = p.doc_id AND s.page = p.page "
            f"LEFT JOIN duplicates g ON g.doc_id = p.doc_id AND g.page = p.page "
            f"WHERE {LIVE_DOCUMENT_SQL} {('AND (' + where + ')') if where else ''} ORDER BY {order}"
        )
        if limit is not None:
            sql += f" LIMIT {int(limit)} OFFSET {int(offset)}"
        return iter(self.conn.execute(sql, {**self.decision_params(threshold, rule), **(params or {})}))

    def summary(self, threshold: float | None = None, *, sigma: bool = True) -> dict:
        """Counts a curator looks at first, summed from the pages counted in bins (aggregates); with `sigma`,
        σ's smallest, mean and largest too (one pass over the pages)."""
        bound = self.decision_params(threshold)
        bound["base_rule"] = "picture" if bound["rule"] == "model" else bound["rule"]
        counts = aggregates.tally(self, bound).counts()
        found = aggregates.bins(self)
        result = {"pages": counts["pages"], "scored": int(found.pages[found.ok].sum()), "failed": counts["failed"],
                  "kept": counts["kept"], "overrides": counts["overridden"], "rejected": counts["rejected"]}
        if sigma:
            row = self.conn.execute(
                f"SELECT MIN(p.sigma), AVG(p.sigma), MAX(p.sigma) FROM pages p JOIN documents d ON d.id = p.doc_id "
                f"WHERE {LIVE_DOCUMENT_SQL}").fetchone()
            result.update(sigma_min=row[0], sigma_mean=row[1], sigma_max=row[2])
        result["threshold"] = bound["threshold"]
        result["rule"] = bound["rule"]
        result["documents"] = dict(
            self.conn.execute("SELECT status, COUNT(*) FROM documents GROUP BY status").fetchall()
        )
        return result

    # -- overrides ----------------------------------------------------------------------------

    def set_override(self, doc_id: int, page: int, keep: bool | None) -> None:
        """Include (True), exclude (False) or clear (None) the curator's decision for one page."""
        new = None if keep is None else int(bool(keep))
        with self.recording("override") as action:
            old = self.conn.execute("SELECT keep FROM overrides WHERE doc_id = ? AND page = ?", (doc_id, page)).fetchone()
            history.record(self.conn, action, "override", old[0] if old else None, new, doc_id=doc_id, page=page)
            if new is None:
                self.conn.execute("DELETE FROM overrides WHERE doc_id = ? AND page = ?", (doc_id, page))
                return
            stamp = now()
            self.conn.execute(
                "INSERT INTO overrides (doc_id, page, keep, created_at, updated_at) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT(doc_id, page) DO UPDATE SET keep = excluded.keep, updated_at = excluded.updated_at",
                (doc_id, page, new, stamp, stamp),
            )

    def overrides(self) -> list[sqlite3.Row]:
        return self.conn.execute("SELECT * FROM overrides ORDER BY doc_id, page").fetchall()

    # -- learned suggestions and near-duplicate groups -------------------------------------------

    def replace_suggestions(self, rows: Iterable[tuple[int, int, bool, float]]) -> None:
        """The model's (doc_id, page, keep, confidence) for every page, replacing the last fit's.

        The rows are gathered first in a temporary table, which takes no lock on the manifest; the write
        itself is then two statements, so a curator's click waits for a copy in SQL, not for Python to hand
        SQLite a million rows one by one (at 1 M pages: seconds)."""
        conn = self.conn
        conn.execute("DROP TABLE IF EXISTS temp.suggestions_new")
        conn.execute("CREATE TEMP TABLE suggestions_new (doc_id INTEGER NOT NULL, page INTEGER NOT NULL, "
                     "keep INTEGER NOT NULL, confidence REAL NOT NULL)")
        try:
            with contextlib.nullcontext() if conn.in_transaction else _TempTransaction(conn):
                conn.executemany("INSERT INTO temp.suggestions_new (doc_id, page, keep, confidence) VALUES (?, ?, ?, ?)",
                                 ((d, p, int(k), float(c)) for d, p, k, c in rows))
            with self.transaction():
                conn.execute("DELETE FROM suggestions")
                aggregates.bump_suggestions(conn)
                # Built again after the rows, not row by row: the confidence index takes the rows out of order.
                indexes = conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'index' "
                                       "AND tbl_name = 'suggestions' AND sql IS NOT NULL").fetchall()
                for name, _ in indexes:
                    conn.execute(f'DROP INDEX "{name}"')
                conn.execute("INSERT INTO suggestions (doc_id, page, keep, confidence) SELECT doc_id, page, keep, "
                             "confidence FROM temp.suggestions_new ORDER BY doc_id, page")
                for _, sql in indexes:
                    conn.execute(sql)
                if self.rule == "model":  # no trigger watches the suggestions: a million rows at a time
                    picture_decisions.decide_all(conn, DEFAULT_THRESHOLD)
        finally:
            conn.execute("DROP TABLE IF EXISTS temp.suggestions_new")

    def replace_duplicates(self, groups: Iterable[Iterable[tuple[int, int]]]) -> int:
        """Near-duplicate groups of (doc_id, page), numbered from 1, replacing the last grouping."""
        with self.transaction():
            self.conn.execute("DELETE FROM duplicates")
            count = 0
            for count, members in enumerate(groups, start=1):
                self.conn.executemany(
                    "INSERT INTO duplicates (doc_id, page, group_id) VALUES (?, ?, ?)",
                    ((d, p, count) for d, p in members),
                )
            return count

    # -- captions -----------------------------------------------------------------------------

    def caption(self, doc_id: int, page: int) -> str | None:
        row = self.conn.execute("SELECT text FROM captions WHERE doc_id = ? AND page = ?", (doc_id, page)).fetchone()
        return row[0] if row else None

    def set_caption(self, doc_id: int, page: int, text: str | None) -> None:
        """Set one page's caption; None or blank text removes it. Stored trimmed, as written."""
        self.set_captions([(doc_id, page, text)])

    def set_captions(self, items: Iterable[tuple[int, int, str | None]]) -> int:
        """Set many captions in one transaction (bulk editing); returns how many were given."""
        stamp, count = now(), 0
        with self.recording("caption") as action:
            for doc_id, page, text in items:
                text = (text or "").strip()
                history.record(self.conn, action, "caption", self.caption(doc_id, page), text or None,
                               doc_id=doc_id, page=page)
                if text:
                    self.conn.execute(
                        "INSERT INTO captions (doc_id, page, text, updated_at) VALUES (?, ?, ?, ?) "
                        "ON CONFLICT(doc_id, page) DO UPDATE SET text = excluded.text, updated_at = excluded.updated_at",
                        (doc_id, page, text, stamp),
                    )
                else:
                    self.conn.execute("DELETE FROM captions WHERE doc_id = ? AND page = ?", (doc_id, page))
                count += 1
        return count

    def captions(self, doc_id: int | None = None) -> dict[tuple[int, int], str]:
        """Captions by (doc_id, page), of one document or all."""
        rows = self.conn.execute(
            "SELECT doc_id, page, text FROM captions WHERE ? IS NULL OR doc_id = ?", (doc_id, doc_id)
        )
        return {(row[0], row[1]): row[2] for row in rows}

    def export_pages(self, threshold: float | None = None) -> list[sqlite3.Row]:
        """The pages a training export takes: kept at `threshold` (default: the saved one) and scored,
        of live documents, in a stable order, each with its document's path, hash and size, its
        decision, and its caption (None when it has none)."""
        bound = self.decision_params(threshold)
        return self.conn.execute(
            f"SELECT p.doc_id, p.page, d.path AS doc, d.sha256, d.size AS doc_size, p.sigma, p.width, p.height, "
            f"p.method, {DECIDED_BY_SQL} AS decided_by, c.text AS caption, p.picture_share, p.picture_area, "
            f"p.picture_x0, p.picture_y0, p.picture_x1, p.picture_y1, g.group_id AS duplicate_group "
            f"FROM pages p JOIN documents d ON d.id = p.doc_id "
            f"LEFT JOIN overrides o ON o.doc_id = p.doc_id AND o.page = p.page "
            f"LEFT JOIN captions c ON c.doc_id = p.doc_id AND c.page = p.page "
            f"LEFT JOIN duplicates g ON g.doc_id = p.doc_id AND g.page = p.page "
            f"WHERE {LIVE_DOCUMENT_SQL} AND p.status = 'ok' AND {KEEP_SQL} = 1 ORDER BY d.path, d.id, p.page",
            bound,
        ).fetchall()


class _TempTransaction:
    """BEGIN ... COMMIT for writes to temporary tables only: a deferred transaction, so it takes no lock on the
    manifest and other processes write on meanwhile."""

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn

    def __enter__(self):
        self.conn.execute("BEGIN")
        return self.conn

    def __exit__(self, exc_type, exc, tb):
        self.conn.execute("ROLLBACK" if exc_type else "COMMIT")


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
