"""Pictures are rows of the manifest: a curator's decision, box and caption on a picture survive re-scoring,
a page's decision follows its pictures unless the page itself is overridden, and every edit is undone in a step."""

import sqlite3

import pytest

from curation import Manifest
from curation.manifest import history, pictures
from curation.manifest.store import MIGRATIONS
from curation.scoring.result import PageResult

ENGRAVING = (40, 30, 400, 330, 5.2)   # reference pixels (144 dpi) and square inches
STOCK_CUT = (420, 500, 520, 600, 0.48)


def scored(manifest, doc_id, page, boxes, *, sigma=60.0, ink_tone=0.6):
    features = {"ink_tone": ink_tone, "picture_area": max((b[4] for b in boxes), default=0.0),
                "picture_count": len(boxes), "pictures": __import__("json").dumps([list(b) for b in boxes])}
    manifest.save_pages(doc_id, [PageResult(page=page, status="ok", sigma=sigma, width=1000, height=1400,
                                            features=features)])


@pytest.fixture
def manifest(tmp_path, monkeypatch):
    monkeypatch.setenv(history.USER_VARIABLE, "ana")
    with Manifest(tmp_path / "m.sqlite") as m:
        yield m


@pytest.fixture
def doc(manifest):
    doc_id = manifest.register_document(sha256="a" * 64, path="/archive/a.pdf", size=1)["id"]
    scored(manifest, doc_id, 0, [ENGRAVING, STOCK_CUT])
    scored(manifest, doc_id, 1, [STOCK_CUT])
    scored(manifest, doc_id, 2, [])
    manifest.set_document(doc_id, status="ok", pages=3)
    return doc_id


def numbered(manifest, doc_id, page):
    return {row["number"]: row for row in manifest.picture_rows(where="x.doc_id = :d AND x.page = :p",
                                                                params={"d": doc_id, "p": page})}


def page_keep(manifest, doc_id, page):
    return next(r["keep"] for r in manifest.pages() if r["doc_id"] == doc_id and r["page"] == page)


def test_every_picture_found_is_a_row_with_its_number_box_and_the_rules_decision(manifest, doc):
    first = numbered(manifest, doc, 0)
    assert sorted(first) == [1, 2]
    assert (first[1]["bx0"], first[1]["by0"], first[1]["bx1"], first[1]["by1"]) == ENGRAVING[:4]
    assert first[1]["keep_picture"] == 1 and first[2]["keep_picture"] == 0  # 5.2 and 0.48 square inches, cutoff 2
    assert first[1]["picture_decided_by"] == "threshold"
    assert [page_keep(manifest, doc, p) for p in range(3)] == [1, 0, 0]


def test_a_picture_override_survives_rescoring_matched_by_overlap(manifest, doc):
    stock = numbered(manifest, doc, 0)[2]
    manifest.set_picture_override(stock["id"], True)
    manifest.set_picture_captions([(numbered(manifest, doc, 0)[1]["id"], "A WET DAY.")])
    moved = (44, 36, 396, 326, 5.0)  # the scorer's box moved a little; the stock cut is now found first
    scored(manifest, doc, 0, [(420, 502, 522, 598, 0.47), moved])
    again = numbered(manifest, doc, 0)
    assert again[2]["id"] == stock["id"] and again[2]["keep"] == 1 and again[2]["keep_picture"] == 1
    assert again[1]["caption"] == "A WET DAY." and (again[1]["bx0"], again[1]["bx1"]) == (44, 396)
    assert again[2]["rank"] == 0 and again[1]["rank"] == 1


def test_an_override_whose_picture_is_gone_is_kept_and_shown_new_pictures_get_new_numbers(manifest, doc):
    stock = numbered(manifest, doc, 0)[2]
    manifest.set_picture_override(stock["id"], False)
    scored(manifest, doc, 0, [ENGRAVING, (50, 800, 300, 1000, 2.4)])
    rows = numbered(manifest, doc, 0)
    assert rows[2]["id"] == stock["id"] and rows[2]["rank"] is None and rows[2]["keep"] == 0
    assert rows[3]["rank"] == 1 and rows[3]["keep"] is None
    untouched = numbered(manifest, doc, 1)[1]["id"]
    scored(manifest, doc, 1, [])
    assert manifest.conn.execute("SELECT COUNT(*) FROM pictures WHERE id = ?", (untouched,)).fetchone()[0] == 0


