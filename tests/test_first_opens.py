"""A curator's first open of a page does not pay for the server's start: what the pages import is imported by
the server in the background once it is up (pages/components/warm_up.py). The rest of what first opens need is
tested where it is made: Export's kept selection (test_export_page.py), the Pictures view's cards cut a few a run
(test_picture_cards.py); bench/bench_first_opens.py times them in a browser."""

import subprocess
import sys

from conftest import ROOT
from curation import Manifest
from curation.export.selection import selection_stamp
from curation.views.cutoff_counts import COUNT_JOB
from pages.components import warm_up


def test_the_pages_imports_are_warmed_but_not_the_pages_or_components():
    names = warm_up.page_imports()
    # Threshold's charts, the export's preview, the counts at every cutoff, the Pictures view's model
    assert {"altair", "pandas", "curation.export", "curation.views.cutoff_counts",
            "curation.decisions.picture_model"} <= set(names)
    assert not [name for name in names if name.startswith(("pages", "streamlit_"))]


def test_warming_imports_them_outside_a_script_run_without_a_streamlit_call():
    script = ("import sys; from pages.components import warm_up; warm_up.warm(); "
              "print(all(m in sys.modules for m in ('altair', 'curation.export.preview', 'curation.views.threshold', "
              "'streamlit.emojis')))")  # the emoji catalog: Threshold's σ label compiled it on the first open
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-1] == "True"
    assert "ScriptRunContext" not in done.stderr and "Traceback" not in done.stderr



def test_exports_selection_is_listed_again_for_a_scoring_not_for_the_counting_job(tmp_path):
    """Export keeps its selection under selection_stamp: the picture job's or an ingest's progress (kinds,
    pictures) moves it; the Threshold page's counting job, which writes nothing Export reads, does not."""
    with Manifest(tmp_path / "manifest.sqlite") as manifest:
        counting = manifest.start_job(COUNT_JOB)
        before = selection_stamp(manifest)
        manifest.update_job(counting, done=3, total=6)
        manifest.finish_job(counting, "done")
        assert selection_stamp(manifest) == before
        embedding = manifest.start_job("embed")
        started = selection_stamp(manifest)
        manifest.update_job(embedding, done=32, total=100)
        assert selection_stamp(manifest) != started
