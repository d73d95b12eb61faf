"""The bulk actions on a view of Review's Pictures (include, exclude, give back to the rule, caption, restore
every picture of it): what each changes, in words, and each written as one recorded action, computed in SQL
and tested without Streamlit. A view over JOB_MIN pictures runs as a job (curation.views.bulk)."""

from __future__ import annotations

import contextlib

from ..manifest import history
from ..manifest.caption_limit import stored_caption
from ..manifest.store import Manifest, now
from . import picture_views
from .picture_views import PictureFilter, from_sql, override_counts


def bulk_override_effect(counts: dict, keep: bool | None) -> str:
    """What including (True), excluding (False) or giving back to the rule (None) every picture of a view
    changes, from its override_counts: "This replaces 4 Include overrides; 1 picture is already excluded"."""
    total, included, excluded = counts["pictures"], counts["included"], counts["excluded"]
    if keep is None:
        if not included and not excluded:
            return "No picture in this view has an override: nothing changes."
        return (f"This removes {_count(included + excluded, 'override')} ({included:,} Include, {excluded:,} "
                "Exclude); those pictures go back to the rule's decision.")
    replaced, same = (excluded, included) if keep else (included, excluded)
    word, other = ("Include", "Exclude") if keep else ("Exclude", "Include")
    parts = [f"This replaces {_count(replaced, other + ' override')}" if replaced
             else f"It replaces no {other} override"]
    if same:
        parts.append(f"{_count(same, 'picture')} {'is' if same == 1 else 'are'} already {word.lower()}d")
    fresh = total - replaced - same
    if fresh:
        parts.append(f"{_count(fresh, 'picture')} without an override get{'s' if fresh == 1 else ''} one")
    return "; ".join(parts) + "."


def bulk_caption_effect(counts: dict, overwrite: bool) -> tuple[int, str]:
    """How many captions a bulk caption writes, and in words what happens to the typed ones: kept unless
    `overwrite`."""
    total, captioned = counts["pictures"], counts["captioned"]
    if not captioned:
        return total, "No picture here has a typed caption yet."
    if overwrite:
        return total, f"It overwrites {_count(captioned, 'typed caption')}."
    return total - captioned, (f"{_count(captioned, 'picture')} with a typed caption "
                               f"keep{'s' if captioned == 1 else ''} it.")


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def bulk_override(manifest: Manifest, threshold: float | None, flt: PictureFilter, keep: bool | None, *,
                  rule: str | None = None) -> int:
    """Include, exclude or give back to the rule every picture of the view (deleted ones left as they are),
    as one action undone in one step. The view is taken once, before anything changes. Returns how many."""
    with manifest.recording("picture") as action, _bulk_pictures(manifest, threshold, flt, rule) as count:
        write_overrides(manifest, action, "temp.bulk_pictures", keep)
    return count


def write_overrides(manifest: Manifest, action: int, keys: str, keep: bool | None) -> None:
    """Include, exclude or give back to the rule the pictures of the table `keys` (bulk_pictures_table's
    columns), recorded under `action`; their pages follow."""
    new = None if keep is None else int(bool(keep))
    _record(manifest, action, keys, "picture_override", "keep", new)
    manifest.conn.execute(f"UPDATE pictures SET keep = ?, updated_at = ? WHERE id IN (SELECT id FROM {keys})",
                          (new, now()))
    _refresh(manifest, keys)


def bulk_caption(manifest: Manifest, threshold: float | None, flt: PictureFilter, text: str | None, *,
                 replace: bool = False, rule: str | None = None) -> int:
    """Give every picture of the view the caption `text` (blank removes), as one action; a typed caption is
    kept unless `replace`. Returns how many captions were written."""
    with manifest.recording("picture") as action, _bulk_pictures(manifest, threshold, flt, rule,
                                                                 caption_condition(replace)) as count:
        write_captions(manifest, action, "temp.bulk_pictures", text)
    return count


def caption_condition(replace: bool) -> str:
    """Which pictures of a view a bulk caption writes: all, or (not `replace`) those without a typed caption."""
    return "" if replace else "AND x.caption IS NULL"


def write_captions(manifest: Manifest, action: int, keys: str, text: str | None) -> None:
    """Give the pictures of the table `keys` the caption `text` (blank removes), recorded under `action`."""
    text = stored_caption(text)
    _record(manifest, action, keys, "picture_caption", "caption", text)
    manifest.conn.execute(f"UPDATE pictures SET caption = ?, updated_at = ? WHERE id IN (SELECT id FROM {keys})",
                          (text, now()))


def bulk_restore(manifest: Manifest, flt: PictureFilter) -> int:
    """Bring back every deleted picture of the view (the Deleted filter, of one document or all), as one
    action undone in one step; each page follows its pictures again. Returns how many."""
    if flt.decision != "deleted":
        raise ValueError("only deleted pictures can be brought back")
    with manifest.recording("picture") as action, _bulk_pictures(manifest, None, flt, None, deleted=True) as count:
        _record(manifest, action, "temp.bulk_pictures", "picture_deleted", "deleted", 0)
        manifest.conn.execute("UPDATE pictures SET deleted = 0, updated_at = ? WHERE id IN "
                              "(SELECT id FROM temp.bulk_pictures)", (now(),))
        _refresh(manifest, "temp.bulk_pictures")
    return count


@contextlib.contextmanager
def _bulk_pictures(manifest: Manifest, threshold: float | None, flt: PictureFilter, rule: str | None, extra: str = "",
                   *, deleted: bool = False):
    """The view's pictures (not deleted, or only the deleted ones; and `extra`) as temp.bulk_pictures while the
    block runs, taken once; yields how many. Use inside a recording."""
    try:
        yield bulk_pictures_table(manifest, "bulk_pictures", threshold, flt, rule, extra, deleted=deleted)
    finally:
        manifest.conn.execute("DROP TABLE IF EXISTS temp.bulk_pictures")


def bulk_pictures_table(manifest: Manifest, name: str, threshold: float | None, flt: PictureFilter, rule: str | None,
                        extra: str = "", *, deleted: bool = False) -> int:
    """The view's pictures (not deleted, or only the deleted ones; and `extra`) taken once as the temporary
    table `name` (id, doc_id, page, keep, caption, deleted, in the order of its rowid); how many there are."""
    where, params = picture_views.bound(manifest, threshold, flt, rule)
    conn = manifest.conn
    conn.execute(f"DROP TABLE IF EXISTS temp.{name}")
    conn.execute(f"CREATE TEMP TABLE {name} AS SELECT x.id, x.doc_id, x.page, x.keep, x.caption, x.deleted "
                 f"{from_sql(where)} WHERE {where} AND {'' if deleted else 'NOT'} x.deleted {extra}", params)
    return conn.execute(f"SELECT COUNT(*) FROM temp.{name}").fetchone()[0]


def _record(manifest: Manifest, action: int, keys: str, field: str, column: str, new) -> None:
    """The action's changes, one per picture whose value differs, in one statement (as history.record)."""
    manifest.conn.execute(
        f"INSERT INTO history_changes (action_id, field, doc_id, page, name, old, new) "
        f"SELECT ?, ?, doc_id, page, CAST(id AS TEXT), {column}, ? FROM {keys} WHERE {column} IS NOT ?",
        (action, field, new, new))


def _refresh(manifest: Manifest, keys: str) -> None:
    pages = manifest.conn.execute(f"SELECT DISTINCT doc_id, page FROM {keys}").fetchall()
    manifest._refresh_pages([tuple(row) for row in pages])
