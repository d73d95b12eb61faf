"""What the Pictures view shows, without Streamlit: filters and their counts, sorts, screens paged by key,
crops, the page with its numbered boxes, and bulk actions that say what they change and undo in one step."""

import io
import json

import cv2
import numpy as np
import PIL.Image
import pytest

from curation import Manifest
from curation.manifest import history
from curation.scoring.result import PageResult
from curation.views import picture_bulk
from curation.views import picture_views as pv

WIDTH, HEIGHT = 1000, 1400  # reference pixels
ENGRAVING = (40, 30, 400, 330, 5.2)
STOCK_CUT = (420, 500, 520, 600, 0.48)
PLATE = (100, 100, 900, 1300, 48.0)
NEAR_CUT = (500, 900, 800, 1200, 2.2)  # just above the 2 sq in cutoff


def scored(manifest, doc_id, page, boxes, sigma=60.0):
    features = {"ink_tone": 0.6, "picture_area": max((b[4] for b in boxes), default=0.0),
                "picture_count": len(boxes), "pictures": json.dumps([list(b) for b in boxes])}
    manifest.save_pages(doc_id, [PageResult(page=page, status="ok", sigma=sigma, width=WIDTH, height=HEIGHT,
                                            features=features)])


@pytest.fixture
def manifest(tmp_path, monkeypatch):
    monkeypatch.setenv(history.USER_VARIABLE, "ana")
    with Manifest(tmp_path / "m.sqlite") as m:
        yield m


@pytest.fixture
def doc(manifest):
    """Four pages: an engraving and a stock cut; a stock cut; a plate; a picture near the cutoff."""
    doc_id = manifest.register_document(sha256="a" * 64, path="/archive/a.pdf", size=1)["id"]
    for page, boxes in enumerate([[ENGRAVING, STOCK_CUT], [STOCK_CUT], [PLATE], [NEAR_CUT]]):
        scored(manifest, doc_id, page, boxes)
    manifest.set_document(doc_id, status="ok", pages=4)
    return doc_id


def ids(manifest, doc_id):
    """{(page, number): picture id}"""
    rows = manifest.picture_rows(where="x.doc_id = :d", params={"d": doc_id})
    return {(r["page"], r["number"]): r["id"] for r in rows}


def every_screen(manifest, flt=pv.PictureFilter(), sort="size", limit=2):
    rows, after = [], None
    while True:
        screen = pv.screen(manifest, None, flt, sort, after=after, limit=limit)
        rows += screen.rows
        if screen.next_after is None:
            return rows
        after = screen.next_after


def test_each_decision_filter_and_its_count(manifest, doc):
    picture = ids(manifest, doc)
    manifest.set_picture_override(picture[(1, 1)], True)  # a stock cut a curator includes
    manifest.delete_picture(picture[(2, 1)])  # the plate is not a picture
    manifest.set_override(doc, 3, False)  # a page the curator excluded: its picture is not kept
    scored(manifest, doc, 0, [ENGRAVING])  # the stock cut is no longer found, but it is untouched: dropped
    manifest.set_picture_captions([(picture[(0, 1)], "A WET DAY.")])
    scored(manifest, doc, 0, [])  # the engraving is no longer found: kept, for its caption
    counts = pv.filter_counts(manifest, None)
    # The engraving no longer found still counts by the rule, as the export counts it; All shows the deleted one
    # too (dim), neither kept nor excluded.
    assert counts == {"all": 4, "kept": 2, "excluded": 1, "overridden": 1, "duplicates": 0, "gone": 1, "deleted": 1}
    for decision, count in counts.items():
        rows = every_screen(manifest, pv.PictureFilter(decision))
        assert len(rows) == count, decision
    assert {r["id"] for r in every_screen(manifest, pv.PictureFilter("kept"))} == {picture[(0, 1)], picture[(1, 1)]}
    assert [r["id"] for r in every_screen(manifest, pv.PictureFilter("excluded"))] == [picture[(3, 1)]]
    assert [r["id"] for r in every_screen(manifest, pv.PictureFilter("gone"))] == [picture[(0, 1)]]
    assert pv.filter_counts(manifest, None, doc_id=doc + 1)["all"] == 0


def test_screens_paged_by_key_hold_every_picture_once_in_the_sorts_order(manifest, doc):
    other = manifest.register_document(sha256="b" * 64, path="/archive/b.pdf", size=1)["id"]
    for page in range(5):
        scored(manifest, other, page, [PLATE, ENGRAVING, STOCK_CUT])
    total = pv.filter_counts(manifest, None)["all"]
    for sort in pv.SORTS:
        rows = every_screen(manifest, sort=sort, limit=4)
        assert len(rows) == total == len({r["id"] for r in rows}), sort
    sizes = [r["box_area"] for r in every_screen(manifest, sort="size")]
    assert sizes == sorted(sizes, reverse=True)
    pages = [(r["doc_id"], r["page"], r["number"]) for r in every_screen(manifest, sort="page")]
    assert pages == sorted(pages)


