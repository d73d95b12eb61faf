"""Who did what: every change a person makes to a manifest, recorded in the transaction that makes it.

An action is one thing a person did (an override, a bulk exclude of 100,000 pages, a caption, a rule
change, an ingest or export started), with who and when; its changes are what it changed, one row per
page or setting, with the value before and after. The rows of one action share its id, so an action is
undone in one step: undoing writes back the values before, as a new action, on every page the action
changed that nobody has changed since. The Manifest records as it writes (Manifest.recording): no
caller can forget to. The tables are in store.MIGRATIONS; this module holds their queries, and
curation.manifest.undoing the undo.
"""

from __future__ import annotations

import datetime as dt
import getpass
import json
import os
import pathlib
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass

from ..sources.page_numbers import page_number

USER_VARIABLE = "CURATION_USER"  # who a job started from the app runs for (the app sets it for the process)
# ...and who their sign-in provider says they are (curation.manifest.history records both beside the name)
ISSUER_VARIABLE, SUBJECT_VARIABLE = "CURATION_USER_ISSUER", "CURATION_USER_SUBJECT"
PAGE_FIELDS = ("override", "caption")
# A picture's changes carry its page (doc_id, page) and its id as `name` (curation.manifest.pictures).
PICTURE_FIELDS = ("picture_override", "picture_caption", "picture_deleted", "picture_box", "picture_kind",
                  "picture_no_legend", "picture_no_auto_caption", "picture_mask_off", "picture_mask_stamps")
# A page's pictures as its finder left them (FOUND_SQL), when a finder learned from the curator's boxes found them
# again (curation.runs.learn_boxes); undone, the page gets back what the finder before it found.
FOUND_FIELD = "found"
BOXED_FIELD = "boxed"  # a page whose boxes a curator gave, all of them (`boxes --from`): pages.boxed
JOB_KINDS = ("ingest", "export", "sample")
UNDOABLE = ("override", "caption", "setting", "picture", "finder")
SETTING_WORDS = {"threshold": "σ cutoff", "picture_area_min": "picture cutoff",
                 "picture_score_min": "picture score cutoff", "page_timeout": "page time limit",
                 "thumbnails": "thumbnails", "rule": "rule", "ingest_sources": "sources to ingest",
                 "allowed_roots": "allowed folders", "rule_before_model": "rule before the model",
                 "legend_languages": "legend languages", "picture_finder_version": "learned picture finder"}
# Bookkeeping of the learned models (pages', pictures'), not a person's choice.
NOT_RECORDED = frozenset({"suggestions_from_overrides", "picture_model"})
OVERRIDE_WORDS = {1: "included", 0: "excluded", None: "cleared the override of"}


def now() -> str:
    """A time stamp as every table of the manifest keeps it: ISO, UTC, to the second."""
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def default_user() -> str:
    """Who this process acts for: $CURATION_USER (set for jobs the app starts), else the login name."""
    named = os.environ.get(USER_VARIABLE, "").strip()
    if named:
        return named
    try:
        return getpass.getuser()
    except Exception:  # no login name at all (a container without a passwd entry)
        return f"uid {os.getuid()}"


def default_account() -> tuple[str, str] | None:
    """(issuer, subject) this process acts for: set by the app for a job a signed-in person started."""
    issuer, subject = (os.environ.get(name, "").strip() for name in (ISSUER_VARIABLE, SUBJECT_VARIABLE))
    return (issuer, subject) if issuer and subject else None


def account_env(account: tuple[str, str] | None) -> dict[str, str]:
    """The environment that makes a job's default_account() `account`."""
    return dict(zip((ISSUER_VARIABLE, SUBJECT_VARIABLE), account)) if account else {}


class UndoError(Exception):
    """The action cannot be undone; the message says why, for a person."""


# -- recording ----------------------------------------------------------------------------------


