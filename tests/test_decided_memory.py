"""The pages a curator decided are read into arrays a part at a time: after a bulk action on a large view the
dashboard holds their figures, not a Python tuple per page on the way (about 300 MB for half a million)."""

import tracemalloc

from apptest_support import filled_db
from curation import Manifest, views
from curation.manifest import aggregates, tallies


def test_reading_many_decided_pages_never_holds_a_tuple_per_page(tmp_path, monkeypatch):
    db = filled_db(tmp_path / "m.sqlite", documents=4, pages=10_000)
    with Manifest(db) as manifest:
        views.bulk_override(manifest, None, views.PageFilter(), False)  # 40,000 decided pages
        monkeypatch.setattr(tallies, "READ_ROWS", 2_000)
        tracemalloc.start()
        pages = tallies.decided(manifest)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert len(pages["page"]) == 40_000 and set(pages["override"]) == {0}
    arrays = sum(values.nbytes for values in pages.values())  # what the dashboard keeps
    # Kept arrays and one copy on the way (about 3 times); a tuple per page on the way took over 4 times.
    assert peak < 3.5 * arrays, (peak, arrays)


def test_a_bulk_action_leaves_the_counts_a_row_per_bin_not_per_decided_page(tmp_path):
    db = filled_db(tmp_path / "m.sqlite", documents=4, pages=10_000)
    with Manifest(db) as manifest:
        views.bulk_override(manifest, None, views.PageFilter(decision="kept"), True)
        views.bulk_override(manifest, None, views.PageFilter(decision="rejected"), False)
        bins = aggregates.bins(manifest)
        for threshold in (20.0, 35.5, 60.0):  # Threshold's drafts: each kept in memory
            tally = tallies.tally(manifest, views.decision_params(manifest, threshold))
            # 40,000 decided pages weighed in the bins they fall in: at most one row per bin and decision.
            assert len(tally.weight) <= 2 * len(bins.pages) < 10_000
            counts = manifest.conn.execute("SELECT COUNT(*), SUM(keep) FROM overrides").fetchone()
            assert tally.counts()["pages"] == 40_000 and tally.counts()["included"] == counts[1]
            assert tally.counts()["kept"] == counts[1]  # an override decides whatever the cutoff
