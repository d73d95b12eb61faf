"""Review's Pictures view: a grid of the crops; include or exclude a picture and its page follows; open a
picture to delete it, fix its box or add a missed one; a viewer changes nothing; text is shown literally."""

import pytest

import html
import re

from apptest_support import filled_db, grid_cards, grid_event, page, ran, shown, signed_in_as, texts
from curation import Manifest
from curation.views import picture_views as pv
from test_auth import SECRETS, VIEWER

ENGRAVING = (100, 100, 700, 800, 20.3)  # reference pixels of a 1224 x 1584 page, square inches
STOCK_CUT = (800, 1200, 900, 1300, 0.48)


@pytest.fixture
def db(tmp_path, monkeypatch):
    path = tmp_path / "data" / "manifest.sqlite"
    monkeypatch.setenv("CURATION_DB", str(path))
    return path


def with_pictures(db, pages=5) -> list[tuple[int, int]]:
    """A manifest whose every page holds an engraving the rule keeps and a stock cut it does not."""
    filled_db(db, documents=1, pages=pages)
    with Manifest(db) as manifest:
        keys = [(row["doc_id"], row["page"]) for row in manifest.pages(order="p.doc_id, p.page")]
        manifest.conn.execute("UPDATE pages SET ink_tone = 0.6, picture_area = ?", (ENGRAVING[4],))
        for key in keys:
            manifest.set_pictures(*key, [ENGRAVING, STOCK_CUT])
        manifest.conn.commit()
    return keys


def pictures_view(at=None):
    at = ran(page("pages/review.py") if at is None else at)
    at.segmented_control(key="view").set_value("pictures")
    ran(at)
    at.selectbox(key="pic_sort").set_value("page")
    return ran(at)


def cards(at) -> dict[str, str]:
    """The grid's cards, {picture id (as text): the card's HTML}."""
    return grid_cards(at)


def choice(at, picture_id) -> str:
    """The decision a card shows pressed: include, auto or exclude."""
    return re.search(r'data-value="(\w+)" aria-pressed="true"', cards(at)[str(picture_id)]).group(1)


def drawing_modes(at):
    """The large view's drawing modes (their widget's key is new each time a picture opens)."""
    return next(control for control in at.segmented_control if (control.key or "").startswith("pictures_click-"))


def caption_on_card(at, picture_id) -> str:
    return html.unescape(re.search(r'class="cg-caption"[^>]* value="([^"]*)"', cards(at)[str(picture_id)]).group(1))


def picture_ids(db, page_no=0, number=None):
    with Manifest(db) as manifest:
        return [row["id"] for row in manifest.picture_rows(order="x.page, x.number")
                if row["page"] == page_no and (number is None or row["number"] == number)]


def page_keep(db, key):
    with Manifest(db) as manifest:
        return next(r["keep"] for r in manifest.pages() if (r["doc_id"], r["page"]) == key)


def open_picture(at, picture_id):
    return grid_event(at, "open", picture_id)  # a click on the card's Open


def test_the_pictures_view_lists_a_crop_per_picture_with_its_decision(db):
    with_pictures(db, pages=5)
    at = pictures_view()
    assert len(cards(at)) == 10
    assert all('<img src=' in card for card in cards(at).values())  # a crop on every card
    assert at.segmented_control(key="pic_decision").options[:3] == ["All pictures · 10", "Kept · 5", "Excluded · 5"]
    assert "Pictures 1–10 of 10 in this view" in texts(at)
    engraving, stock = picture_ids(db)
    assert choice(at, engraving) == "auto"
    classes = grid_cards(at, "classes")  # the border's colour follows the decision
    assert classes[str(engraving)].split()[:2] == [f"st-key-picture-card-kept-{engraving}", "cg-kept"]
    assert "cg-excluded" in classes[str(stock)].split()


def test_excluding_a_picture_changes_its_pages_decision_and_says_so(db):
    keys = with_pictures(db, pages=3)
    engraving, stock = picture_ids(db)
    assert page_keep(db, keys[0]) == 1
    at = pictures_view()
    grid_event(at, "decide", engraving, "exclude")
    assert page_keep(db, keys[0]) == 0  # its only picture the rule keeps is excluded
    assert "Kept · 2" in at.segmented_control(key="pic_decision").options  # the counts follow at once
    assert any("Excluded picture 1 on p. 1" in str(t.value) and "not kept" in str(t.value) for t in at.toast)
    assert choice(at, engraving) == "exclude"
    grid_event(at, "decide", stock, "include")
    assert page_keep(db, keys[0]) == 1  # a small picture a curator includes keeps its page
    undo = next(b for b in at.button if b.label == "Undo")
    undo.click()
    ran(at)
    with Manifest(db) as manifest:
        assert manifest.picture(stock)["keep"] is None


