"""Each picture's decision under the saved rule and cutoffs, stored beside it, and the pictures counted per
document, both kept by triggers in the transaction that changes what they read.

`pictures.exported` is rules.EXPORTED_SQL evaluated with the saved settings (1 the export writes the picture,
0 it does not; NULL while its page is not scored 'ok'). Triggers decide a picture again when it is added or a
curator changes it, when its page's figures or override change (a page scored again is replaced, which fires no
update trigger, but set_pictures then refreshes the page's picture figures, which does), and, when a cutoff is
saved or undone, the pictures whose decision its move can change, found through an index (the pages whose σ
lies between the two σ cutoffs; the pictures and pages whose area lies between the two area cutoffs; the
pages holding a picture scored between the two score cutoffs, whose figures are worked out again first). A rule
switch can change every decision: it marks them stale (pictures_stale), and so does an area cutoff's move over
more pictures than LARGE_MOVE (deciding them in the save cost a second at a million pictures); they are decided
again a chunk of ids per short transaction, by a job (`python -m curation decide`, launched by the Threshold page) and by
each reader (is_saved), which meanwhile evaluates the rule as for a draft. The
suggestions' one writer decides them again under the learned rule (replace_suggestions). `picture_counts`
holds, per document, the pictures each of the Pictures view's filters shows, moved by a trigger whenever a
picture's decision or state changes. So the view's counts are a read of a few hundred rows and its kept and
excluded screens walk an index (pictures_decided_area, pictures_decided_page) at any depth; a query at
other cutoffs (a draft on Threshold, the CLI's --threshold) evaluates rules.EXPORTED_SQL as before.

The triggers hold the decision's SQL as it was when they were made: a change to rules.py's decision comes
with a migration that makes them again (MIGRATION is built from rules.py, so a new copy of it does).
"""

from __future__ import annotations

import sqlite3
import time

from ..scoring.pictures import DEFAULT_PICTURE_AREA_MIN
from . import page_figures
from .rules import (DEFAULT_PICTURE_SCORE_MIN, DEFAULT_RULE, EXPORTED_SQL, INK_TONE_MIN,
                    LIVE_DOCUMENT_SQL, RULES, SAVED_SCORE_MIN_SQL, UNSCORED_EXPORTED_SQL)

DECIDING_SETTINGS = ("threshold", "rule", "picture_area_min", "picture_score_min")
UNSCORED_SETTINGS = DECIDING_SETTINGS[:3]  # what the released migrations' triggers watched
# What each of the view's filters counts, from one picture row (alias x) whose decision is stored.
COUNTED_SQL = {
    "pictures": "x.exported IS NOT NULL AND NOT x.deleted",
    "kept": "x.exported = 1 AND NOT x.deleted",
    "overridden": "x.exported IS NOT NULL AND NOT x.deleted AND (x.keep IS NOT NULL OR x.added OR x.fx0 IS NOT NULL)",
    "gone": "x.exported IS NOT NULL AND NOT x.deleted AND x.rank IS NULL AND NOT x.added",
    "deleted": "x.exported IS NOT NULL AND x.deleted",
}


def _saved(default_threshold: float) -> dict[str, str]:
    """SQL reading each parameter the decision binds from the saved settings, as Manifest.decision_params."""
    rules = ", ".join(f"'{rule}'" for rule in RULES)
    return {
        "threshold": f"COALESCE((SELECT CAST(value AS REAL) FROM settings WHERE key = 'threshold'), {default_threshold!r})",
        "rule": f"COALESCE((SELECT value FROM settings WHERE key = 'rule' AND value IN ({rules})), '{DEFAULT_RULE}')",
        "picture_area_min": (f"COALESCE((SELECT CAST(value AS REAL) FROM settings WHERE key = 'picture_area_min'), "
                             f"{DEFAULT_PICTURE_AREA_MIN!r})"),
        "picture_score_min": SAVED_SCORE_MIN_SQL,
        "picture_score_saved": SAVED_SCORE_MIN_SQL,
        "ink_tone_min": repr(INK_TONE_MIN),
    }


