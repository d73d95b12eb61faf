"""Scoring stays flat in memory: nothing per page is kept by the worker (a leak here grows with the archive)."""

import psutil

from curation.runs.ingest_task import Task, run_task
from curation.sources.synthetic import PageSpec, write_pdf


def test_scoring_many_pages_does_not_grow_the_process(tmp_path):
    # Letter pages: each reference-size image is 1224x1584, so a leak of one per page shows at once.
    path = write_pdf(tmp_path / "a.pdf", [PageSpec(kind=k, seed=i, dpi=150) for i, k in enumerate(["text", "engraving", "mixed"])])
    process = psutil.Process()
    run_task(Task(1, str(path), (0, 1, 2)))
    before = process.memory_info().rss
    for _ in range(20):
        results = run_task(Task(1, str(path), (0, 1, 2)))
        assert [r.method for r in results] == ["jpeg"] * 3
    growth = process.memory_info().rss - before
    assert growth < 25 * 2**20, f"RSS grew by {growth / 2**20:.0f} MB over 60 pages"
