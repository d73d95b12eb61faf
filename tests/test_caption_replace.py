"""Find and replace over the curator's captions of many pictures: a preview lists every change and counts
them without writing, applying is one action that undo takes back, a typed caption is never overwritten by
a legend unless asked, and a bad pattern is told plainly; the same from the command line."""

import subprocess
import sys
import time

import pytest

from curation import Manifest
from curation.captions import edit
from curation.captions.edit import CaptionEditError, Pictures
from curation.manifest import history

from conftest import ROOT
from test_picture_rows import ENGRAVING, STOCK_CUT, scored

SHIP = (60, 700, 420, 1000, 2.5)


@pytest.fixture
def manifest(tmp_path, monkeypatch):
    monkeypatch.setenv(history.USER_VARIABLE, "ana")
    with Manifest(tmp_path / "m.sqlite") as m:
        yield m


@pytest.fixture
def pics(manifest):
    """Two documents. a.pdf p. 1: an engraving printed with its legend and a stock cut with a model caption;
    a.pdf p. 2: a ship with a legend and a typed caption. b.pdf p. 1: an engraving with a typed caption.
    Returns {name: picture id}."""
    a = manifest.register_document(sha256="a" * 64, path="/archive/a.pdf", size=1)["id"]
    b = manifest.register_document(sha256="b" * 64, path="/archive/b.pdf", size=1)["id"]
    scored(manifest, a, 0, [ENGRAVING, STOCK_CUT])
    scored(manifest, a, 1, [SHIP])
    scored(manifest, b, 0, [ENGRAVING])
    for doc in (a, b):
        manifest.set_document(doc, status="ok", pages=2)
    manifest.set_pictures(a, 0, [(*ENGRAVING, "SEPTEMBER\nMORN.", 0.93), STOCK_CUT])
    manifest.set_pictures(a, 1, [(*SHIP, "THE SHIP MORNING STAR.", 0.88)])
    ids = {"morn": picture_id(manifest, a, 0, 1), "cut": picture_id(manifest, a, 0, 2),
           "ship": picture_id(manifest, a, 1, 1), "lady": picture_id(manifest, b, 0, 1)}
    manifest.set_auto_captions([(ids["cut"], "a morning coat, engraved", "tiny-blip")])
    manifest.set_picture_captions([(ids["ship"], "a ship at morning"), (ids["lady"], "A lady, Morning dress")])
    return ids


def picture_id(manifest, doc_id, page, number):
    return manifest.picture_by_number(doc_id, page, number)["id"]


def captions(manifest):
    return {row["id"]: row["caption"] for row in manifest.picture_rows()}


def actions(manifest):
    return history.actions(manifest.conn)


def test_the_preview_lists_each_change_and_counts_them_without_writing(manifest, pics):
    before, done = captions(manifest), len(actions(manifest))
    changes = edit.preview(manifest, "morning", "dawn")
    assert changes.count == 1 and changes.searched == 4  # case-sensitive: "Morning" is not "morning"
    [change] = changes.changes
    assert change.as_dict() == {"picture_id": pics["ship"], "doc": "/archive/a.pdf", "page": 2, "picture": 1,
                                "old": "a ship at morning", "new": "a ship at dawn", "source": "caption"}
    both = edit.preview(manifest, "MORNING", "dawn", ignore_case=True)
    assert [(c.picture_id, c.new) for c in both.changes] == [(pics["ship"], "a ship at dawn"),
                                                              (pics["lady"], "A lady, dawn dress")]
    assert captions(manifest) == before and len(actions(manifest)) == done  # nothing written, nothing recorded


def test_only_the_curators_captions_are_edited_legends_and_model_captions_are_not(manifest, pics):
    edit.apply(manifest, "MORN", "EVE", ignore_case=True)
    rows = {row["id"]: row for row in manifest.picture_rows()}
    assert rows[pics["morn"]]["legend"] == "SEPTEMBER\nMORN." and rows[pics["morn"]]["caption"] is None
    assert rows[pics["cut"]]["auto_caption"] == "a morning coat, engraved" and rows[pics["cut"]]["caption"] is None
    assert rows[pics["ship"]]["legend"] == "THE SHIP MORNING STAR."
    assert rows[pics["ship"]]["caption"] == "a ship at EVEing"