def decided_sql(default_threshold: float, exported: str = EXPORTED_SQL) -> str:
    """The stored decision of picture x under the saved settings, as one scalar subquery."""
    decision = _decision(default_threshold, exported)
    # Over the row being updated, as x (an UPDATE in a trigger cannot name its table otherwise).
    return (f"(SELECT CASE WHEN p.status = 'ok' THEN {decision} END FROM pictures x JOIN pages p "
            "ON p.doc_id = x.doc_id AND p.page = x.page LEFT JOIN overrides o ON o.doc_id = p.doc_id "
            "AND o.page = p.page WHERE x.id = pictures.id)")


def _decision(default_threshold: float, exported: str = EXPORTED_SQL) -> str:
    decision = exported
    for name, sql in _saved(default_threshold).items():
        decision = decision.replace(f":{name}", f"({sql})")
    return decision


def decide_where(where: str, decision: str = EXPORTED_SQL) -> str:
    """Decide again the pictures x (on page p, under override o) that `where` picks, in one join, under
    `decision` (rules.EXPORTED_SQL, bound or reading the saved settings). Only changed decisions are written.
    LIMIT -1 keeps the join from being flattened into the update, which would evaluate the decision twice a
    row (about twice the time)."""
    return (f"UPDATE pictures SET exported = d.decided FROM (SELECT x.id, CASE WHEN p.status = 'ok' THEN "
            f"{decision} END AS decided FROM pictures x JOIN pages p ON p.doc_id = x.doc_id "
            "AND p.page = x.page LEFT JOIN overrides o ON o.doc_id = p.doc_id AND o.page = p.page "
            f"WHERE {where} LIMIT -1) d WHERE pictures.id = d.id AND pictures.exported IS NOT d.decided")


# A saved setting as the decision reads it, from the settings' value column (NULL: not saved, the default).
def _effective(default_threshold: float) -> dict[str, str]:
    rules = ", ".join(f"'{rule}'" for rule in RULES)
    return {
        "threshold": f"COALESCE(CAST({{v}} AS REAL), {default_threshold!r})",
        "rule": f"CASE WHEN {{v}} IN ({rules}) THEN {{v}} ELSE '{DEFAULT_RULE}' END",
        "picture_area_min": f"COALESCE(CAST({{v}} AS REAL), {DEFAULT_PICTURE_AREA_MIN!r})",
        "picture_score_min": f"COALESCE(CAST({{v}} AS REAL), {DEFAULT_PICTURE_SCORE_MIN!r})",
    }


def pictures_that_can_change(name: str, before: str, after: str) -> list[str]:
    """Where a setting moved from `before` to `after` (SQL) can change a picture's decision (the trigger runs
    only when the two differ). The decision
    (rules.EXPORTED_SQL) reads the threshold only as `p.sigma > :threshold`, so only pages whose σ lies
    between the two cutoffs; the area cutoff only as `area >= :picture_area_min` for the picture's own area,
    its page's largest picture and its edited page's largest picture left to the rule. A rule switch can
    change any: it marks every decision stale (STALE), decided again a chunk at a time (catch_up)."""
    low, high = f"min({before}, {after})", f"max({before}, {after})"
    if name == "threshold":
        return [f"p.sigma > {low} AND p.sigma <= {high}"]
    if name == "picture_area_min":
        return [f"COALESCE(x.fixed_area, x.area) >= {low} AND COALESCE(x.fixed_area, x.area) < {high}",
                f"p.picture_area >= {low} AND p.picture_area < {high}",
                # The few edited pages, from their own index (pages_edited).
                f"(x.doc_id, x.page) IN (SELECT doc_id, page FROM pages WHERE pictures_included IS NOT NULL "
                f"AND pictures_auto_area >= {low} AND pictures_auto_area < {high})"]
    if name == "picture_score_min":  # the pages' figures first (curation.manifest.page_figures)
        return [f"x.score >= {low} AND x.score < {high}"]
    return []