def test_least_sure_first_starts_at_the_cutoff(manifest, doc):
    rows = every_screen(manifest, sort="unsure")
    assert rows[0]["box_area"] == NEAR_CUT[4]  # 2.2 sq in against a 2 sq in cutoff
    assert rows[-1]["box_area"] == PLATE[4]  # 24 times the cutoff
    manifest.rule, manifest.threshold = "sigma", 59.0
    assert len(every_screen(manifest, sort="unsure")) == 5  # under σ only, by the page's σ


def test_near_duplicates_sit_together_group_by_group(manifest, doc):
    other = manifest.register_document(sha256="b" * 64, path="/archive/b.pdf", size=1)["id"]
    for page in range(3):
        scored(manifest, other, page, [PLATE])
    manifest.replace_duplicates([[(other, 2), (doc, 2)], [(doc, 0), (other, 0)]])
    rows = every_screen(manifest, sort="duplicates", limit=3)
    groups = [r["duplicate_group"] for r in rows]
    first_group = {(r["doc_id"], r["page"]) for r in rows if r["duplicate_group"] == groups[0]}
    assert groups[:5] == [groups[0]] * len(first_group) + [groups[len(first_group)]] * (5 - len(first_group))
    assert groups[5:] == [None] * (len(rows) - 5)
    assert len(every_screen(manifest, pv.PictureFilter("duplicates"))) == 5


def test_the_near_duplicates_filter_reads_the_groups_not_every_picture(manifest, doc):
    """At 10 M pictures a walk of every picture, each looked up in the groups, took a second a screen."""
    manifest.replace_duplicates([[(doc, 0), (doc, 2)]])
    where, params = pv.PictureFilter("duplicates").sql()
    plan = " | ".join(row[3] for row in manifest.conn.execute(
        f"EXPLAIN QUERY PLAN SELECT x.id {pv.from_sql(where)} WHERE {where} ORDER BY x.doc_id, x.page, x.number",
        params))
    assert "SCAN dg" in plan and "SCAN xg" not in plan, plan


def test_a_stale_key_does_not_fit_another_sort(manifest, doc):
    after = pv.screen(manifest, None, sort="page", limit=1).next_after
    with pytest.raises(ValueError, match="does not fit"):
        pv.screen(manifest, None, sort="size", after=after)


def jpeg(array) -> bytes:
    return cv2.imencode(".jpg", array)[1].tobytes()


