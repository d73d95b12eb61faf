"""Review page: a paged grid, filters, overrides saved at once, bulk actions after a confirmation."""

import getpass
import html
import pathlib
import re

import pytest

from apptest_support import (add_features, filled_db, grid_cards, grid_event, job_finished, page, ran, shown, texts,
                             wait_for)
from curation import Manifest, views


@pytest.fixture
def db(tmp_path, monkeypatch):
    path = tmp_path / "data" / "manifest.sqlite"
    monkeypatch.setenv("CURATION_DB", str(path))
    return path


def cards(at) -> list[str]:
    """The grid's cards, in order: each named "doc_id-page", as the grid's events name them."""
    return list(grid_cards(at))


def choice(at, card: str) -> str:
    """The decision a card shows pressed: include, auto or exclude."""
    return re.search(r'data-value="(\w+)" aria-pressed="true"', grid_cards(at)[card]).group(1)


def cards_text(at) -> str:
    """What the cards show (their tooltips aside)."""
    return html.unescape(re.sub(r"<[^>]*>", " ", " ".join(grid_cards(at).values())))


def button(at, label):
    return next(b for b in at.button if b.label == label)


def open_first(at):
    """A click on the first card's Open."""
    return grid_event(at, "open", cards(at)[0])


def caption_box(at, key: tuple[int, int]) -> str:
    """What the caption box of page `key` holds."""
    card = grid_cards(at)[f"{key[0]}-{key[1]}"]
    return html.unescape(re.search(r'class="cg-caption"[^>]* value="([^"]*)"', card).group(1))


def write_caption(at, key: tuple[int, int], text: str):
    """Type `text` in the caption box of page `key` and leave it."""
    return grid_event(at, "caption", f"{key[0]}-{key[1]}", text)


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
    assert choice(at, first) == "auto"
    grid_event(at, "decide", first, "include")
    with Manifest(db) as manifest:
        (override,) = manifest.overrides()
        assert override["keep"] == 1
        lowest = views.page_rows(manifest, manifest.threshold, limit=1)[0]
        assert (override["doc_id"], override["page"]) == (lowest["doc_id"], lowest["page"])
    assert choice(at, first) == "include"
    assert f"included by {getpass.getuser()}, " in cards_text(at)
    assert "**1** overrides in the manifest" in texts(at)
    grid_event(at, "decide", first, "auto")
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
    open_first(at)
    assert "no longer at" in at.error[0].value


def test_opening_a_page_draws_it_from_the_pdf(db, archive):
    from curation import ingest

    with Manifest(db) as manifest:
        ingest(manifest, [archive / "issue-0.pdf"], workers=1)
    at = ran(page("pages/review.py"))
    open_first(at)
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


# -- the learned model, near-duplicates and captions ---------------------------------------------------------


def pages_of(db) -> list[tuple[int, int]]:
    with Manifest(db) as manifest:
        return [(row["doc_id"], row["page"]) for row in manifest.pages(order="p.doc_id, p.page")]


def test_learn_says_why_not_yet_then_learns(db):
    filled_db(db, documents=2, pages=30)
    truth = add_features(db)
    keys = pages_of(db)
    with Manifest(db) as manifest:
        for key in keys[:4]:
            manifest.set_override(*key, True)
    at = ran(page("pages/review.py"))
    assert "none yet" in texts(at)
    button(at, "Learn from my overrides").click()
    ran(at)
    assert "needs at least 10" in at.warning[0].value and "you have made 4" in at.warning[0].value
    with Manifest(db) as manifest:
        for key in keys[4:12]:
            manifest.set_override(*key, True)
    button(at, "Learn from my overrides").click()
    ran(at)
    assert "nearly all one decision" in at.warning[0].value and "Exclude 2 more" in at.warning[0].value
    with Manifest(db) as manifest:
        for key in keys[:20]:
            manifest.set_override(*key, truth[key])
        labels = len(manifest.overrides())
    button(at, "Learn from my overrides").click()
    ran(at)  # returns at once: the model learns in a job of its own, its progress on the page
    assert any("Learning…" in bar.proto.text for bar in at.get("progress"))
    wait_for(job_finished(db, "learn"), timeout=120)
    ran(at)
    assert f"Learned from {labels} overrides" in at.success[0].value
    with Manifest(db) as manifest:
        assert manifest.conn.execute("SELECT COUNT(*) FROM suggestions").fetchone()[0] == 60
    assert "model: keep" in cards_text(at) or "model: reject" in cards_text(at)  # on the tiles
    assert f"from {labels} overrides" in texts(at)