def _moved_score(before: str, after: str) -> str:
    """The pages holding a scored picture between two score cutoffs take the figures of the pictures the
    new one admits (which decides their pictures again, pages_decide_pictures)."""
    between = (f"(doc_id, page) IN (SELECT doc_id, page FROM pictures WHERE score >= min({before}, {after}) "
               f"AND score < max({before}, {after}))")
    return f"{page_figures.update_sql(between, after)}; {page_figures.refresh_edited_sql(between, after)};"


# Pictures whose id is `next_id` or more may hold a decision under an earlier rule: at most one row, none
# when every stored decision is current. Other triggers keep deciding the pictures they touch under the
# saved settings meanwhile, so a chunk decided is current whatever changed since.
STALE_TABLE = "CREATE TABLE pictures_stale (next_id INTEGER NOT NULL);"
STALE_ALL = "DELETE FROM pictures_stale; INSERT INTO pictures_stale (next_id) VALUES (0);"
CHUNK = 10_000  # pictures decided again in one transaction: about 0.1 s
# An area cutoff's move that can change more pictures than this leaves every decision stale, as a rule switch
# does, instead of deciding them in the save's transaction (rewriting 30,000 of a million pictures' decisions
# took most of a second): the save returns at once and the decide job catches up.
LARGE_MOVE = 2 * CHUNK
BUDGET_S = 0.1  # CPU seconds a reader spends on them (is_saved)


def settings_triggers(default_threshold: float, exported: str = EXPORTED_SQL,
                      keys: tuple[str, ...] = DECIDING_SETTINGS, stale_table: bool = True,
                      large_move: int | None = None) -> str:
    """Triggers deciding again, when a setting the decision reads is saved, changed or removed, the
    pictures whose decision that move can change, and the table of what a rule switch left stale
    (store.MIGRATIONS; the released ones pass the decision and settings as they were). With `large_move`, an
    area cutoff's move over more pictures and pages than that leaves every decision stale instead."""
    effective, decision = _effective(default_threshold), _decision(default_threshold, exported)
    events = {"added": ("INSERT", "NEW.key = '{key}'", "NULL", "NEW.value"),
              "changed": ("UPDATE", "NEW.key = '{key}' AND OLD.key = '{key}' AND NEW.value IS NOT OLD.value",
                          "OLD.value", "NEW.value"),
              "removed": ("DELETE", "OLD.key = '{key}'", "OLD.value", "NULL")}
    triggers = [f"DROP TRIGGER IF EXISTS settings_decide_{event};" for event in events]
    triggers += [f"DROP TRIGGER IF EXISTS settings_{key}_{event}{large};" for key in keys for event in events
                 for large in ("", "_large")]
    if stale_table:
        triggers.append(STALE_TABLE)
    for key in keys:
        for event, (operation, when, old, new) in events.items():
            before, after = effective[key].format(v=old), effective[key].format(v=new)
            updates = " ".join(f"{decide_where(where, decision)};"
                               for where in pictures_that_can_change(key, before, after)) or STALE_ALL
            if key == "picture_score_min":
                updates = _moved_score(before, after) + " " + updates
            if key == "picture_area_min":  # the σ rule reads no area
                when += f" AND {_saved(default_threshold)['rule']} != 'sigma'"
            when = f"{when.format(key=key)} AND ({before}) IS NOT ({after})"
            if key == "picture_area_min" and large_move:
                large = _area_move_over(before, after, large_move)
                triggers.append(f"CREATE TRIGGER settings_{key}_{event}_large AFTER {operation} ON settings "
                                f"WHEN {when} AND {large} BEGIN {STALE_ALL} END;")
                when += f" AND NOT {large}"
            triggers.append(f"CREATE TRIGGER settings_{key}_{event} AFTER {operation} ON settings "
                            f"WHEN {when} BEGIN {updates} END;")
    return "\n".join(triggers)