def test_a_page_follows_its_pictures_unless_the_page_itself_is_overridden(manifest, doc):
    rows = numbered(manifest, doc, 0)
    manifest.set_picture_override(rows[1]["id"], False)
    assert page_keep(manifest, doc, 0) == 0  # its only picture the rule keeps is excluded
    manifest.set_picture_override(rows[2]["id"], True)
    assert page_keep(manifest, doc, 0) == 1  # a small picture a curator includes keeps its page
    manifest.set_override(doc, 0, False)
    assert page_keep(manifest, doc, 0) == 0
    assert all(r["keep_picture"] == 0 for r in numbered(manifest, doc, 0).values())
    manifest.set_override(doc, 0, None)
    assert page_keep(manifest, doc, 0) == 1
    for row in manifest.pages():
        if row["page"] == 0:
            assert row["decided_by"] == "pictures"


def test_under_the_sigma_rule_pictures_follow_their_page_until_one_is_decided(manifest, doc):
    manifest.rule = "sigma"
    manifest.threshold = 70  # every page's sigma is 60: excluded
    rows = numbered(manifest, doc, 0)
    assert page_keep(manifest, doc, 0) == 0 and rows[1]["keep_picture"] == 0
    manifest.set_picture_override(rows[2]["id"], True)
    assert page_keep(manifest, doc, 0) == 1


def test_an_added_picture_is_included_and_a_deleted_one_never_counts(manifest, doc):
    new = manifest.add_picture(doc, 2, (100, 100, 500, 600))
    added = manifest.picture(new)
    assert added["number"] == 1 and added["added"] == 1 and added["keep_picture"] == 1
    assert added["box_area"] == pytest.approx(400 * 500 / 144 / 144, abs=0.01)
    assert page_keep(manifest, doc, 2) == 1
    engraving = numbered(manifest, doc, 0)[1]
    manifest.delete_picture(engraving["id"])
    assert page_keep(manifest, doc, 0) == 0
    assert [r["number"] for r in manifest.picture_rows(deleted=False) if r["page"] == 0] == [2]
    assert set(manifest.kept_pictures()) == {(doc, 2)}
    scored(manifest, doc, 2, [])  # rescoring keeps the curator's picture
    assert manifest.picture(new)["added"] == 1


def test_a_redrawn_box_is_the_pictures_box_and_size(manifest, doc):
    stock = numbered(manifest, doc, 0)[2]
    manifest.set_picture_box(stock["id"], (300, 400, 700, 900))
    fixed = manifest.picture(stock["id"])
    assert (fixed["bx0"], fixed["by0"], fixed["bx1"], fixed["by1"]) == (300, 400, 700, 900)
    assert fixed["keep_picture"] == 1  # now 9.6 square inches
    assert (300, 400, 700, 900) in [box[:4] for box in manifest.pictures(doc, 0)]
    manifest.set_picture_box(stock["id"], None)
    assert manifest.picture(stock["id"])["keep_picture"] == 0


def test_a_box_that_is_a_line_or_a_missing_picture_is_a_clear_error(manifest, doc):
    with pytest.raises(pictures.PictureError, match="two corners"):
        manifest.add_picture(doc, 2, (10, 10, 11, 400))
    with pytest.raises(pictures.PictureError, match="no picture 999"):
        manifest.set_picture_override(999, True)
    box = manifest.picture(manifest.add_picture(doc, 2, (-50, 900, 5000, 99999)))
    assert (box["bx0"], box["by0"], box["bx1"], box["by1"]) == (0, 900, 1000, 1400)  # held to the page


