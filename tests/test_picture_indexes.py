"""The Pictures view reads a screen through an index, not a walk over every picture: by size as the curator
left it, either way, and the few pictures a curator captioned or the scorer no longer finds."""

import pytest

from curation import Manifest
from curation.manifest.rules import PICTURE_AREA_SQL


@pytest.fixture
def manifest(tmp_path):
    with Manifest(tmp_path / "m.sqlite") as m:
        yield m


def plan(manifest, where: str, order: str) -> str:
    """EXPLAIN QUERY PLAN of one screen of picture_rows, as one text."""
    seen = []
    conn = manifest.conn

    class Planning:  # picture_rows' SQL, planned instead of run
        def execute(self, sql, params=()):
            if "FROM pictures x" not in sql:  # the settings the decision binds
                return conn.execute(sql, params)
            seen.extend(row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql, params))
            return iter(())

    manifest.conn = Planning()
    try:
        manifest.picture_rows(where=where, order=order, limit=48, deleted=False)
    finally:
        manifest.conn = conn
    return "\n".join(seen)


@pytest.mark.parametrize("direction", ["DESC", ""])
def test_a_screen_by_size_walks_the_size_index(manifest, direction):
    steps = plan(manifest, "", f"{PICTURE_AREA_SQL} {direction}, x.id {direction}")
    assert "pictures_box_area" in steps and "TEMP B-TREE" not in steps


@pytest.mark.parametrize("where, index", [("x.caption IS NOT NULL", "pictures_captioned"),
                                          ("x.rank IS NULL", "pictures_lost")])
def test_a_rare_filter_reads_only_its_pictures(manifest, where, index):
    steps = plan(manifest, where, "x.doc_id, x.page, x.number")
    assert index in steps and "TEMP B-TREE" not in steps