def _area_move_over(before: str, after: str, limit: int) -> str:
    """Whether more than `limit` pictures, and pages by their largest picture, lie between two area cutoffs
    (counted through their indexes, no further than the limit)."""
    low, high = f"min({before}, {after})", f"max({before}, {after})"
    pictures = (f"SELECT 1 FROM pictures WHERE COALESCE(fixed_area, area) >= {low} "
                f"AND COALESCE(fixed_area, area) < {high} LIMIT {limit + 1}")
    pages = f"SELECT 1 FROM pages WHERE picture_area >= {low} AND picture_area < {high} LIMIT {limit + 1}"
    return f"((SELECT COUNT(*) FROM ({pictures})) + (SELECT COUNT(*) FROM ({pages})) > {limit})"


def _counts_delta(row: str, sign: str) -> str:
    values = ", ".join(f"{sign}COALESCE({COUNTED_SQL[name].replace('x.', row + '.')}, 0)" for name in COUNTED_SQL)
    return (f"INSERT INTO picture_counts (doc_id, {', '.join(COUNTED_SQL)}) VALUES ({row}.doc_id, {values}) "
            f"ON CONFLICT(doc_id) DO UPDATE SET "
            + ", ".join(f"{name} = {name} + excluded.{name}" for name in COUNTED_SQL) + ";")


def migration(default_threshold: float, exported: str = EXPORTED_SQL) -> str:
    """The stored decisions, the counts and the triggers that keep them (store.MIGRATIONS)."""
    decided = decided_sql(default_threshold, exported)
    counted = ", ".join(f"COALESCE(SUM({sql}), 0)" for sql in COUNTED_SQL.values())
    changed = " OR ".join(f"OLD.{c} IS NOT NEW.{c}" for c in ("exported", "deleted", "keep", "added", "fx0", "rank",
                                                               "doc_id"))
    return f"""
    ALTER TABLE pictures ADD COLUMN exported INTEGER;
    UPDATE pictures SET exported = {decided};
    CREATE TABLE picture_counts (
        doc_id INTEGER PRIMARY KEY,
        {' '.join(f'{name} INTEGER NOT NULL DEFAULT 0,' for name in COUNTED_SQL)[:-1]}
    );
    INSERT INTO picture_counts (doc_id, {', '.join(COUNTED_SQL)}) SELECT x.doc_id, {counted} FROM pictures x GROUP BY x.doc_id;
    -- The kept or excluded pictures by size and by document and page, walked from either end.
    CREATE INDEX pictures_decided_area ON pictures(exported, COALESCE(fixed_area, area));
    CREATE INDEX pictures_decided_page ON pictures(exported, doc_id, page, number);
    -- The few pictures a curator added, in order (least sure first ends with them).
    CREATE INDEX pictures_added ON pictures(added) WHERE added;
    {_deciding_triggers(decided, "keep, added, deleted, area, fixed_area, doc_id, page")}
    CREATE TRIGGER pictures_counted AFTER UPDATE OF exported, deleted, keep, added, fx0, rank, doc_id ON pictures
    WHEN {changed}
    BEGIN {_counts_delta('OLD', '-')} {_counts_delta('NEW', '+')} END;
    CREATE TRIGGER pictures_uncounted AFTER DELETE ON pictures
    BEGIN {_counts_delta('OLD', '-')} END;
    """


DECIDING_TRIGGERS = ("pictures_decide_added", "pictures_decide_edited", "pages_decide_pictures",
                     "overrides_decide_added", "overrides_decide_changed", "overrides_decide_removed")