def test_apply_is_one_action_and_undo_takes_it_back(manifest, pics):
    before = captions(manifest)
    changes = edit.apply(manifest, "morning", "dawn", ignore_case=True)
    assert changes.count == 2 and changes.action is not None
    assert captions(manifest)[pics["lady"]] == "A lady, dawn dress"
    latest = actions(manifest)[0]
    assert (latest["id"], latest["changes"], latest["user"]) == (changes.action, 2, "ana")
    assert latest["description"] == "captioned 2 pictures"
    manifest.undo(changes.action)
    assert captions(manifest) == before


def test_nothing_to_change_records_no_action(manifest, pics):
    done = len(actions(manifest))
    changes = edit.apply(manifest, "no such words", "x")
    assert changes.count == 0 and changes.action is None and len(actions(manifest)) == done


def test_regular_expressions_with_groups(manifest, pics):
    changes = edit.apply(manifest, r"^(a|A) (\w+)", r"\2", regex=True)
    assert [c.new for c in changes.changes] == ["ship at morning", "lady, Morning dress"]
    assert edit.preview(manifest, "MORNING", "x", regex=True).count == 0  # a regex is case-sensitive too
    assert edit.preview(manifest, "MORNING", "x", regex=True, ignore_case=True).count == 2
    # Plain text takes the pattern's characters and the replacement's backslashes literally.
    assert edit.preview(manifest, ".", r"\1").count == 0
    manifest.set_picture_captions([(pics["lady"], "a lady (1890).")])
    assert edit.preview(manifest, "(1890).", r"\1").changes[0].new == r"a lady \1"


@pytest.mark.parametrize("find, replacement, message", [
    ("(morning", "x", "'(morning' is not a regular expression: missing ), unterminated subpattern (at character 1)"),
    ("[a-", "x", "is not a regular expression: unterminated character set"),
    ("(morning)", r"\2", "the replacement '\\\\2' does not fit the pattern: invalid group reference 2"),
    ("", "x", "give the text to find: it is empty"),
])
def test_a_bad_pattern_is_told_plainly_and_writes_nothing(manifest, pics, find, replacement, message):
    before = captions(manifest)
    for run in (edit.preview, edit.apply):
        with pytest.raises(CaptionEditError) as error:
            run(manifest, find, replacement, regex=True)
        assert message in str(error.value)
    assert captions(manifest) == before


STALLING = "a" * 27 + "!"  # Python's re takes 6 s on it with (a+)+$, twice that with each more "a"


@pytest.mark.parametrize("find", [r"(a+)+$", r"(a|a)+$", r"(a|aa)+$", r"(\w|a)+$"])
def test_a_catastrophic_pattern_stops_within_a_second_with_a_message_and_writes_nothing(manifest, pics, find):
    manifest.set_picture_captions([(pics["lady"], STALLING), (pics["ship"], "a" * 30 + "!")])
    before, done = captions(manifest), len(actions(manifest))
    for run in (edit.preview, edit.apply):
        started = time.perf_counter()
        try:
            run(manifest, find, "x", regex=True)
        except CaptionEditError as error:
            assert "took too long" in str(error) and "nothing was changed" in str(error)
        assert time.perf_counter() - started < 1.0
    assert captions(manifest) == before and len(actions(manifest)) == done


def test_a_pattern_past_its_time_limit_is_told_plainly(manifest, pics):
    manifest.set_picture_captions([(pics["lady"], "a" * 40 + "!")])
    started = time.perf_counter()
    with pytest.raises(CaptionEditError, match=r"took too long \(more than 0.25 s on one caption"):
        edit.apply(manifest, r"(a|a)+$", "x", regex=True)  # 2**40 ways to split it: no engine finishes
    assert time.perf_counter() - started < 1.0
    assert captions(manifest)[pics["lady"]] == "a" * 40 + "!"


def test_the_shown_caption_turns_an_edited_legend_into_a_caption_and_keeps_the_legend(manifest, pics):
    changes = edit.apply(manifest, "MORN.", "MORNING.", shown=True)
    assert [(c.picture_id, c.old, c.new, c.source) for c in changes.changes] == [
        (pics["morn"], "SEPTEMBER\nMORN.", "SEPTEMBER MORNING.", "legend")]  # its lines joined
    row = manifest.picture(pics["morn"])
    assert (row["caption"], row["legend"]) == ("SEPTEMBER MORNING.", "SEPTEMBER\nMORN.")
    # The ship shows its typed caption, not its legend: the legend's "STAR" is not searched.
    assert edit.preview(manifest, "STAR", "PLANET", shown=True).count == 0
    model = edit.preview(manifest, "engraved", "cut", shown=True).changes
    assert [(c.picture_id, c.new, c.source) for c in model] == [(pics["cut"], "a morning coat, cut", "auto_caption")]
    # Without shown, pictures without a typed caption are not touched at all.
    assert edit.preview(manifest, "engraved", "cut").count == 0
    # Emptying a legend cannot hide it (the picture would show it again): no change.
    assert edit.preview(manifest, "THE SHIP MORNING STAR.", "", shown=True).count == 0


