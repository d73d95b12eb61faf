"""Review page: a paged grid, filters, overrides saved at once, bulk actions after a confirmation."""

import pytest

from apptest_support import filled_db, page, ran, texts
from curation import Manifest, views


@pytest.fixture
def db(tmp_path, monkeypatch):
    path = tmp_path / "data" / "manifest.sqlite"
    monkeypatch.setenv("CURATION_DB", str(path))
    return path


def cards(at):
    return [control for control in at.segmented_control if control.label == "Decision"]


def button(at, label):
    return next(b for b in at.button if b.label == label)


def test_a_screen_holds_forty_pages_and_pages_on(db):
    filled_db(db, documents=2, pages=30)
    at = ran(page("pages/review.py"))
    assert len(cards(at)) == 40
    assert "**60** pages in this view" in texts(at)
    at.pagination[0].set_value(2)
    ran(at)
    assert len(cards(at)) == 20


def test_an_override_is_saved_at_once_and_shown(db):
    filled_db(db, documents=1, pages=10)
    at = ran(page("pages/review.py"))
    first = cards(at)[0]
    assert first.value == "auto"
    first.set_value("include")
    ran(at)
    with Manifest(db) as manifest:
        (override,) = manifest.overrides()
        assert override["keep"] == 1
        lowest = views.page_rows(manifest, manifest.threshold, limit=1)[0]
        assert (override["doc_id"], override["page"]) == (lowest["doc_id"], lowest["page"])
    assert cards(at)[0].value == "include"
    assert "included by you" in texts(at)
    assert "**1** overrides in the manifest" in texts(at)
    cards(at)[0].set_value("auto")
    ran(at)
    with Manifest(db) as manifest:
        assert manifest.overrides() == []


def test_filters_narrow_the_view(db):
    filled_db(db, documents=2, pages=30)
    with Manifest(db) as manifest:
        kept = views.filter_counts(manifest, 45, views.PageFilter("kept"))["pages"]
        first_doc = views.documents_for_filter(manifest)[0]["id"]
    at = ran(page("pages/review.py"))
    at.segmented_control(key="decision").set_value("kept")
    ran(at)
    assert f"**{kept:,}** pages in this view" in texts(at)
    at.segmented_control(key="decision").set_value("near")
    at.selectbox(key="doc").set_value(first_doc)
    at.selectbox(key="sort").set_value("sigma_desc")
    ran(at)
    assert at.number_input(key="near").value == 5.0


def test_bulk_action_asks_first_and_states_the_count(db):
    filled_db(db, documents=2, pages=30)
    with Manifest(db) as manifest:
        kept = views.filter_counts(manifest, 45, views.PageFilter("kept"))["pages"]
    at = ran(page("pages/review.py"))
    at.segmented_control(key="decision").set_value("kept")
    ran(at)
    button(at, "Exclude all").click()
    ran(at)
    with Manifest(db) as manifest:
        assert manifest.overrides() == []  # nothing happens before the confirmation
    button(at, f"Exclude {kept:,} pages").click()
    ran(at)
    with Manifest(db) as manifest:
        assert len(manifest.overrides()) == kept
        assert views.filter_counts(manifest, 45)["kept"] == 0


def test_opening_a_page_whose_pdf_is_gone_is_a_message(db):
    filled_db(db, documents=1, pages=3)  # fill_manifest's documents have no file
    at = ran(page("pages/review.py"))
    button(at, "Open").click()
    ran(at)
    assert "no longer at" in at.error[0].value


def test_opening_a_page_draws_it_from_the_pdf(db, archive):
    from curation import ingest

    with Manifest(db) as manifest:
        ingest(manifest, [archive / "issue-0.pdf"], workers=1)
    at = ran(page("pages/review.py"))
    button(at, "Open").click()
    ran(at)
    assert not at.error
    assert any("Drawn from" in c.value for c in at.caption)


def test_without_pages_the_page_says_so(db):
    Manifest(db).close()
    assert "No page is scored yet" in ran(page("pages/review.py")).info[0].value


def test_an_unreadable_manifest_is_a_message(db):
    db.parent.mkdir(parents=True)
    db.write_text("garbage " * 200)
    at = ran(page("pages/review.py"))
    assert "cannot be used" in at.error[0].value