def _deciding_triggers(decided: str, edited_columns: str) -> str:
    """The triggers that decide a picture again when it, its page or its page's override changes."""
    return f"""
    CREATE TRIGGER pictures_decide_added AFTER INSERT ON pictures
    BEGIN UPDATE pictures SET exported = {decided} WHERE id = NEW.id; END;
    CREATE TRIGGER pictures_decide_edited AFTER UPDATE OF {edited_columns} ON pictures
    BEGIN UPDATE pictures SET exported = {decided} WHERE id = NEW.id; END;
    CREATE TRIGGER pages_decide_pictures
    AFTER UPDATE OF status, sigma, picture_area, ink_tone, pictures_included, pictures_auto_area ON pages
    BEGIN UPDATE pictures SET exported = {decided} WHERE doc_id = NEW.doc_id AND page = NEW.page; END;
    CREATE TRIGGER overrides_decide_added AFTER INSERT ON overrides
    BEGIN UPDATE pictures SET exported = {decided} WHERE doc_id = NEW.doc_id AND page = NEW.page; END;
    CREATE TRIGGER overrides_decide_changed AFTER UPDATE ON overrides
    BEGIN UPDATE pictures SET exported = {decided} WHERE doc_id = NEW.doc_id AND page = NEW.page; END;
    CREATE TRIGGER overrides_decide_removed AFTER DELETE ON overrides
    BEGIN UPDATE pictures SET exported = {decided} WHERE doc_id = OLD.doc_id AND page = OLD.page; END;
    """


def score_cutoff_migration(default_threshold: float) -> str:
    """The score cutoff joins the decision (store.MIGRATIONS): the triggers are made again with it (a picture's
    score or redrawn box now decides it too), the scored pictures get an index (a moved cutoff finds what lies
    between), and the pictures a verdict scored under the default cutoff are decided again."""
    drops = "\n".join(f"DROP TRIGGER IF EXISTS {name};" for name in DECIDING_TRIGGERS)
    decided = decided_sql(default_threshold)
    return f"""
    CREATE INDEX pictures_score ON pictures(score) WHERE score IS NOT NULL;
    {drops}
    {_deciding_triggers(decided, "keep, added, deleted, area, fixed_area, fx0, score, doc_id, page")}
    {settings_triggers(default_threshold, stale_table=False, large_move=LARGE_MOVE)}
    {page_figures.update_sql(f"(doc_id, page) IN (SELECT doc_id, page FROM pictures WHERE score < {DEFAULT_PICTURE_SCORE_MIN!r})",
                             SAVED_SCORE_MIN_SQL)};
    {decide_where(f"x.score < {DEFAULT_PICTURE_SCORE_MIN!r}", _decision(default_threshold))};
    """


def decide_all(conn: sqlite3.Connection, default_threshold: float) -> None:
    """Decide every picture again, in the caller's transaction: for what no trigger watches (the
    suggestions, written a million rows at a time). Only changed decisions are written."""
    conn.execute(decide_where("1", _decision(default_threshold)))
    conn.execute("DELETE FROM pictures_stale")


def stale_from(conn: sqlite3.Connection) -> int | None:
    """The first picture id whose stored decision may be stale (a rule switch not caught up); None: current."""
    row = conn.execute("SELECT MIN(next_id) FROM pictures_stale").fetchone()
    return row[0]


def catch_up(manifest, budget_s: float | None = None, chunk: int | None = None) -> tuple[int, int] | None:
    """Decide the stale pictures again, a chunk of ids per short transaction, until current or `budget_s`
    CPU seconds are spent; resumable (the next chunk starts where this one ended). Returns (pictures left,
    pictures in all) to show as progress, or None when every decision is current."""
    started, budget_s, chunk = time.process_time(), BUDGET_S if budget_s is None else budget_s, chunk or CHUNK
    while True:
        with manifest.transaction():
            start = stale_from(manifest.conn)
            if start is None:
                return None
            last = manifest.conn.execute("SELECT COALESCE(MAX(id), 0) FROM pictures").fetchone()[0]
            end = start + chunk
            manifest.conn.execute(decide_where("x.id >= :start AND x.id < :end"),
                                  {**manifest.decision_params(), "start": start, "end": end})
            if end > last:
                manifest.conn.execute("DELETE FROM pictures_stale")
                return None
            manifest.conn.execute("UPDATE pictures_stale SET next_id = ?", (end,))
        if time.process_time() - started >= budget_s:
            left = manifest.conn.execute("SELECT COUNT(*) FROM pictures WHERE id >= ?", (end,)).fetchone()[0]
            return left, manifest.conn.execute("SELECT COUNT(*) FROM pictures").fetchone()[0]