def test_next_and_previous_screens(db):
    with_pictures(db, pages=30)
    at = pictures_view()
    assert len(cards(at)) == 48 and "Pictures 1–48 of 60 in this view" in texts(at)
    next(b for b in at.button if b.key == "pictures-next").click()
    ran(at)
    assert len(cards(at)) == 12 and "Pictures 49–60 of 60 in this view" in texts(at)
    assert next(b for b in at.button if b.key == "pictures-next").disabled
    next(b for b in at.button if b.key == "pictures-previous").click()
    ran(at)
    assert len(cards(at)) == 48


def test_the_decision_filter_and_a_bulk_exclude_that_says_what_it_replaces(db):
    with_pictures(db, pages=4)
    engraving = picture_ids(db, 0, 1)[0]
    with Manifest(db) as manifest:
        manifest.set_picture_override(engraving, True)
    at = pictures_view()
    at.segmented_control(key="pic_decision").set_value("kept")
    ran(at)
    assert len(cards(at)) == 4
    next(b for b in at.button if b.label == "Exclude all").click()
    ran(at)
    assert "This replaces 1 Include override; 3 pictures without an override get one." in texts(at)
    with Manifest(db) as manifest:
        assert manifest.picture(engraving)["keep"] == 1  # nothing before the confirmation
    next(b for b in at.button if b.label == "Exclude 4 pictures").click()
    ran(at)
    with Manifest(db) as manifest:
        assert manifest.summary()["kept"] == 0
    assert "No pictures match this view." in texts(at)


def test_delete_a_false_picture_in_the_large_view_and_bring_it_back(db):
    keys = with_pictures(db, pages=2)
    engraving, stock = picture_ids(db)
    at = open_picture(pictures_view(), engraving)
    next(b for b in at.button if b.key == "picture-delete").click()
    ran(at)
    with Manifest(db) as manifest:
        assert manifest.picture(engraving)["deleted"] == 1
    assert page_keep(db, keys[0]) == 0
    next(b for b in at.button if b.key == "picture-restore").click()
    ran(at)
    assert page_keep(db, keys[0]) == 1


def test_the_large_view_shows_its_page_its_words_and_the_click_controls(db):
    with_pictures(db, pages=2)
    engraving, stock = picture_ids(db)
    with Manifest(db) as manifest:
        manifest.set_auto_captions([(engraving, "a lady, **bold** [x](http://example.com/a.png)", "blip")])
        manifest.conn.execute("UPDATE pictures SET legend = ? WHERE id = ?", ("THE <b>NEW</b> BONNET", engraving))
        manifest.conn.commit()
    at = open_picture(pictures_view(), engraving)
    assert "picture **1** of 2" in texts(at)
    assert "Printed legend: THE <b>NEW</b> BONNET" in texts(at)
    assert "a lady, **bold** [x](http://example.com/a.png)" in texts(at)
    raw = " ".join(c.value for c in at.caption)
    assert "\\*\\*bold\\*\\* \\[x\\]" in raw and "\\<b\\>" in raw  # escaped: shown as read, never as Markdown
    modes = drawing_modes(at)
    assert set(modes.options) == {"Fix this picture's box", "Add a missed picture", "Paint out of the mask"}
    assert not modes.disabled
    assert any("numbered" in c.value for c in at.caption)  # the page is drawn with its boxes (from the thumbnail)
    next(b for b in at.button if b.key == "picture-next").click()
    ran(at)
    assert "picture **2** of 2" in texts(at)


def test_two_clicks_are_a_box_in_reference_pixels_that_fixes_or_adds_a_picture(db):
    keys = with_pictures(db, pages=1)
    engraving, stock = picture_ids(db)
    # The page (1224 reference pixels wide) shown 612 px wide: a click is worth two reference pixels.
    box = pv.box_from_clicks((300, 450), (100, 50), 612, 1224)
    assert box == [200, 100, 600, 900]
    with Manifest(db) as manifest:
        manifest.set_picture_box(stock, box)
        assert manifest.picture(stock)["keep_picture"] == 1  # now 15 square inches
        new = manifest.add_picture(*keys[0], pv.box_from_clicks((10, 10), (60, 90), 612, 1224))
        assert manifest.picture(new)["number"] == 3


def test_a_viewer_sees_no_enabled_control_and_cannot_change_a_picture(db):
    with_pictures(db, pages=2)
    engraving, stock = picture_ids(db)
    at = page("pages/review.py")
    at.secrets.update(SECRETS)
    at.user = signed_in_as(VIEWER)
    pictures_view(at)
    assert cards(at) and all(card.count(" disabled>") == 4 for card in cards(at).values())  # 3 choices, caption
    assert all(b.disabled for b in at.button if b.label in ("Include all", "Exclude all", "Caption all"))
    grid_event(at, "decide", engraving, "exclude")  # sent anyway, as a forged message would
    at = open_picture(at, engraving)
    assert drawing_modes(at).disabled
    assert next(b for b in at.button if b.key == "picture-delete").disabled
    with Manifest(db) as manifest:
        assert manifest.picture(engraving)["keep"] is None and manifest.picture(engraving)["deleted"] == 0