def test_the_filter_narrows_the_pictures(manifest, pics):
    b = manifest.picture(pics["lady"])["doc_id"]
    assert [c.picture_id for c in edit.preview(manifest, "orning", "x", Pictures(doc_id=b)).changes] == [pics["lady"]]
    assert edit.preview(manifest, "orning", "x", Pictures(ids=(pics["ship"],))).searched == 1
    assert edit.preview(manifest, "orning", "x", Pictures(where="x.page = :page", params={"page": 1})).count == 1
    manifest.set_picture_override(pics["ship"], False)  # the export does not write it
    kept = edit.preview(manifest, "orning", "x", Pictures(kept=True))
    assert [c.picture_id for c in kept.changes] == [pics["lady"]]
    manifest.delete_picture(pics["lady"])  # a deleted picture is never edited
    assert edit.preview(manifest, "orning", "x").count == 1


def test_use_legends_never_overwrites_a_typed_caption_unless_asked(manifest, pics):
    dry = edit.use_legends(manifest, dry_run=True)
    assert [(c.picture_id, c.new) for c in dry.changes] == [(pics["morn"], "SEPTEMBER MORN.")]
    assert manifest.picture(pics["morn"])["caption"] is None and dry.action is None
    done = edit.use_legends(manifest)
    assert captions(manifest)[pics["morn"]] == "SEPTEMBER MORN."
    assert captions(manifest)[pics["ship"]] == "a ship at morning"  # typed: kept
    assert captions(manifest)[pics["cut"]] is None  # no legend: left as it is
    overwritten = edit.use_legends(manifest, overwrite=True)
    assert [(c.picture_id, c.new) for c in overwritten.changes] == [(pics["ship"], "THE SHIP MORNING STAR.")]
    manifest.undo(overwritten.action)
    manifest.undo(done.action)
    assert captions(manifest)[pics["ship"]] == "a ship at morning" and captions(manifest)[pics["morn"]] is None


def test_copy_puts_a_legend_or_a_model_caption_into_one_pictures_caption(manifest, pics):
    copied = edit.copy(manifest, "auto_caption", [pics["cut"]])
    assert copied.count == 1 and manifest.picture(pics["cut"])["caption"] == "a morning coat, engraved"
    assert actions(manifest)[0]["description"] == "captioned picture 2 on p. 1 of a.pdf"
    assert edit.copy(manifest, "legend", [pics["ship"]]).count == 0  # a typed caption is kept
    assert manifest.picture(pics["ship"])["caption"] == "a ship at morning"
    edit.copy(manifest, "legend", [pics["ship"]], overwrite=True)
    assert manifest.picture(pics["ship"])["caption"] == "THE SHIP MORNING STAR."
    manifest.undo()
    assert manifest.picture(pics["ship"])["caption"] == "a ship at morning"
    with pytest.raises(CaptionEditError, match="there is no picture 999"):
        edit.copy(manifest, "legend", [pics["morn"], 999])
    assert manifest.picture(pics["morn"])["caption"] is None  # nothing written
    with pytest.raises(CaptionEditError, match="only a legend or a model's caption"):
        edit.copy(manifest, "caption", [pics["morn"]])


# -- the command line ---------------------------------------------------------------------------