def test_model_disagrees_filter_lists_the_pages_to_review_first(db):
    filled_db(db, documents=2, pages=30)
    add_features(db)
    keys = pages_of(db)
    with Manifest(db) as manifest:
        rows = {(r["doc_id"], r["page"]): r["keep"] for r in manifest.pages()}
        # The model agrees with the rule except on five pages, one of which the curator already decided.
        flipped = set(keys[3:8])
        manifest.replace_suggestions([(*key, bool(rows[key]) != (key in flipped), 0.8) for key in keys])
        manifest.set_override(*keys[3], True)
        manifest.set_setting("suggestions_from_overrides", 1)
    at = ran(page("pages/review.py"))
    assert "disagrees with the picture rule on **4** page(s)" in texts(at)
    at.segmented_control(key="decision").set_value("disagrees")
    ran(at)
    assert "**4** pages in this view" in texts(at)
    assert len(cards(at)) == 4
    assert " ".join(grid_cards(at).values()).count('cg-orange">model:') == 4  # each differs from the decision


def test_let_the_model_decide_and_step_back(db):
    filled_db(db, documents=1, pages=20)
    add_features(db)
    keys = pages_of(db)
    with Manifest(db) as manifest:
        manifest.replace_suggestions([(*key, True, 0.9) for key in keys])  # a model that keeps everything
        manifest.set_setting("suggestions_from_overrides", 10)
    at = ran(page("pages/review.py"))
    button(at, "Let the model decide").click()
    ran(at)
    assert "go from" in texts(at) and "to **20**" in texts(at)
    with Manifest(db) as manifest:
        assert manifest.rule == "picture"  # nothing before the confirmation
    next(b for b in at.button if b.key == "use-model-confirm").click()
    ran(at)
    with Manifest(db) as manifest:
        assert manifest.rule == "model" and manifest.summary()["kept"] == 20
    assert "Its suggestions are the decisions" in texts(at)
    button(at, "Stop using the model").click()
    ran(at)
    with Manifest(db) as manifest:
        assert manifest.rule == "picture"


def test_near_duplicates_are_listed_group_by_group(db):
    filled_db(db, documents=2, pages=10)
    keys = pages_of(db)
    with Manifest(db) as manifest:
        manifest.replace_duplicates([[keys[15], keys[2]], [keys[7], keys[11], keys[19]]])
    at = ran(page("pages/review.py"))
    at.segmented_control(key="decision").set_value("duplicates")
    ran(at)
    assert "**5** pages in this view" in texts(at)
    assert re.findall(r"\bgroup (\d+)\b", cards_text(at)) == ["1", "1", "2", "2", "2"]


def test_no_near_duplicates_is_a_message(db):
    filled_db(db, documents=1, pages=5)
    at = ran(page("pages/review.py"))
    at.segmented_control(key="decision").set_value("duplicates")
    ran(at)
    assert "No near-duplicates here" in at.info[0].value


def test_a_caption_is_saved_at_once_and_shown_again(db):
    filled_db(db, documents=1, pages=10)
    at = ran(page("pages/review.py"))
    first = views_first(db)
    write_caption(at, first, "  a lady in a walking dress ")
    with Manifest(db) as manifest:
        assert manifest.caption(*first) == "a lady in a walking dress"
    again = ran(page("pages/review.py"))  # a new session: the caption comes from the manifest
    assert caption_box(again, first) == "a lady in a walking dress"
    write_caption(again, first, "")
    with Manifest(db) as manifest:
        assert manifest.caption(*first) is None


def views_first(db) -> tuple[int, int]:
    with Manifest(db) as manifest:
        row = views.page_rows(manifest, manifest.threshold, limit=1)[0]
        return row["doc_id"], row["page"]


def test_a_bulk_caption_keeps_a_typed_caption_unless_told_and_every_box_shows_the_new_text(db):
    filled_db(db, documents=2, pages=30)
    with Manifest(db) as manifest:
        kept = views.filter_counts(manifest, 45, views.PageFilter("kept"))["pages"]
        first_kept = views.page_rows(manifest, 45, views.PageFilter("kept"), limit=1)[0]
        typed = (first_kept["doc_id"], first_kept["page"])
    at = ran(page("pages/review.py"))
    at.segmented_control(key="decision").set_value("kept")
    ran(at)
    write_caption(at, typed, "her own caption")  # typed on the card
    button(at, "Caption all").click()
    ran(at)
    at.text_area(key="bulk-caption-text").input("fashion plate, engraving")
    ran(at)
    overwrite = at.checkbox(key="bulk-caption-overwrite")
    assert overwrite.value is False and "overwrite the 1 captions" in overwrite.label  # asks; keeps by default
    assert f"Write this caption on {kept - 1:,} of the {kept:,} pages" in texts(at)
    assert "1 page with a caption keeps it" in texts(at)
    with Manifest(db) as manifest:
        assert len(manifest.captions()) == 1  # nothing before the confirmation
    button(at, f"Caption {kept - 1:,} pages").click()
    ran(at)
    with Manifest(db) as manifest:
        captions = manifest.captions()
    assert captions[typed] == "her own caption" and len(captions) == kept
    shown = [caption_box(at, tuple(map(int, card.split("-")))) for card in cards(at)]
    assert shown.count("fashion plate, engraving") == len(shown) - 1  # every box, no reload
    assert caption_box(at, typed) == "her own caption"