def test_every_picture_edit_is_recorded_and_undone_in_one_step(manifest, doc):
    rows = numbered(manifest, doc, 0)
    manifest.set_picture_overrides([(rows[1]["id"], False), (rows[2]["id"], True)])
    assert history.actions(manifest.conn)[0]["description"] == "changed 2 pictures"
    manifest.undo()
    assert [r["keep"] for r in numbered(manifest, doc, 0).values()] == [None, None]
    assert page_keep(manifest, doc, 0) == 1
    manifest.set_picture_box(rows[2]["id"], (300, 400, 700, 900))
    manifest.undo()
    assert manifest.picture(rows[2]["id"])["fx0"] is None
    new = manifest.add_picture(doc, 2, (100, 100, 500, 600))
    assert "added picture 1 on p. 3 of a.pdf" in history.actions(manifest.conn)[0]["description"]
    manifest.undo()
    assert manifest.picture(new)["deleted"] == 1 and page_keep(manifest, doc, 2) == 0
    manifest.delete_picture(rows[1]["id"])
    assert "deleted picture 1 on p. 1 of a.pdf" in history.actions(manifest.conn)[0]["description"]
    manifest.undo()
    assert manifest.picture(rows[1]["id"])["deleted"] == 0 and page_keep(manifest, doc, 0) == 1
    manifest.set_picture_captions([(rows[1]["id"], "SEPTEMBER MORN.")])
    manifest.undo()
    assert manifest.picture(rows[1]["id"])["caption"] is None
    listed = list(history.changes(manifest.conn))
    assert any(c["target"] == "/archive/a.pdf p. 1 picture 2" and c["new"] == "include" for c in listed)


def test_a_job_caption_never_touches_the_curators(manifest, doc):
    engraving = numbered(manifest, doc, 0)[1]
    manifest.set_picture_captions([(engraving["id"], "typed")])
    manifest.set_auto_captions([(engraving["id"], "an engraving of a ship", "tiny-blip")])
    row = manifest.picture(engraving["id"])
    assert (row["caption"], row["auto_caption"], row["auto_caption_model"]) == ("typed", "an engraving of a ship", "tiny-blip")


def test_legends_from_the_scorer_are_kept_and_refreshed_on_rescoring(manifest, doc):
    scored(manifest, doc, 1, [(*STOCK_CUT, "A WET DAY.", 0.91)])
    assert numbered(manifest, doc, 1)[1]["legend"] == "A WET DAY."
    scored(manifest, doc, 1, [(*STOCK_CUT, None, None)])
    assert numbered(manifest, doc, 1)[1]["legend"] is None


def test_a_manifest_of_the_last_version_keeps_its_pictures(tmp_path):
    path = tmp_path / "old.sqlite"
    raw = sqlite3.connect(path)
    for script in MIGRATIONS[:5]:
        raw.executescript(script)
    raw.execute("PRAGMA user_version = 5")
    raw.execute("INSERT INTO documents (id, sha256, path, size, status, added_at, updated_at) "
                "VALUES (1, 'x', '/a.pdf', 1, 'ok', 't', 't')")
    raw.execute("INSERT INTO pages (doc_id, page, status, sigma, width, height, scored_at, picture_area, ink_tone) "
                "VALUES (1, 0, 'ok', 50, 1000, 1400, 't', 5.2, 0.6)")
    raw.execute("INSERT INTO pictures VALUES (1, 0, 0, 40, 30, 400, 330, 5.2), (1, 0, 1, 420, 500, 520, 600, 0.48)")
    raw.commit()
    raw.close()
    with Manifest(path) as m:
        rows = list(m.picture_rows())
        assert [(r["number"], r["rank"], r["keep_picture"]) for r in rows] == [(1, 0, 1), (2, 1, 0)]
        assert next(m.pages())["keep"] == 1


def test_the_exported_pictures_are_the_kept_pictures_of_kept_pages_stored_or_at_a_draft_cutoff(manifest, doc):
    """What the export cuts apart: read from the stored decisions under the saved settings, evaluated at any
    other cutoff; a picture included on a page the curator excluded is not exported."""
    def exported(threshold=None):
        return {key: [row["number"] for row in rows] for key, rows in manifest.exported_pictures(threshold).items()}

    stock_cut = numbered(manifest, doc, 1)[1]["id"]
    manifest.set_picture_override(stock_cut, True)  # page 1 kept by its included picture
    assert exported() == {(doc, 0): [1], (doc, 1): [1]}
    manifest.set_override(doc, 1, False)  # the page excluded: its included picture stays out
    assert exported() == {(doc, 0): [1]}
    manifest.rule = "sigma"
    assert exported(threshold=70) == {}  # a draft cutoff over every page's σ (60), evaluated, not stored
    draft = exported(threshold=10)
    assert draft == {(doc, 0): [1, 2]}  # under σ a picture follows its page
    manifest.threshold = 10
    assert exported() == draft
