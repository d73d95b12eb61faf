"""A screen deep in the σ order of every page is read by key, from the σ bin that holds it, not by walking an
OFFSET past every page before it; it is exactly the screen the OFFSET reads, pages on a bin's edge, ties of σ
and pages without σ included."""

import re

import numpy as np
import pytest

from curation import Manifest, views
from curation.runs.sample import fill_manifest
from curation.scoring.result import PageResult
from curation.views import review

PAGES = 1500


@pytest.fixture
def manifest(tmp_path):
    rng = np.random.default_rng(4)
    sigmas = rng.normal(40, 15, 3 * PAGES).clip(0, 120).round(2)
    sigmas[::5] = rng.integers(0, 1200, len(sigmas[::5])) / 10  # on a bin's edge: 0.3, 4.5, 30.0, ...
    sigmas[1::9] = 45.0  # many ties
    with Manifest(tmp_path / "m.sqlite") as m:
        fill_manifest(m, 3, PAGES, sigmas=sigmas.tolist())
        m.save_pages(1, [PageResult(page=n, status="failed", error="broken") for n in range(7)])  # no σ
        yield m


def keys(rows):
    return [(row["doc_id"], row["page"]) for row in rows]


@pytest.mark.parametrize("sort", ["sigma", "sigma_desc"])
def test_a_deep_screen_by_key_is_the_screen_offset_reads(manifest, sort, monkeypatch):
    total = views.page_count(manifest)
    offsets = [*range(review.KEYED_MIN, total - 40, 97), total - 47, total - 40, total - 30]
    by_key = {offset: keys(views.page_rows(manifest, None, sort=sort, offset=offset)) for offset in offsets}
    monkeypatch.setattr(review, "KEYED_MIN", 10 ** 9)  # every screen by OFFSET
    for offset in offsets:
        assert by_key[offset] == keys(views.page_rows(manifest, None, sort=sort, offset=offset)), offset


def test_a_deep_screen_walks_one_bin_not_every_page_before_it(manifest):
    statements = []
    manifest.conn.set_trace_callback(statements.append)
    rows = views.page_rows(manifest, None, sort="sigma", offset=3 * PAGES // 2)
    manifest.conn.set_trace_callback(None)
    assert len(rows) == 40
    offsets = [int(n) for sql in statements for n in re.findall(r"OFFSET (\d+)", sql)]
    assert offsets and max(offsets) < 200  # the pages of a σ bin or two, not 2,250