def begin(conn: sqlite3.Connection, user: str, kind: str, stamp: str, note: str | None = None,
          account: tuple[str, str] | None = None) -> int:
    """A new action's id; call inside the transaction that makes its changes, and finish() it there.
    `account`: (issuer, subject) of the signed-in person `user` names."""
    issuer, subject = account or (None, None)
    return conn.execute("INSERT INTO history (at, user, issuer, subject, kind, note) VALUES (?, ?, ?, ?, ?, ?)",
                        (stamp, user, issuer, subject, kind, note)).lastrowid


def finish(conn: sqlite3.Connection, action: int) -> None:
    """Count the action's changes and describe it; an action that changed nothing is not kept (but a job
    started, or an undo, always is)."""
    row = conn.execute("SELECT kind FROM history WHERE id = ?", (action,)).fetchone()
    count = conn.execute("SELECT COUNT(*) FROM history_changes WHERE action_id = ?", (action,)).fetchone()[0]
    if count == 0 and row["kind"] not in (*JOB_KINDS, "undo"):
        conn.execute("DELETE FROM history WHERE id = ?", (action,))
        return
    conn.execute("UPDATE history SET changes = ?, description = ? WHERE id = ?",
                 (count, describe(conn, action, row["kind"]), action))


def record(conn: sqlite3.Connection, action: int, field: str, old, new, *, doc_id: int | None = None,
           page: int | None = None, name: str | None = None) -> None:
    """One change: a page's override or caption, or the setting `name`. Changed twice in one action, the
    page keeps one row, from its first value to its last; back where it was, none."""
    if field == "setting" and name in NOT_RECORDED:
        return
    earlier = conn.execute(
        "SELECT rowid, old FROM history_changes WHERE action_id = ? AND doc_id IS ? AND page IS ? "
        "AND field = ? AND name IS ?", (action, doc_id, page, field, name)).fetchone()
    if earlier is not None:
        if earlier["old"] == new:
            conn.execute("DELETE FROM history_changes WHERE rowid = ?", (earlier["rowid"],))
        else:
            conn.execute("UPDATE history_changes SET new = ? WHERE rowid = ?", (new, earlier["rowid"]))
    elif old != new:
        conn.execute("INSERT INTO history_changes (action_id, field, doc_id, page, name, old, new) "
                     "VALUES (?, ?, ?, ?, ?, ?, ?)", (action, field, doc_id, page, name, old, new))


# What a page holds now, by field, for a page aliased k (doc_id, page).
CURRENT_SQL = {
    "override": "(SELECT o.keep FROM overrides o WHERE o.doc_id = k.doc_id AND o.page = k.page)",
    "caption": "(SELECT c.text FROM captions c WHERE c.doc_id = k.doc_id AND c.page = k.page)",
    "picture_override": "(SELECT x.keep FROM pictures x WHERE x.id = CAST(k.name AS INTEGER))",
    "picture_caption": "(SELECT x.caption FROM pictures x WHERE x.id = CAST(k.name AS INTEGER))",
    "picture_deleted": "(SELECT x.deleted FROM pictures x WHERE x.id = CAST(k.name AS INTEGER))",
    "picture_box": "(SELECT CASE WHEN x.fx0 IS NOT NULL THEN json_array(x.fx0, x.fy0, x.fx1, x.fy1) END "
                   "FROM pictures x WHERE x.id = CAST(k.name AS INTEGER))",
    "picture_kind": "(SELECT x.kind FROM pictures x WHERE x.id = CAST(k.name AS INTEGER))",
    "picture_no_legend": "(SELECT x.no_legend FROM pictures x WHERE x.id = CAST(k.name AS INTEGER))",
    "picture_no_auto_caption": "(SELECT x.no_auto_caption FROM pictures x WHERE x.id = CAST(k.name AS INTEGER))",
    "picture_mask_off": "(SELECT x.mask_off FROM pictures x WHERE x.id = CAST(k.name AS INTEGER))",
    "picture_mask_stamps": "(SELECT x.mask_stamps FROM pictures x WHERE x.id = CAST(k.name AS INTEGER))",
}
# What a finder left on a page (aliased k): its pictures, a curator's marks on them (a page a curator touched
# since is not as the finder left it), and the page's picture figures.
# A picture's kind suggested from its crop is left out, as its embedding is: the picture job writes both when it
# likes, and an undo must not take that for a curator's change to the page.
FOUND_SQL = (
    "(SELECT json_object('pictures', (SELECT json_group_array(json_array(id, number, rank, x0, y0, x1, y1, area, legend, "
    "legend_confidence, score, finder, keep, caption, fx0, deleted, kind, no_legend, no_auto_caption)) "
    "FROM (SELECT * FROM pictures x WHERE x.doc_id = k.doc_id AND x.page = k.page AND NOT x.added ORDER BY x.id)), "
    "'page', json_array(p.picture_area, p.picture_count, p.picture_share, p.picture_x0, p.picture_y0, p.picture_x1, "
    "p.picture_y1)) FROM pages p WHERE p.doc_id = k.doc_id AND p.page = k.page)")