def test_a_typed_caption_is_saved_and_shown_literally(db):
    with_pictures(db, pages=1)
    engraving, stock = picture_ids(db)
    at = pictures_view()
    grid_event(at, "caption", engraving, "![x](http://example.com/x.png) :red[A WET DAY] <b>bold</b>")
    with Manifest(db) as manifest:
        assert manifest.picture(engraving)["caption"] == "![x](http://example.com/x.png) :red[A WET DAY] <b>bold</b>"
    toast = next(str(t.value) for t in at.toast if "Caption saved" in str(t.value))
    assert shown(toast).startswith("Caption saved for picture 1 on p. 1 of issue-000-0000.pdf")
    again = pictures_view()  # a new session: the box shows the saved caption as typed
    assert caption_on_card(again, engraving) == "![x](http://example.com/x.png) :red[A WET DAY] <b>bold</b>"
    assert "<b>bold" not in cards(again)[str(engraving)]  # the card's HTML shows it, escaped


def caption_all_after_typing_one(db, pages: int):
    """The Pictures view with the first engraving's caption typed and Caption all asked with "a fashion plate"."""
    with_pictures(db, pages=pages)
    engraving = picture_ids(db, 0, 1)[0]
    at = pictures_view()
    grid_event(at, "caption", engraving, "her own caption")
    next(b for b in at.button if b.label == "Caption all").click()
    ran(at)
    at.text_area(key="pictures-bulk-caption-text").input("a fashion plate")
    return ran(at), engraving


def test_a_bulk_caption_keeps_a_typed_caption_unless_asked(db):
    at, engraving = caption_all_after_typing_one(db, pages=2)
    overwrite = at.checkbox(key="pictures-bulk-caption-overwrite")
    assert overwrite.value is False and "overwrite the 1 typed captions" in overwrite.label
    assert "Write this caption on 3 of the 4 pictures" in texts(at)
    assert "1 picture with a typed caption keeps it" in texts(at)
    next(b for b in at.button if b.label == "Caption 3 pictures").click()
    ran(at)
    with Manifest(db) as manifest:
        captions = {row["id"]: row["caption"] for row in manifest.picture_rows()}
    assert captions[engraving] == "her own caption" and list(captions.values()).count("a fashion plate") == 3
    boxes = [caption_on_card(at, picture_id) for picture_id in cards(at)]
    assert sorted(boxes) == ["a fashion plate"] * 3 + ["her own caption"]  # every card at once


def test_the_deleted_view_brings_every_deleted_picture_back_after_saying_how_many(db):
    with_pictures(db, pages=3)
    deleted = picture_ids(db, 0) + picture_ids(db, 1, number=2)
    with Manifest(db) as manifest:
        for picture_id in deleted:
            manifest.delete_picture(picture_id)
        live = len(list(manifest.picture_rows(where="NOT x.deleted")))
    at = pictures_view()  # All shows the deleted ones dim; its bulk actions leave them, and say so
    assert f"Every picture in this view ({live:,}; the 3 deleted stay so):" in texts(at)
    at.segmented_control(key="pic_decision").set_value("deleted")
    ran(at)
    next(b for b in at.button if b.key == "pictures-bulk-restore").click()
    ran(at)
    assert "Bring back all 3 deleted pictures" in texts(at)  # says how many before anything changes
    with Manifest(db) as manifest:
        assert len(list(manifest.picture_rows(where="x.deleted"))) == 3
    next(b for b in at.button if b.key == "pictures-restore-confirm").click()
    ran(at)
    assert any("Brought back 3 pictures" in t.value for t in at.toast)
    assert at.segmented_control(key="pic_decision").format_func("deleted").endswith("· 0")
    with Manifest(db) as manifest:
        assert not list(manifest.picture_rows(where="x.deleted"))
        manifest.undo()  # one step takes all three back
        assert {r["id"] for r in manifest.picture_rows(where="x.deleted")} == set(deleted)