def test_a_bulk_caption_overwrites_only_when_ticked_and_says_how_many(db):
    filled_db(db, documents=1, pages=10)
    keys = pages_of(db)
    with Manifest(db) as manifest:
        manifest.set_caption(*keys[0], "typed")
    at = ran(page("pages/review.py"))
    button(at, "Caption all").click()
    ran(at)
    at.text_area(key="bulk-caption-text").input("a plate")
    at.checkbox(key="bulk-caption-overwrite").check()
    ran(at)
    assert "Write this caption on 10 of the 10 pages" in texts(at) and "It overwrites 1 caption" in texts(at)
    button(at, "Caption 10 pages").click()
    ran(at)
    with Manifest(db) as manifest:
        assert set(manifest.captions().values()) == {"a plate"}
    assert {caption_box(at, key) for key in keys} == {"a plate"}


def test_bulk_caption_removal_is_its_own_button(db):
    filled_db(db, documents=1, pages=10)
    keys = pages_of(db)
    with Manifest(db) as manifest:
        for key in keys[:3]:
            manifest.set_caption(*key, "old")
    at = ran(page("pages/review.py"))
    button(at, "Caption all").click()
    ran(at)
    assert next(b for b in at.button if b.key == "bulk-caption-confirm").disabled  # nothing typed: nothing to set
    button(at, "Remove 3 captions").click()
    ran(at)
    with Manifest(db) as manifest:
        assert manifest.captions() == {}


def test_near_the_cutoff_follows_the_rule(db):
    filled_db(db, documents=2, pages=30)
    add_features(db)
    with Manifest(db) as manifest:
        near_picture = views.filter_counts(manifest, 45, views.PageFilter("near", near=2.0,
                                                                          near_on="picture_area"))["pages"]
        near_sigma = views.filter_counts(manifest, 45, views.PageFilter("near", near=5.0))["pages"]
    assert near_picture != near_sigma
    at = ran(page("pages/review.py"))
    at.segmented_control(key="decision").set_value("near")
    ran(at)
    assert at.number_input(key="near_share").value == 2.0  # from half to twice the picture cutoff
    assert f"**{near_picture:,}** pages in this view" in texts(at)
    with Manifest(db) as manifest:
        manifest.rule = "sigma"
    ran(at)
    assert at.number_input(key="near").value == 5.0
    assert f"**{near_sigma:,}** pages in this view" in texts(at)


# -- who did what, and undo ---------------------------------------------------------------------


def test_a_card_says_who_changed_the_page_last_literally(db):
    filled_db(db, documents=1, pages=10)
    first = views_first(db)
    with Manifest(db, user="**ana**](https://example.com/x.png)") as manifest:
        manifest.set_override(*first, False)
    with Manifest(db, user="bea") as manifest:
        manifest.set_caption(first[0], first[1] + 1, "a plate")
    at = ran(page("pages/review.py"))
    words = cards_text(at)  # shown as written, never a link
    assert "excluded by **ana**](https://example.com/x.png), " in words
    assert "<a " not in " ".join(grid_cards(at).values())
    assert "captioned by bea, " in words
    assert not any(key.startswith("undo-") for key in (b.key or "" for b in at.button))  # not this user's changes


def test_undo_takes_back_the_last_bulk_action_in_one_step(db):
    filled_db(db, documents=1, pages=10)
    first = views_first(db)
    with Manifest(db) as manifest:
        manifest.set_override(*first, True)
        before = [tuple(row)[:3] for row in manifest.overrides()]
    at = ran(page("pages/review.py"))
    button(at, "Exclude all").click()
    ran(at)
    button(at, "Exclude 10 pages").click()
    ran(at)
    with Manifest(db) as manifest:
        assert {row["keep"] for row in manifest.overrides()} == {0} and len(manifest.overrides()) == 10
    assert "Your last change: excluded 10 pages (view: All pages)" in [t.value for t in at.text]
    button(at, "Undo").click()
    ran(at)
    with Manifest(db) as manifest:
        assert [tuple(row)[:3] for row in manifest.overrides()] == before  # the include back, no other override
    assert "Your last change: included p. " in " ".join(t.value for t in at.text)  # the one before is next
    button(at, "Undo").click()
    ran(at)
    with Manifest(db) as manifest:
        assert manifest.overrides() == []
    assert not any(b.label == "Undo" for b in at.button)