CURRENT_SQL[FOUND_FIELD] = FOUND_SQL
CURRENT_SQL[BOXED_FIELD] = "(SELECT p.boxed FROM pages p WHERE p.doc_id = k.doc_id AND p.page = k.page)"


def found_state(conn: sqlite3.Connection, doc_id: int, page: int) -> str | None:
    """What the finder left on one page, as FOUND_SQL says it: compared, as text, when the page is undone."""
    return conn.execute(f"SELECT {FOUND_SQL} FROM (SELECT ? AS doc_id, ? AS page) k", (doc_id, page)).fetchone()[0]


PICTURE_COLUMNS = {"picture_override": "keep", "picture_caption": "caption", "picture_deleted": "deleted",
                   "picture_kind": "kind", "picture_no_legend": "no_legend",
                   "picture_no_auto_caption": "no_auto_caption", "picture_mask_off": "mask_off",
                   "picture_mask_stamps": "mask_stamps"}


def record_pages(conn: sqlite3.Connection, action: int, field: str, keys_table: str, new) -> None:
    """The changes of setting `field` to `new` on every page of `keys_table` (columns doc_id, page), in
    one statement: only pages whose value differs. Call before writing them."""
    conn.execute(
        f"INSERT INTO history_changes (action_id, field, doc_id, page, old, new) "
        f"SELECT ?, ?, k.doc_id, k.page, {CURRENT_SQL[field]} AS old, ? FROM {keys_table} k WHERE old IS NOT ?",
        (action, field, new, new))


def paths_note(paths: list[str], shown: int = 3) -> str | None:
    """What a job read, in a line: the first few paths and how many more."""
    more = f" and {len(paths) - shown:,} more" if len(paths) > shown else ""
    return ", ".join(str(path) for path in paths[:shown]) + more if paths else None


# -- reading ------------------------------------------------------------------------------------


def actions(conn: sqlite3.Connection, *, user: str | None = None, since: str | None = None,
            limit: int | None = None) -> list[dict]:
    """Actions, newest first: by `user`, at or after `since` (an ISO time in UTC), at most `limit`."""
    sql = ("SELECT id, at, user, issuer, subject, kind, description, changes, undoes, undone_by FROM history "
           "WHERE (:user IS NULL OR user = :user) AND (:since IS NULL OR at >= :since) ORDER BY id DESC")
    if limit is not None:
        sql += f" LIMIT {int(limit)}"
    return [dict(row) for row in conn.execute(sql, {"user": user, "since": since})]