def test_the_large_view_opens_on_the_picture_and_zooms_around_it(db):
    with_pictures(db, pages=1)
    engraving, stock = picture_ids(db)
    at = open_picture(pictures_view(), stock)
    assert any("Centred on this picture" in c.value for c in at.caption)  # not the top of the page
    fit = next(b for b in at.button if b.key == "picture-zoom-fit")
    assert fit.disabled
    while not next(b for b in at.button if b.key == "picture-zoom-out").disabled:
        next(b for b in at.button if b.key == "picture-zoom-out").click()
        ran(at)
    assert not any("Zoomed" in c.value or "Centred" in c.value for c in at.caption)  # the whole page, at 1x
    next(b for b in at.button if b.key == "picture-zoom-in").click()
    ran(at)
    next(b for b in at.button if b.key == "picture-zoom-in").click()
    ran(at)
    assert any("Zoomed 2× around this picture" in c.value for c in at.caption)
    next(b for b in at.button if b.key == "picture-zoom-fit").click()
    ran(at)
    assert any("Centred on this picture" in c.value for c in at.caption)
    assert "picture **2** of 2" in texts(at)


@pytest.mark.parametrize("box", [(300, 2600, 700, 2900), (40, 40, 1400, 1100), (900, 300, 1100, 2500)],
                         ids=["small, low on the page", "large", "tall"])
def test_the_fitted_view_is_centred_on_the_picture_which_fills_most_of_it(box):
    page_width, page_height = 1462, 3100  # a newspaper page: 731 px wide in the dialog at 1x, the picture off screen
    x0, y0, x1, y1 = pv.fit_region(box, page_width, page_height)
    assert 0 <= x0 and 0 <= y0 and x1 <= page_width and y1 <= page_height
    assert x0 <= box[0] and y0 <= box[1] and box[2] <= x1 and box[3] <= y1  # all of the picture is shown
    fills = max((box[2] - box[0]) / (x1 - x0), (box[3] - box[1]) / (y1 - y0))
    assert fills >= 0.7, fills  # the picture fills most of the view
    shown_height = (y1 - y0) * 731 / (x1 - x0)
    assert shown_height <= 560 or (box[3] - box[1]) * 1.4 > (y1 - y0)  # on one screen, unless the picture is tall


def test_a_bulk_caption_of_a_large_picture_view_runs_as_a_job_and_keeps_typed_captions(db, monkeypatch):
    from apptest_support import job_finished, wait_for
    from curation.views import bulk
    monkeypatch.setattr(bulk, "JOB_MIN", 5)  # "large" kept small for the test
    at, engraving = caption_all_after_typing_one(db, pages=4)
    next(b for b in at.button if b.label == "Caption 7 pictures").click()
    ran(at)  # returns at once: the job's process writes them
    assert "Started: 7 pictures are written a part at a time" in " ".join(str(t.value) for t in at.toast)
    job = wait_for(job_finished(db, bulk.JOB))
    assert job["status"] == "done" and job["total"] == 7
    with Manifest(db) as manifest:
        captions = {row["id"]: row["caption"] for row in manifest.picture_rows()}
        assert captions[engraving] == "her own caption" and list(captions.values()).count("a fashion plate") == 7
        manifest.undo()  # the job's captions, in one step
        captions = {row["id"]: row["caption"] for row in manifest.picture_rows()}
        assert [text for text in captions.values() if text] == ["her own caption"]


@pytest.mark.parametrize("shared", ["Kept · 12", "Kept", "kept", "Kept · 1,204"])
def test_a_shared_address_with_an_old_count_opens_on_its_filter_by_name(db, shared):
    """The address holds the filter's label with the count it had ("Kept · 12"); the filter is matched by its
    name, so an address shared before a decision changed the count still opens on Kept, not All pictures."""
    with_pictures(db)
    at = page("pages/review.py")
    at.query_params["view"] = "Pictures"
    at.query_params["pic_decision"] = shared
    ran(at)
    control = at.segmented_control(key="pic_decision")
    assert control.value == "kept", control.value
    assert "Kept · 5" in control.proto.options[list(pv.DECISIONS).index("kept")].content
    assert at.query_params["pic_decision"] == "kept"  # named by what it is, so a reload keeps it


def test_the_filter_is_kept_in_the_address_by_its_name_and_a_reload_opens_on_it(db):
    """Choosing a filter writes its name to the address, not its label with a count ("Kept · 5"), so a
    decision that changes the count leaves the address valid; a reload (a new session on that address)
    opens on the same filter; All pictures, the default, leaves the address clean."""
    with_pictures(db)
    at = pictures_view()
    assert "pic_decision" not in at.query_params
    at.segmented_control(key="pic_decision").set_value("excluded")
    ran(at)
    assert at.query_params["pic_decision"] == "excluded"
    reloaded = page("pages/review.py")
    reloaded.query_params.update(view="Pictures", pic_decision="excluded")
    ran(reloaded)
    assert reloaded.segmented_control(key="pic_decision").value == "excluded"
    assert reloaded.query_params["pic_decision"] == "excluded"
    reloaded.segmented_control(key="pic_decision").set_value("all")
    ran(reloaded)
    assert "pic_decision" not in reloaded.query_params