DECIDE_JOB = "decide"  # the job kind of `python -m curation decide`, which the Threshold page launches
JOB_CHUNKS = 5  # a rule switch leaves more stale pictures than this many chunks: a job catches them up


def needs_job(manifest) -> bool:
    """Whether so many decisions are stale that readers alone would take long to catch them up."""
    start = stale_from(manifest.conn)
    return start is not None and manifest.conn.execute(
        "SELECT COUNT(*) > ? FROM pictures WHERE id >= ?", (JOB_CHUNKS * CHUNK, start)).fetchone()[0]


def decide_job(manifest) -> int:
    """Catch up the stale decisions as a job of the manifest, with its progress in pictures, stopped on
    request (resumable: the next job or reader goes on from there). Returns the pictures looked at.
    Raises JobRunning while another one runs."""
    job_id = manifest.start_job(DECIDE_JOB)
    total = manifest.conn.execute("SELECT COUNT(*) FROM pictures").fetchone()[0]
    what = "deciding the pictures under the saved rule"
    manifest.update_job(job_id, done=0, total=total, message=what)
    try:
        while (progress := catch_up(manifest, budget_s=0.5)) is not None:
            left, total = progress
            manifest.update_job(job_id, done=total - left, total=total, message=what)
            if manifest.stop_requested(job_id):
                manifest.finish_job(job_id, "stopped", f"{left:,} pictures left to decide")
                return total - left
    except BaseException as exc:
        manifest.finish_job(job_id, "failed", f"deciding the pictures failed: {exc}")
        raise
    manifest.update_job(job_id, done=total, total=total)
    manifest.finish_job(job_id, "done", "every picture decided under the saved rule")
    return total


def is_saved(manifest, params: dict) -> bool:
    """Whether `params` (views.decision_params) are the saved settings and the stored decisions hold them.
    After a rule switch they hold once caught up: each call decides a budget's worth of the stale ones
    (catch_up), so the readers that follow bring them current while they evaluate the rule meanwhile."""
    saved = manifest.decision_params()
    if not all(params.get(name) == value for name, value in saved.items()):
        return False
    return stale_from(manifest.conn) is None or _caught_up_by_reader(manifest)


def _caught_up_by_reader(manifest) -> bool:
    """catch_up, never waiting for another writer (a job's transaction): a reader that finds the manifest
    busy leaves the stale decisions to the next one and evaluates the rule."""
    timeout = manifest.conn.execute("PRAGMA busy_timeout").fetchone()[0]
    manifest.conn.execute("PRAGMA busy_timeout = 0")
    try:
        return catch_up(manifest) is None
    except sqlite3.OperationalError as exc:
        if "locked" not in str(exc):
            raise
        return False
    finally:
        manifest.conn.execute(f"PRAGMA busy_timeout = {int(timeout)}")


def counts(manifest, doc_id: int | None = None) -> dict[str, int]:
    """The stored counts of live documents (or of one): pictures, kept, overridden, gone, deleted."""
    where, params = LIVE_DOCUMENT_SQL, {}
    if doc_id is not None:
        where, params["doc_id"] = f"{where} AND c.doc_id = :doc_id", int(doc_id)
    sums = ", ".join(f"COALESCE(SUM(c.{name}), 0) AS {name}" for name in COUNTED_SQL)
    return dict(manifest.conn.execute(
        f"SELECT {sums} FROM picture_counts c JOIN documents d ON d.id = c.doc_id WHERE {where}", params).fetchone())