def changes(conn: sqlite3.Connection, *, user: str | None = None, since: str | None = None) -> Iterable[dict]:
    """Every change with its action's who, when and kind, newest action first, as a person reads it."""
    rows = conn.execute(
        "SELECT h.id AS action, h.at, h.user, h.issuer, h.subject, h.kind, c.field, c.name, d.path AS doc, c.page, c.old, c.new, "
        "x.number AS picture FROM history h JOIN history_changes c ON c.action_id = h.id "
        "LEFT JOIN documents d ON d.id = c.doc_id "
        "LEFT JOIN pictures x ON c.field LIKE 'picture%' AND x.id = CAST(c.name AS INTEGER) "
        "WHERE (:user IS NULL OR h.user = :user) AND (:since IS NULL OR h.at >= :since) "
        "ORDER BY h.id DESC, c.rowid", {"user": user, "since": since})
    for row in rows:
        target = row["name"] if row["field"] == "setting" else f"{row['doc']} p. {page_number(row['page'])}"
        if row["field"] in PICTURE_FIELDS:
            target += f" picture {row['picture']}"
        yield {**dict(row), "target": target, "old": _value(row["field"], row["old"]),
               "new": _value(row["field"], row["new"])}


def _value(field: str, value):
    if field in ("override", "picture_override"):
        return {1: "include", 0: "exclude"}.get(value, "auto")
    if field == "picture_deleted":
        return {1: "deleted", 0: "present"}.get(value)
    if field in ("picture_no_legend", "picture_no_auto_caption", "picture_mask_off"):
        return {1: "switched off", 0: "used"}.get(value)
    if field == FOUND_FIELD and value is not None:
        return f"{len(json.loads(value)['pictures'])} picture(s) found"
    return value


def action(conn: sqlite3.Connection, action_id: int) -> dict | None:
    row = conn.execute("SELECT * FROM history WHERE id = ?", (action_id,)).fetchone()
    return dict(row) if row else None


def latest_id(conn: sqlite3.Connection) -> int:
    """The latest action's id, anyone's (0 before the first): it changes with every change a person makes."""
    return conn.execute("SELECT COALESCE(MAX(id), 0) FROM history").fetchone()[0]


def last_undoable(conn: sqlite3.Connection, user: str | None = None, kinds: Iterable[str] = UNDOABLE) -> dict | None:
    """The latest action (by `user`, or anyone's) of `kinds` that is not undone yet."""
    kinds = [kind for kind in kinds if kind in UNDOABLE]
    row = conn.execute(
        f"SELECT * FROM history WHERE kind IN ({', '.join('?' * len(kinds))}) AND undone_by IS NULL "
        f"AND (? IS NULL OR user = ?) ORDER BY id DESC LIMIT 1", (*kinds, user, user)).fetchone()
    return dict(row) if row else None


@dataclass(frozen=True)
class PageChange:
    """The latest change of one page: who made it, when, and to what."""

    user: str
    at: str
    field: str
    new: object

    def __str__(self) -> str:
        """"excluded by ana, 3 Dec 14:02" (UTC), as a card shows it."""
        if self.field == "override":
            verb = {1: "included", 0: "excluded"}.get(self.new, "given back to the rule")
        elif self.field in PICTURE_FIELDS:
            verb = "pictures changed"
        else:
            verb = "captioned" if self.new is not None else "caption removed"
        return f"{verb} by {self.user}, {short_time(self.at)}"


def latest_page_changes(conn: sqlite3.Connection, keys: Iterable[tuple[int, int]]) -> dict[tuple[int, int], PageChange]:
    """The latest change of each of the given (doc_id, page) pages that has one, in one query."""
    keys = list(keys)
    if not keys:
        return {}
    values = ", ".join("(?, ?)" for _ in keys)
    rows = conn.execute(
        f"WITH k(doc_id, page) AS (VALUES {values}), "
        f"latest AS (SELECT k.doc_id, k.page, (SELECT MAX(c.rowid) FROM history_changes c "
        f"WHERE c.doc_id = k.doc_id AND c.page = k.page) AS change FROM k) "
        f"SELECT l.doc_id, l.page, h.user, h.at, c.field, c.new FROM latest l "
        f"JOIN history_changes c ON c.rowid = l.change JOIN history h ON h.id = c.action_id",
        [n for key in keys for n in key])
    return {(row["doc_id"], row["page"]): PageChange(row["user"], row["at"], row["field"], row["new"]) for row in rows}