def test_a_crop_is_the_box_of_the_thumbnail_in_a_square_of_paper(manifest, doc):
    page = np.full((280, 200), 230, np.uint8)  # a 256-px-high thumbnail of a 1000 x 1400 page: a fifth
    page[6:66, 8:80] = 0  # the engraving's box, ENGRAVING / 5
    crop = PIL.Image.open(io.BytesIO(pv.crop(jpeg(page), ENGRAVING[:4], WIDTH, HEIGHT))).convert("L")
    assert crop.size == (pv.CROP_SIDE, pv.CROP_SIDE)
    pixels = np.asarray(crop)
    assert pixels[pv.CROP_SIDE // 2, pv.CROP_SIDE // 2] < 40  # the picture fills the middle
    assert pixels[2, pv.CROP_SIDE // 2] > 200  # the wide box leaves paper above and below
    manifest.conn.execute("INSERT INTO thumbnails (doc_id, page, jpeg) VALUES (?, 0, ?)", (doc, jpeg(page)))
    rows = every_screen(manifest, sort="page")
    assert set(pv.crops(manifest, rows)) == {rows[0]["id"], rows[1]["id"]}  # only page 0 has a thumbnail


def test_the_page_is_drawn_with_every_box_numbered_the_open_one_in_blue(manifest, doc):
    picture = ids(manifest, doc)
    manifest.delete_picture(picture[(0, 2)])
    boxes = pv.page_boxes(manifest, doc, 0)
    assert [(b["number"], b["deleted"]) for b in boxes] == [(1, 0), (2, 1)]
    page = np.full((1400, 1000, 3), 255, np.uint8)  # drawn at the reference size
    drawn = np.asarray(pv.numbered_outline(jpeg(page), boxes, WIDTH, selected=picture[(0, 1)])).astype(int)
    assert np.abs(drawn[31, 200] - pv.SELECTED_COLOUR).max() < 40  # the open one's top edge, in blue
    left_edge = drawn[500:600, 421]  # the deleted stock cut's: dashes of orange and gaps of paper
    orange = np.abs(left_edge - pv.OUTLINE_COLOUR).max(axis=1) < 40
    assert 0.3 < orange.mean() < 0.8
    small = pv.numbered_outline(jpeg(page[::10, ::10]), boxes, WIDTH)  # a thumbnail: enlarged to be legible
    assert small.width == pv.OUTLINE_MIN_WIDTH


def test_two_clicks_in_any_order_are_one_box(manifest):
    assert pv.box_from_clicks((300, 450), (100, 50), 612, 1224) == [200, 100, 600, 900]
    assert pv.box_from_clicks((100, 50), (300, 450), 612, 1224) == [200, 100, 600, 900]
    with pytest.raises(pv.PictureError):
        pv.box_from_clicks((1, 1), (2, 2), 0, 1224)


def test_a_click_on_the_zoomed_page_is_mapped_back_to_the_page_and_sets_that_box(manifest, doc):
    assert pv.zoom_region(NEAR_CUT[:4], WIDTH, HEIGHT, 1.0) == (0, 0, WIDTH, HEIGHT)
    assert pv.zoom_region(ENGRAVING[:4], WIDTH, HEIGHT, 2.0) == (0, 0, 500, 700)  # held inside the page
    region = pv.zoom_region(NEAR_CUT[:4], WIDTH, HEIGHT, 2.0)
    assert region == (400, 700, 900, 1400)  # half the page's sides, around the picture (500..800, 900..1200)
    near = ids(manifest, doc)[(3, 1)]
    boxes = pv.page_boxes(manifest, doc, 3)
    page = np.full((1400, 1000, 3), 255, np.uint8)
    zoomed = pv.zoomed(pv.numbered_outline(jpeg(page), boxes, WIDTH, selected=near), region, WIDTH)
    assert zoomed.width == WIDTH  # enlarged back: the zoomed part fills the view
    shown = np.asarray(zoomed).astype(int)
    # The picture's left edge (x 500) is a fifth into the window 500 wide from x 400: drawn there, in blue...
    x, y = round(0.2 * zoomed.width), round((1050 - 700) / 700 * zoomed.height)
    assert np.abs(shown[y, x] - pv.SELECTED_COLOUR).max() < 60
    # ...and a click there, on the view shown 600 px wide, is that edge on the page.
    scale = 600 / zoomed.width
    left = pv.page_point((x * scale, y * scale), 600, region)
    assert abs(left[0] - 500) <= 2 and abs(left[1] - 1050) <= 2
    box = pv.box_from_clicks((x * scale, 0), (300, 240), 600, 1000, region)
    assert box == [round(left[0]), 700, 650, 900]  # 300, 240 of 600: five sixths of a reference pixel each
    manifest.set_picture_box(near, box)
    row = manifest.picture(near)
    assert [row["bx0"], row["by0"], row["bx1"], row["by1"]] == box


def test_deleted_pictures_are_brought_back_all_at_once_and_taken_back_in_one_undo(manifest, doc):
    picture = ids(manifest, doc)
    other = manifest.register_document(sha256="b" * 64, path="/archive/b.pdf", size=1)["id"]
    scored(manifest, other, 0, [PLATE])
    for key in ((0, 2), (2, 1), (3, 1)):
        manifest.delete_picture(picture[key])
    manifest.delete_picture(ids(manifest, other)[(0, 1)])
    kept = manifest.summary()["kept"]  # the plate's page is excluded with its only picture
    with pytest.raises(ValueError):
        picture_bulk.bulk_restore(manifest, pv.PictureFilter("all"))
    assert pv.filter_counts(manifest, None, doc)["deleted"] == 3
    assert picture_bulk.bulk_restore(manifest, pv.PictureFilter("deleted", doc)) == 3  # this document's only
    assert history.actions(manifest.conn)[0]["description"] == "brought back 3 pictures"
    assert pv.filter_counts(manifest, None) == {**pv.scanned_counts(manifest, None), "deleted": 1}
    assert [r["id"] for r in manifest.picture_rows(where="x.deleted")] == [ids(manifest, other)[(0, 1)]]
    assert manifest.summary()["kept"] == kept + 2  # the plate's page and the near cut's follow their pictures
    manifest.undo()
    assert {r["id"] for r in manifest.picture_rows(where="x.deleted AND x.doc_id = :d", params={"d": doc})} == {
        picture[(0, 2)], picture[(2, 1)], picture[(3, 1)]}
    assert manifest.summary()["kept"] == kept
    assert pv.filter_counts(manifest, None) == pv.scanned_counts(manifest, None)


def test_a_bulk_exclude_says_what_it_replaces_and_undoes_in_one_step(manifest, doc):
    picture = ids(manifest, doc)
    manifest.set_picture_override(picture[(1, 1)], True)
    manifest.set_picture_override(picture[(0, 2)], False)
    manifest.delete_picture(picture[(2, 1)])
    flt = pv.PictureFilter("all")
    counts = pv.override_counts(manifest, None, flt)
    assert counts == {"pictures": 4, "included": 1, "excluded": 1, "captioned": 0}  # the deleted one left out
    assert picture_bulk.bulk_override_effect(counts, False) == (
        "This replaces 1 Include override; 1 picture is already excluded; 2 pictures without an override get one.")
    assert picture_bulk.bulk_override_effect(counts, None) == (
        "This removes 2 overrides (1 Include, 1 Exclude); those pictures go back to the rule's decision.")
    assert picture_bulk.bulk_override(manifest, None, flt, False) == 4
    assert manifest.summary()["kept"] == 0
    assert history.actions(manifest.conn)[0]["description"] == "excluded 3 pictures"  # one was already
    manifest.undo()
    assert {r["id"]: r["keep"] for r in manifest.picture_rows()} == {
        picture[(0, 1)]: None, picture[(0, 2)]: 0, picture[(1, 1)]: 1, picture[(2, 1)]: None, picture[(3, 1)]: None}
    assert manifest.summary()["kept"] == 3


def test_a_bulk_caption_keeps_typed_captions_unless_asked(manifest, doc):
    picture = ids(manifest, doc)
    manifest.set_picture_captions([(picture[(0, 1)], "her own caption")])
    flt = pv.PictureFilter("all")
    counts = pv.override_counts(manifest, None, flt)
    assert picture_bulk.bulk_caption_effect(counts, False) == (4, "1 picture with a typed caption keeps it.")
    assert picture_bulk.bulk_caption_effect(counts, True) == (5, "It overwrites 1 typed caption.")
    assert picture_bulk.bulk_caption(manifest, None, flt, "a fashion plate") == 4
    captions = {r["id"]: r["caption"] for r in manifest.picture_rows()}
    assert captions[picture[(0, 1)]] == "her own caption"
    assert list(captions.values()).count("a fashion plate") == 4
    assert picture_bulk.bulk_caption(manifest, None, flt, "an engraving", replace=True) == 5
    assert {r["caption"] for r in manifest.picture_rows()} == {"an engraving"}
    manifest.undo()
    assert {r["id"]: r["caption"] for r in manifest.picture_rows()} == captions


def test_a_card_says_what_happened_to_its_picture(manifest, doc):
    picture = ids(manifest, doc)
    manifest.set_override(doc, 1, False)
    manifest.set_picture_box(picture[(2, 1)], (100, 100, 500, 500))
    added = manifest.add_picture(doc, 3, (10, 10, 300, 300))
    manifest.set_picture_override(picture[(0, 2)], False)
    scored(manifest, doc, 0, [ENGRAVING])
    words = {r["id"]: pv.status_words(dict(r)) for r in manifest.picture_rows()}
    assert words[picture[(1, 1)]] == "page excluded by a curator"
    assert words[picture[(2, 1)]] == "box redrawn"
    assert words[added] == "added by a curator"
    assert words[picture[(0, 2)]] == "not found by the last scoring"
    assert words[picture[(0, 1)]] == ""


def test_a_picture_judged_not_a_picture_says_so_with_its_score_until_a_curator_decides(manifest, doc):
    """A picture scored under the score cutoff (by the picture judge) is kept in the manifest, does not count,
    and its card says why; once a curator includes it, it counts and the words go."""
    scored(manifest, doc, 4, [(*ENGRAVING, None, None, 0.97), (*NEAR_CUT, None, None, 0.04)])
    rows = {r["number"]: dict(r) for r in manifest.picture_rows(where="x.page = 4")}
    assert pv.status_words(rows[1]) == ""
    assert pv.status_words(rows[2]) == "judged not a picture (score 0.04)"
    assert not rows[2]["keep_picture"] and rows[1]["keep_picture"]
    manifest.set_picture_override(rows[2]["id"], True)
    again = dict(manifest.picture(rows[2]["id"]))
    assert again["keep_picture"] and pv.status_words(again) == ""


TRIED = 30.0  # a σ cutoff other than the saved one


def test_kept_counts_follow_every_change_and_count_again_only_the_documents_touched(manifest, doc, monkeypatch):
    """At a cutoff being tried (not the saved one, whose counts are stored), counted in memory."""
    other = manifest.register_document(sha256="b" * 64, path="/archive/b.pdf", size=1)["id"]
    for page in range(3):
        scored(manifest, other, page, [PLATE, STOCK_CUT])
    keeper = pv.CountKeeper()
    scans = []
    counted = pv.document_counts
    assert keeper.counts(manifest, None) == pv.scanned_counts(manifest, None)  # saved: the stored counts, no scan
    monkeypatch.setattr(pv, "document_counts", lambda *a, **k: scans.append(a[2] if len(a) > 2 else "all")
                        or counted(*a, **k))

    def same():
        assert keeper.counts(manifest, TRIED) == pv.scanned_counts(manifest, TRIED)
        assert keeper.counts(manifest, TRIED, doc) == pv.scanned_counts(manifest, TRIED, doc)

    same()
    picture = ids(manifest, doc)
    manifest.set_picture_override(picture[(0, 1)], False)
    same()
    manifest.delete_picture(picture[(2, 1)])
    manifest.set_override(doc, 3, False)
    same()
    assert scans == ["all", [doc], [doc]]  # after a person's change, only the document it touched
    manifest.undo()
    same()
    with Manifest(manifest.path) as elsewhere:  # another browser, the command line
        elsewhere.set_picture_override(ids(elsewhere, other)[(1, 2)], True)
    same()
    assert scans[-1] == [other]
    job = manifest.start_job("rescore")  # a scoring, which runs as a job: everything again
    scored(manifest, other, 0, [STOCK_CUT])
    manifest.finish_job(job, "done")
    same()
    assert scans[-1] == "all"
    assert keeper.counts(manifest, 1000.0, rule="sigma") == pv.scanned_counts(manifest, 1000.0, rule="sigma")


def test_a_sorted_screen_of_few_pictures_among_many_is_found_past_the_first_ones(manifest, doc, monkeypatch):
    other = manifest.register_document(sha256="b" * 64, path="/archive/b.pdf", size=1)["id"]
    for page in range(12):
        scored(manifest, other, page, [PLATE])  # twelve large pictures the rule keeps
    monkeypatch.setattr(pv, "CANDIDATES", 2)
    excluded = every_screen(manifest, pv.PictureFilter("excluded"), sort="size", limit=1)
    assert [r["box_area"] for r in excluded] == [STOCK_CUT[4], STOCK_CUT[4]]  # past 4 candidates, all kept
    kept = every_screen(manifest, pv.PictureFilter("kept"), sort="size", limit=3)
    assert [r["box_area"] for r in kept] == [PLATE[4]] * 13 + [ENGRAVING[4], NEAR_CUT[4]]
    mine = every_screen(manifest, pv.PictureFilter("all", doc_id=doc), sort="unsure", limit=2)
    assert [r["box_area"] for r in mine] == [NEAR_CUT[4], ENGRAVING[4], STOCK_CUT[4], STOCK_CUT[4], PLATE[4]]


def test_a_deleted_picture_says_deleted_once_and_a_smaller_box_says_what_it_changed(manifest, doc):
    picture = ids(manifest, doc)
    manifest.delete_picture(picture[(2, 1)])
    deleted = dict(manifest.picture(picture[(2, 1)]))
    assert pv.status_words(deleted) == "deleted"  # a card: no badge beside it
    assert pv.status_words(deleted, badge=True) == ""  # the large view: its badge says it
    before = dict(manifest.picture(picture[(0, 1)]))
    assert pv.decision_of(before) == "kept"
    manifest.set_picture_box(before["id"], [before["bx0"], before["by0"], before["bx0"] + 100, before["by0"] + 100])
    after = dict(manifest.picture(before["id"]))
    assert pv.decision_change(before, after) == "excluded now, no longer kept: its box is 0.48 sq in (under the " \
                                                "picture cutoff)"
    assert pv.decision_change(after, after) is None


def test_a_drag_draws_a_box_or_moves_the_grabbed_corner():
    box = [100, 100, 400, 300]
    assert pv.dragged_box(box, (50, 60), (200, 250), grab=10) == [50, 60, 200, 250]  # away from the corners: new
    assert pv.dragged_box(box, (395, 305), (500, 350), grab=10) == [100, 100, 500, 350]  # bottom right moved
    assert pv.dragged_box(box, (104, 296), (150, 400), grab=10) == [150, 100, 400, 400]  # bottom left moved
    assert pv.dragged_box(None, (395, 305), (500, 350), grab=10) == [395, 305, 500, 350]  # adding: always new