def run_captions(*args):
    return subprocess.run([sys.executable, "-m", "curation", "captions", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def test_the_command_line_previews_applies_and_is_undone(manifest, pics, tmp_path):
    manifest.close()
    db = tmp_path / "m.sqlite"
    dry = run_captions("replace", "morning", "dawn", "-i", "--dry-run", "--db", db)
    assert dry.returncode == 0, dry.stderr
    assert 'a.pdf p. 2 picture 1: "a ship at morning" → "a ship at dawn"' in dry.stdout
    assert "2 captions of 4 pictures would change" in dry.stdout and "nothing written" in dry.stdout
    with Manifest(db) as m:
        assert m.picture(pics["ship"])["caption"] == "a ship at morning"
    only_b = run_captions("replace", "morning", "dawn", "-i", "--doc", "b.pdf", "--db", db)
    assert only_b.returncode == 0, only_b.stderr
    assert "1 caption of 1 picture changed" in only_b.stdout and "python -m curation undo" in only_b.stdout
    with Manifest(db) as m:
        assert (m.picture(pics["lady"])["caption"], m.picture(pics["ship"])["caption"]) == (
            "A lady, dawn dress", "a ship at morning")
    legends = run_captions("from-legends", "--db", db)
    assert legends.returncode == 0, legends.stderr
    assert '"SEPTEMBER\\nMORN." (legend) → "SEPTEMBER MORN."' in legends.stdout
    with Manifest(db) as m:
        assert m.picture(pics["morn"])["caption"] == "SEPTEMBER MORN."
        assert m.picture(pics["ship"])["caption"] == "a ship at morning"  # typed: kept without --overwrite


@pytest.mark.parametrize("args, message", [
    (["replace", "(morning", "x", "--regex"], "'(morning' is not a regular expression"),
    (["replace", "a", "b", "--doc", "c.pdf"], "no document 'c.pdf' in the manifest"),
])
def test_the_command_line_refuses_with_one_clear_line(manifest, pics, tmp_path, args, message):
    manifest.close()
    result = run_captions(*args, "--db", tmp_path / "m.sqlite")
    assert result.returncode in (1, 2) and message in result.stderr and "Traceback" not in result.stderr


def test_two_applies_cannot_grow_a_caption_past_the_limit(manifest, pics):
    """Before, two Applies of b -> 500 b's made one caption 10,000,000 characters long, which every visitor's
    Pictures view then downloaded. The limit holds where captions are written; the edit is refused whole,
    with the reason, in the preview as in Apply and on the command line."""
    from curation.manifest.caption_limit import CAPTION_CHARS

    manifest.set_picture_captions([(pics["lady"], "a b c")])
    before, done = captions(manifest), len(actions(manifest))
    for run in (edit.preview, edit.apply, edit.apply):
        with pytest.raises(CaptionEditError, match=r"1 caption would pass the limit of 500 characters "
                                                   r"\(picture 1 on p. 1 of b.pdf: 504\), so nothing was changed"):
            run(manifest, "b", "b" * 500)
    assert captions(manifest) == before and len(actions(manifest)) == done
    edit.apply(manifest, "b", "b" * 490)  # within the limit: written
    assert len(captions(manifest)[pics["lady"]]) == 494 <= CAPTION_CHARS
    with pytest.raises(CaptionEditError, match="over the limit of 500"):
        edit.preview(manifest, "b", "b" * 501)  # a replacement that can never fit
    cli = subprocess.run([sys.executable, "-m", "curation", "captions", "replace", "b", "bb",
                          "--db", str(manifest.path)], capture_output=True, text=True, cwd=ROOT)
    assert cli.returncode == 2 and "would pass the limit of 500" in cli.stderr and "Traceback" not in cli.stderr
    assert len(captions(manifest)[pics["lady"]]) == 494


def test_every_write_of_a_caption_is_bounded(manifest, pics):
    from curation.manifest.caption_limit import CaptionTooLong
    from curation.views import PageFilter, bulk_caption, picture_bulk
    from curation.views.picture_views import PictureFilter

    before = captions(manifest)
    with pytest.raises(CaptionTooLong, match="a caption of 501 characters is over the limit of 500"):
        manifest.set_picture_captions([(pics["morn"], "ok"), (pics["cut"], "x" * 501)])
    with pytest.raises(CaptionTooLong):
        picture_bulk.bulk_caption(manifest, None, PictureFilter(), "x" * 501)
    assert captions(manifest) == before  # none of either was written
    doc = manifest.picture(pics["lady"])["doc_id"]
    with pytest.raises(CaptionTooLong):
        manifest.set_caption(doc, 0, "y" * 501)
    with pytest.raises(CaptionTooLong):
        bulk_caption(manifest, None, PageFilter(doc_id=doc), "y" * 501)
    assert manifest.caption(doc, 0) is None
    manifest.set_picture_captions([(pics["cut"], "  " + "x" * 500 + "  ")])  # trimmed first: fits
    assert captions(manifest)[pics["cut"]] == "x" * 500


def test_a_plain_text_edit_is_bounded_in_time_too(manifest, pics, monkeypatch):
    monkeypatch.setattr(edit, "EDIT_SECONDS", 0.0)
    with pytest.raises(CaptionEditError, match=r"took too long \(more than 0 s in all"):
        edit.preview(manifest, "orning", "x")
