"""Home page: what the manifest holds, what to do next, and the sample archive."""

import pytest

from apptest_support import filled_db, job_finished, page, ran, texts, wait_for
from curation import Manifest, views
from curation.runs import sample


@pytest.fixture
def db(tmp_path, monkeypatch):
    path = tmp_path / "data" / "manifest.sqlite"
    monkeypatch.setenv("CURATION_DB", str(path))
    return path


def test_a_new_user_is_offered_the_sample_archive(db):
    at = ran(page("pages/home.py"))
    assert "Start here" in texts(at)
    assert any(button.label == "Try a sample archive" for button in at.button)
    assert not db.exists()  # looking creates nothing


def test_summary_and_next_steps(db):
    filled_db(db, documents=2, pages=30)
    with Manifest(db) as manifest:
        expected = manifest.summary()
    at = ran(page("pages/home.py"))
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Documents"] == "2"
    assert metrics["Pages scored"] == "60"
    assert metrics["Kept"] == f"{expected['kept']:,}"
    assert metrics["Rejected"] == f"{expected['rejected']:,}"
    shown = texts(at) + " ".join(str(e.proto) for e in at.main)
    assert "Choose the decision rule" in shown and "picture rule: a picture ≥ 2 sq in" in shown
    assert "σ only, the original method" in shown
    assert "no longer where they were ingested" in texts(at)  # fill_manifest's paths do not exist


def test_home_speaks_of_the_pictures_the_export_writes(db, archive):
    from curation import ingest
    from curation.views import cutoff_counts

    with Manifest(db, create=True) as manifest:
        ingest(manifest, [archive], workers=1)
        pictures = cutoff_counts.picture_figures(manifest, None)["kept"]
        kept = manifest.summary()["kept"]
    assert pictures > 0
    at = ran(page("pages/home.py"))
    [metric] = [m for m in at.metric if m.label == "Kept"]
    assert metric.proto.delta == f"{pictures:,} pictures"
    shown = texts(at)
    assert f"{pictures:,} pictures are kept now, on {kept:,} kept pages" in shown
    assert "writes each picture as its own image" in shown and "pages are kept now" not in shown


@pytest.mark.parametrize("script", ["dashboard.py", "pages/home.py", "pages/ingest.py", "pages/threshold.py",
                                    "pages/review.py"])
def test_an_unreadable_manifest_is_a_message_on_every_page(db, script):
    db.parent.mkdir(parents=True)
    db.write_bytes(b"this is not SQLite" * 100)
    at = ran(page(script))
    assert any("manifest" in e.value for e in at.error)


def test_the_sample_button_writes_and_ingests_in_its_own_process(db, monkeypatch):
    launch = sample.launch
    monkeypatch.setattr(sample, "launch", lambda path: launch(path, "--documents", "1", "--pages", "3",
                                                               "--dpi", "30", "--workers", "1"))
    at = ran(page("pages/home.py"))
    next(button for button in at.button if button.label == "Try a sample archive").click()
    ran(at)
    wait_for(job_finished(db, "ingest"))
    at = ran(page("pages/home.py"))
    assert {m.label: m.value for m in at.metric}["Pages scored"] == "3"
    assert sorted(p.name for p in sample.sample_folder(db).iterdir()) == ["sample-issue-01.pdf"]


def test_the_entry_point_shows_the_open_manifest(db):
    filled_db(db, documents=1, pages=5)
    at = ran(page("dashboard.py"))
    sidebar = " ".join(str(e.value) for e in at.sidebar.caption)
    assert f"`{db}`" in sidebar and "5 pages" in sidebar
    assert not at.sidebar.code  # inline: st.code's highlighter would be a quarter of the browser's first page


def test_the_sidebar_shows_the_rule_and_a_running_export(db):
    filled_db(db, documents=1, pages=5)
    with Manifest(db) as manifest:
        manifest.rule = "sigma"
        job_id = manifest.start_job("export", {})  # this process stands in for the export
        manifest.update_job(job_id, done=2, total=5)
    at = ran(page("dashboard.py"))
    sidebar = " ".join(str(e.value) for e in at.sidebar.caption)
    assert "σ only: σ > 45" in sidebar
    assert "Export running: 2/5 images" in sidebar



def test_the_sidebar_shows_the_pictures_being_decided_after_a_rule_switch(db):
    filled_db(db, documents=1, pages=5)
    with Manifest(db) as manifest:
        job_id = manifest.start_job("decide", {})  # this process stands in for `python -m curation decide`
        manifest.update_job(job_id, done=40_000, total=250_000)
    at = ran(page("dashboard.py"))
    assert "Deciding the pictures under the new rule running: 40,000/250,000 pictures" in " ".join(
        str(e.value) for e in at.sidebar.caption)

def test_the_latest_changes_say_who_did_what(db):
    filled_db(db, documents=1, pages=10)
    at = ran(page("pages/home.py"))
    assert "Latest changes" not in texts(at)
    with Manifest(db, user="ana") as manifest:
        views.bulk_override(manifest, None, views.PageFilter("kept"), False)
    with Manifest(db, user="[bea](https://example.com)") as manifest:
        manifest.threshold = 50
    at = ran(page("pages/home.py"))
    assert "Latest changes" in texts(at)
    table = at.dataframe[0].value
    assert list(table.columns) == ["When (UTC)", "Who", "What"]
    assert list(table["Who"]) == ["[bea](https://example.com)", "ana"]  # names as they are, in a table
    assert list(table["What"])[0] == "σ cutoff (default) → 50"
    assert list(table["What"])[1].startswith("excluded ") and list(table["What"])[1].endswith(" pages (view: Kept)")


def test_overrides_count_the_pictures_a_curator_decided_and_the_rule_is_told_as_it_is(db):
    filled_db(db, documents=1, pages=6)
    with Manifest(db) as manifest:
        for page_number in range(3):  # two pictures a page: 6 in all, 5 of them decided by a curator
            manifest.set_pictures(1, page_number, [(100, 100, 700, 700, 9.0), (800, 900, 1000, 1100, 1.2)])
        ids = [row[0] for row in manifest.conn.execute("SELECT id FROM pictures ORDER BY id")][:5]
        manifest.set_picture_overrides([(pid, pid % 2 == 0) for pid in ids])
    at = ran(page("pages/home.py"))
    overrides = next(m for m in at.metric if m.label == "Overrides")
    assert overrides.value == "5"
    assert "0 pages, 5 pictures" in str(overrides.proto)


def test_the_welcome_says_what_the_picture_rule_measures(db):
    at = ran(page("pages/home.py"))
    words = texts(at)
    assert "hatching" not in words and "share" not in words
    assert "largest picture covers at least the cutoff" in words