def test_undo_of_a_caption_brings_its_text_back_into_the_box(db):
    filled_db(db, documents=1, pages=10)
    first = views_first(db)
    with Manifest(db) as manifest:
        manifest.set_caption(*first, "a lady in a walking dress")
    at = ran(page("pages/review.py"))
    write_caption(at, first, "a gentleman")
    assert caption_box(at, first) == "a gentleman"
    button(at, "Undo").click()
    ran(at)
    assert caption_box(at, first) == "a lady in a walking dress"


# -- feedback on every override ------------------------------------------------------------------


def test_a_bulk_confirmation_says_which_overrides_it_replaces(db):
    filled_db(db, documents=1, pages=5)
    keys = pages_of(db)
    with Manifest(db) as manifest:
        for key in keys[:4]:
            manifest.set_override(*key, True)
    at = ran(page("pages/review.py"))
    button(at, "Exclude all").click()
    ran(at)
    assert "**Exclude all 5 pages** in this view?" in texts(at)
    assert "This replaces 4 Include overrides; 1 page without an override gets one." in texts(at)
    button(at, "Cancel").click()
    ran(at)
    button(at, "Clear all overrides").click()
    ran(at)
    assert "This removes 4 overrides (4 Include, 0 Exclude)" in texts(at)


def test_an_override_that_takes_a_page_out_of_the_view_says_so_with_undo(db):
    filled_db(db, documents=1, pages=10)
    at = ran(page("pages/review.py"))
    at.segmented_control(key="decision").set_value("kept")
    ran(at)
    before = len(cards(at))
    card = cards(at)[0]
    page_no = int(card.split("-")[1]) + 1
    grid_event(at, "decide", card, "exclude")
    assert len(cards(at)) == before - 1  # it left the Kept view...
    with Manifest(db) as manifest:  # ...and says so, naming the document
        name = pathlib.Path(manifest.conn.execute("SELECT path FROM documents").fetchone()[0]).name
    assert [shown(t.value) for t in at.toast] == [f"Excluded page {page_no} of {name} · Undo is above the pages"]
    assert any(b.label == "Undo" for b in at.button)
    button(at, "Undo").click()
    ran(at)
    assert len(cards(at)) == before


def test_a_bulk_action_on_a_large_view_runs_as_a_job_shown_above_the_grid_and_undone_in_one_step(db, monkeypatch):
    from curation.views import bulk
    monkeypatch.setattr(bulk, "JOB_MIN", 20)  # "large" kept small for the test
    filled_db(db, documents=2, pages=30)
    at = ran(page("pages/review.py"))
    button(at, "Exclude all").click()
    ran(at)
    button(at, "Exclude 60 pages").click()
    ran(at)  # returns at once: the job's process does the writing
    assert "Started: 60 pages are written a part at a time" in " ".join(str(t.value) for t in at.toast)
    job = wait_for(job_finished(db, bulk.JOB))
    assert job["status"] == "done" and job["done"] == job["total"] == 60
    with Manifest(db) as manifest:
        assert {row["keep"] for row in manifest.overrides()} == {0} and len(manifest.overrides()) == 60
    ran(at)  # the panel sees the job ended and the page runs again with its outcome
    assert "Bulk action finished: excluding 60 pages: done" in texts(at)
    assert "Your last change: excluded 60 pages (view: All pages)" in [t.value for t in at.text]
    button(at, "Undo").click()
    ran(at)
    with Manifest(db) as manifest:
        assert manifest.overrides() == []


def test_a_running_bulk_job_shows_its_progress_in_the_sidebar_and_above_the_grid_with_stop(db):
    from curation.views import bulk
    filled_db(db, documents=1, pages=10)
    with Manifest(db) as manifest:
        job_id = manifest.start_job(bulk.JOB, {})  # this process stands for the job's
        manifest.update_job(job_id, done=20_000, total=135_398, message="excluding 135,398 pages")
    assert ":material/sync: Bulk action running: 20,000/135,398 written" in texts(ran(page("dashboard.py")))
    at = ran(page("pages/review.py"))
    assert any("Bulk action: excluding" in str(p.proto) and "20,000 of 135,398 written" in str(p.proto)
               for p in at.get("progress"))
    button(at, "Stop").click()
    ran(at)
    with Manifest(db) as manifest:
        assert manifest.stop_requested(job_id)
    assert "Stopping after the part in hand" in texts(at)