def short_time(at: str) -> str:
    """An ISO time in UTC as "3 Dec 14:02"."""
    when = dt.datetime.fromisoformat(at)
    return f"{when.day} {when:%b %H:%M}"


def parse_since(text: str, today: dt.datetime | None = None) -> str:
    """A --since value as an ISO time in UTC: a date or time (2026-12-03, 2026-12-03T14:00, taken as UTC
    unless it says otherwise), or a span back from now: 30m, 2h, 7d. Raises ValueError."""
    text = text.strip()
    units = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
    if text[:-1].isdigit() and text[-1:].lower() in units:
        now = today or dt.datetime.now(dt.timezone.utc)
        when = now - dt.timedelta(**{units[text[-1].lower()]: int(text[:-1])})
    else:
        when = dt.datetime.fromisoformat(text.replace(" ", "T"))
        if when.tzinfo is None:
            when = when.replace(tzinfo=dt.timezone.utc)
    return when.astimezone(dt.timezone.utc).isoformat(timespec="seconds")


# -- describing ---------------------------------------------------------------------------------


def describe(conn: sqlite3.Connection, action: int, kind: str) -> str:
    """The action in a few words: "excluded 1,204 pages (view: Kept)", "σ cutoff 45 → 50"."""
    row = conn.execute("SELECT * FROM history WHERE id = ?", (action,)).fetchone()
    note = f" ({row['note']})" if row["note"] and kind in PAGE_FIELDS else ""
    if kind == "ingest":
        return f"started an ingest of {row['note']}" if row["note"] else "started an ingest"
    if kind == "export":
        return f"started an export to {row['note']}" if row["note"] else "started an export"
    if kind == "sample":
        return "started the sample archive"
    if kind == "undo":
        target = conn.execute("SELECT id, description FROM history WHERE id = ?", (row["undoes"],)).fetchone()
        return f"undid #{target['id']}: {target['description']}" if target else "undid an action"
    # One pass over the action's changes (a bulk action holds a row per page): its fields and their counts.
    fields = {row["field"]: row for row in conn.execute(
        "SELECT field, COUNT(*) AS n, COALESCE(SUM(new = 1), 0) AS included, COALESCE(SUM(new = 0), 0) AS excluded, "
        "COALESCE(SUM(new IS NULL), 0) AS cleared, MIN(doc_id) AS doc_id, MIN(page) AS page "
        "FROM history_changes WHERE action_id = ? GROUP BY field", (action,))}
    parts = [_describe_field(conn, action, field, fields[field])
             for field in ("override", "caption", "setting", *PICTURE_FIELDS, FOUND_FIELD, BOXED_FIELD) if field in fields]
    return "; ".join(part for part in parts if part) + note


def _describe_field(conn: sqlite3.Connection, action: int, field: str, row: sqlite3.Row) -> str:
    """One field's changes in words; `row` counts them (describe)."""
    if field in PICTURE_FIELDS:
        return _describe_pictures(conn, action, field)
    if field == FOUND_FIELD:
        return f"found the pictures of {row['n']:,} page(s) again"
    if field == BOXED_FIELD:
        return f"gave the boxes of {row['n']:,} page(s)" if row["included"] else f"took back the boxes of {row['n']:,} page(s)"
    if field == "setting":
        rows = conn.execute("SELECT name, old, new FROM history_changes WHERE action_id = ? AND doc_id IS NULL "
                            "AND field = 'setting' ORDER BY rowid", (action,)).fetchall()
        return "; ".join(f"{SETTING_WORDS.get(r['name'], r['name'])} {_setting(r['old'])} → {_setting(r['new'])}"
                         for r in rows)
    count = row["n"]
    if not count:
        return ""
    where = f"p. {page_number(row['page'])} of {_document_name(conn, row['doc_id'])}" if count == 1 else f"{count:,} pages"
    if field == "caption":
        if row["cleared"] == count:
            return f"removed the caption of {where}" if count == 1 else f"removed the captions of {where}"
        return f"captioned {where}"
    for value, words in ((1, "included"), (0, "excluded"), (None, "cleared")):
        if row[words] == count:
            return f"{OVERRIDE_WORDS[value]} {where}"
    parts = [f"{row[words]:,} {said}" for words, said in (("included", "included"), ("excluded", "excluded"),
                                                           ("cleared", "given back to the rule")) if row[words]]
    return f"overrode {where}: {', '.join(parts)}"


