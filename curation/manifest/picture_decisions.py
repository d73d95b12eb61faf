"""Each picture's decision under the saved rule and cutoffs, stored beside it, and the pictures counted per
document, both kept by triggers in the transaction that changes what they read.

`pictures.exported` is rules.EXPORTED_SQL evaluated with the saved settings (1 the export writes the picture,
0 it does not; NULL while its page is not scored 'ok'). Triggers decide a picture again when it is added or a
curator changes it, when its page's figures or override change (a page scored again is replaced, which fires no
update trigger, but set_pictures then refreshes the page's picture figures, which does), and every picture when a setting the
decision reads changes (a setting saved or undone: about a second at 250,000 pictures, once per save); the
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

from .rules import DEFAULT_PICTURE_AREA_MIN, DEFAULT_RULE, EXPORTED_SQL, INK_TONE_MIN, LIVE_DOCUMENT_SQL, RULES

DECIDING_SETTINGS = ("threshold", "rule", "picture_area_min")
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
        "ink_tone_min": repr(INK_TONE_MIN),
    }


def decided_sql(default_threshold: float) -> str:
    """The stored decision of picture x under the saved settings, as one scalar subquery."""
    decision = EXPORTED_SQL
    for name, sql in _saved(default_threshold).items():
        decision = decision.replace(f":{name}", f"({sql})")
    # Over the row being updated, as x (an UPDATE in a trigger cannot name its table otherwise).
    return (f"(SELECT CASE WHEN p.status = 'ok' THEN {decision} END FROM pictures x JOIN pages p "
            "ON p.doc_id = x.doc_id AND p.page = x.page LEFT JOIN overrides o ON o.doc_id = p.doc_id "
            "AND o.page = p.page WHERE x.id = pictures.id)")


def _counts_delta(row: str, sign: str) -> str:
    values = ", ".join(f"{sign}COALESCE({COUNTED_SQL[name].replace('x.', row + '.')}, 0)" for name in COUNTED_SQL)
    return (f"INSERT INTO picture_counts (doc_id, {', '.join(COUNTED_SQL)}) VALUES ({row}.doc_id, {values}) "
            f"ON CONFLICT(doc_id) DO UPDATE SET "
            + ", ".join(f"{name} = {name} + excluded.{name}" for name in COUNTED_SQL) + ";")


def migration(default_threshold: float) -> str:
    """The stored decisions, the counts and the triggers that keep them (store.MIGRATIONS)."""
    decided = decided_sql(default_threshold)
    settings = ", ".join(f"'{name}'" for name in DECIDING_SETTINGS)
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
    CREATE TRIGGER pictures_decide_added AFTER INSERT ON pictures
    BEGIN UPDATE pictures SET exported = {decided} WHERE id = NEW.id; END;
    CREATE TRIGGER pictures_decide_edited AFTER UPDATE OF keep, added, deleted, area, fixed_area, doc_id, page ON pictures
    BEGIN UPDATE pictures SET exported = {decided} WHERE id = NEW.id; END;
    CREATE TRIGGER pictures_counted AFTER UPDATE OF exported, deleted, keep, added, fx0, rank, doc_id ON pictures
    WHEN {changed}
    BEGIN {_counts_delta('OLD', '-')} {_counts_delta('NEW', '+')} END;
    CREATE TRIGGER pictures_uncounted AFTER DELETE ON pictures
    BEGIN {_counts_delta('OLD', '-')} END;
    CREATE TRIGGER pages_decide_pictures
    AFTER UPDATE OF status, sigma, picture_area, ink_tone, pictures_included, pictures_auto_area ON pages
    BEGIN UPDATE pictures SET exported = {decided} WHERE doc_id = NEW.doc_id AND page = NEW.page; END;
    CREATE TRIGGER overrides_decide_added AFTER INSERT ON overrides
    BEGIN UPDATE pictures SET exported = {decided} WHERE doc_id = NEW.doc_id AND page = NEW.page; END;
    CREATE TRIGGER overrides_decide_changed AFTER UPDATE ON overrides
    BEGIN UPDATE pictures SET exported = {decided} WHERE doc_id = NEW.doc_id AND page = NEW.page; END;
    CREATE TRIGGER overrides_decide_removed AFTER DELETE ON overrides
    BEGIN UPDATE pictures SET exported = {decided} WHERE doc_id = OLD.doc_id AND page = OLD.page; END;
    CREATE TRIGGER settings_decide_added AFTER INSERT ON settings WHEN NEW.key IN ({settings})
    BEGIN UPDATE pictures SET exported = {decided} WHERE exported IS NOT {decided}; END;
    CREATE TRIGGER settings_decide_changed AFTER UPDATE ON settings
    WHEN NEW.key IN ({settings}) AND NEW.value IS NOT OLD.value
    BEGIN UPDATE pictures SET exported = {decided} WHERE exported IS NOT {decided}; END;
    CREATE TRIGGER settings_decide_removed AFTER DELETE ON settings WHEN OLD.key IN ({settings})
    BEGIN UPDATE pictures SET exported = {decided} WHERE exported IS NOT {decided}; END;
    """


def decide_all(conn: sqlite3.Connection, default_threshold: float) -> None:
    """Decide every picture again, in the caller's transaction: for what no trigger watches (the
    suggestions, written a million rows at a time). Only changed decisions are written."""
    decided = decided_sql(default_threshold)
    conn.execute(f"UPDATE pictures SET exported = {decided} WHERE exported IS NOT {decided}")


def is_saved(manifest, params: dict) -> bool:
    """Whether `params` (views.decision_params) are the saved settings, so the stored decisions hold."""
    saved = manifest.decision_params()
    return all(params.get(name) == value for name, value in saved.items())


def counts(manifest, doc_id: int | None = None) -> dict[str, int]:
    """The stored counts of live documents (or of one): pictures, kept, overridden, gone, deleted."""
    where, params = LIVE_DOCUMENT_SQL, {}
    if doc_id is not None:
        where, params["doc_id"] = f"{where} AND c.doc_id = :doc_id", int(doc_id)
    sums = ", ".join(f"COALESCE(SUM(c.{name}), 0) AS {name}" for name in COUNTED_SQL)
    return dict(manifest.conn.execute(
        f"SELECT {sums} FROM picture_counts c JOIN documents d ON d.id = c.doc_id WHERE {where}", params).fetchone())