PICTURE_VERBS = {  # field: {new value (None: any): (verb for one, verb for many)}
    "picture_override": {1: "included", 0: "excluded", None: "gave back to the rule"},
    "picture_caption": {None: "captioned"},
    "picture_deleted": {1: "deleted", 0: "added"},
    "picture_box": {None: "redrew the box of"},
    "picture_kind": {None: "set the kind of"},
    "picture_no_legend": {1: "switched off the legend of", 0: "switched on the legend of"},
    "picture_no_auto_caption": {1: "switched off the model's caption of", 0: "switched on the model's caption of"},
    "picture_mask_off": {1: "turned off the mask of", 0: "turned on the mask of"},
    "picture_mask_stamps": {None: "painted out part of the mask of"},
}


def _describe_pictures(conn: sqlite3.Connection, action: int, field: str) -> str:
    rows = conn.execute(
        "SELECT c.doc_id, c.page, c.old, c.new, x.number FROM history_changes c LEFT JOIN pictures x "
        "ON x.id = CAST(c.name AS INTEGER) WHERE c.action_id = ? AND c.field = ?", (action, field)).fetchall()
    if not rows:
        return ""
    verbs = PICTURE_VERBS[field]
    values = {row["new"] for row in rows}
    verb = verbs.get(values.pop(), verbs.get(None, "changed")) if len(values) == 1 else "changed"
    if field == "picture_caption" and any(row["new"] is not None for row in rows):  # many texts: still captions
        verb = "captioned"
    if field == "picture_mask_stamps":  # each picture's own list: a new one painted out, or none left
        verb = ("painted out part of the mask of" if any(row["new"] is not None for row in rows)
                else "took back the painted-out parts of the mask of")
    if field == "picture_deleted" and rows[0]["old"] == 0 and rows[0]["new"] == 1:
        verb = "deleted"
    elif field == "picture_deleted" and rows[0]["old"] == 1 and rows[0]["new"] == 0:
        verb = "brought back" if len(rows) > 1 or _was_detected(conn, action) else "added"  # many: a bulk restore
    if len(rows) == 1:
        row = rows[0]
        return (f"{verb} picture {row['number']} on p. {page_number(row['page'])} "
                f"of {_document_name(conn, row['doc_id'])}")
    return f"{verb} {len(rows):,} pictures"


def _was_detected(conn: sqlite3.Connection, action: int) -> bool:
    row = conn.execute("SELECT x.added FROM history_changes c JOIN pictures x ON x.id = CAST(c.name AS INTEGER) "
                       "WHERE c.action_id = ? AND c.field = 'picture_deleted'", (action,)).fetchone()
    return bool(row) and not row["added"]


def _setting(value) -> str:
    if value is None:
        return "(default)"
    try:
        return f"{float(value):g}"
    except ValueError:
        return str(value)


def _document_name(conn: sqlite3.Connection, doc_id: int) -> str:
    row = conn.execute("SELECT path FROM documents WHERE id = ?", (doc_id,)).fetchone()
    return pathlib.PurePath(row[0]).name if row else f"document {doc_id}"
