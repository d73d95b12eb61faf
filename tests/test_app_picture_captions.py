"""Captions in Review's Pictures view: each card shows the printed legend and the model's caption beside the
curator's, shown literally, and copies either into the caption with one click (asking before it replaces a
typed one); find and replace works on the captions of the view, with a preview and its count, as one action
that Undo takes back; the legends become the view's captions, typed ones kept; a viewer changes nothing; the
caption job's panel and a running caption job are shown."""

import html
import re

import pytest

from apptest_support import drawn, grid_cards, grid_event, page, ran, shown, signed_in_as, texts
from curation import Manifest
from curation.captions.job import KIND
from inference.captioner import MODEL_DIR_ENV
from test_app_pictures import caption_on_card, open_picture, picture_ids, pictures_view, with_pictures
from test_auth import CURATOR, SECRETS, VIEWER, as_user, refused

LEGEND = "THE <b>NEW</b> BONNET **bold** [x](http://example.com/a.png) " + "and a long tail " * 10
MODEL_CAPTION = "a lady in a :red[hat] holding a parasol"


@pytest.fixture
def db(tmp_path, monkeypatch):
    path = tmp_path / "data" / "manifest.sqlite"
    monkeypatch.setenv("CURATION_DB", str(path))
    return path


@pytest.fixture(autouse=True)
def no_model(tmp_path, monkeypatch):
    """The captioning model's folder is an empty one of the test's: nothing installed, nothing downloaded."""
    monkeypatch.setenv(MODEL_DIR_ENV, str(tmp_path / "models" / "captioner"))


def with_words(db, pages=2) -> tuple[int, int]:
    """Pictures as with_pictures; the first engraving has a printed legend and a model's caption."""
    with_pictures(db, pages=pages)
    engraving, stock = picture_ids(db)
    with Manifest(db) as manifest:
        manifest.set_auto_captions([(engraving, MODEL_CAPTION, "tiny-blip")])
        manifest.conn.execute("UPDATE pictures SET legend = ? WHERE id = ?", (LEGEND, engraving))
        manifest.conn.commit()
    return engraving, stock


def set_legends(db, legends: dict[int, str]):
    with Manifest(db) as manifest:
        manifest.conn.executemany("UPDATE pictures SET legend = ? WHERE id = ?",
                                  [(text, pid) for pid, text in legends.items()])
        manifest.conn.commit()


def captions(db) -> dict[int, str | None]:
    with Manifest(db) as manifest:
        return {row["id"]: row["caption"] for row in manifest.picture_rows()}


def card_buttons(at, picture_id, event: str) -> dict[str, str]:
    """A card's buttons that send `event` ("copy", "replace"): {their value (the source): their tooltip}."""
    found = re.findall(r'<button [^>]*data-event="%s" title="([^"]*)"[^>]*data-value="([^"]*)"[^>]*>' % event,
                       grid_cards(at)[str(picture_id)])
    return {value: html.unescape(title) for title, value in found}


def placeholder(at, picture_id) -> str:
    card = grid_cards(at)[str(picture_id)]
    return html.unescape(re.search(r'class="cg-caption"[^>]* placeholder="([^"]*)"', card).group(1))


def button(at, key):
    return next(b for b in at.button if b.key == key)


def click(at, key):
    button(at, key).click()
    return ran(at)


def undo(at):
    next(b for b in at.button if b.label == "Undo").click()
    return ran(at)


def tool(at, name):
    """Open one of the caption tools (find and replace, legends as captions, the model) below the filters."""
    at.segmented_control(key="pictures_caption_tool").set_value(name)
    return ran(at)


def replace_form(at, find, replacement="", regex=False, ignore_case=False, shown_caption=False):
    at = tool(at, "replace")
    at.text_input(key="replace_find").set_value(find)
    at.text_input(key="replace_with").set_value(replacement)
    at.checkbox(key="replace_regex").set_value(regex)
    at.checkbox(key="replace_ignore_case").set_value(ignore_case)
    at.checkbox(key="replace_shown").set_value(shown_caption)
    next(b for b in at.button if b.label == "Preview").click()
    return ran(at)


def test_a_card_shows_the_legend_and_the_models_caption_literally_and_whole_on_hover(db):
    engraving, stock = with_words(db)
    at = pictures_view()
    card = grid_cards(at)[str(engraving)]
    (legend,) = re.findall(r'<div class="cg-line" title="Printed legend: ([^"]*)">([^<]*)</div>', card)
    assert "THE &lt;b&gt;NEW&lt;/b&gt; BONNET **bold** [x]" in legend[1]  # escaped: shown as it is written
    assert legend[1].endswith("…") and len(html.unescape(legend[1])) < len(LEGEND)  # one short line
    assert html.unescape(legend[0]).startswith("THE <b>NEW</b> BONNET **bold**")
    assert html.unescape(legend[0]).endswith("and a long tail")  # the whole text on hover
    assert "a lady in a :red[hat] holding a parasol" in card
    assert set(card_buttons(at, engraving, "copy")) == {"legend", "auto_caption"}  # one click each
    assert not card_buttons(at, stock, "copy")  # none to copy
    assert placeholder(at, engraving).startswith("THE <b>NEW</b> BONNET")  # what it shows without yours: the legend


def test_one_click_copies_a_legend_and_asks_before_replacing_a_typed_caption(db):
    engraving, stock = with_words(db)
    at = grid_event(pictures_view(), "copy", engraving, "legend")
    assert captions(db)[engraving] == " ".join(LEGEND.split())
    assert any("printed legend is now the caption of picture 1 on p. 1" in shown(str(t.value)) for t in at.toast)
    assert caption_on_card(at, engraving) == " ".join(LEGEND.split())  # the card shows it at once
    at = grid_event(at, "copy", engraving, "auto_caption")  # a caption is there now: ask first
    assert captions(db)[engraving] == " ".join(LEGEND.split())
    assert list(card_buttons(at, engraving, "replace")) == ["auto_caption"]  # "Replace?"
    at = grid_event(at, "replace", engraving, "auto_caption")
    assert captions(db)[engraving] == MODEL_CAPTION
    undo(at)
    assert captions(db)[engraving] == " ".join(LEGEND.split())


def test_the_large_view_shows_the_three_captions_and_copies_too(db):
    engraving, stock = with_words(db)
    at = open_picture(pictures_view(), engraving)
    assert "Printed legend: THE <b>NEW</b> BONNET" in texts(at)
    assert f"Model's caption (tiny-blip): {MODEL_CAPTION}" in texts(at)
    click(at, f"picture-use-auto_caption-dialog-{engraving}")
    assert captions(db)[engraving] == MODEL_CAPTION


def test_find_and_replace_previews_the_views_changes_then_applies_them_as_one_action(db):
    with_pictures(db, pages=3)
    with Manifest(db) as manifest:
        rows = list(manifest.picture_rows(order="x.page, x.number"))
        manifest.set_picture_captions([(row["id"], f"Fig. {row['page'] + 1}. A Lady, p{row['page']}") for row in rows])
    at = pictures_view()
    at.segmented_control(key="pic_decision").set_value("kept")  # the engravings only: 3 of the 6 pictures
    ran(at)
    at = replace_form(at, "a lady", "a woman", ignore_case=True)
    assert "**3 captions change** of the 3 pictures in this view:" in texts(at)
    table = at.table[0].value
    assert list(table["Page"]) == [1, 2, 3] and list(table["Picture"]) == [1, 1, 1]
    assert shown(table["Old"][0]) == "Fig. 1. A Lady, p0" and shown(table["New"][0]) == "Fig. 1. a woman, p0"
    assert set(captions(db).values()) == {f"Fig. {p}. A Lady, p{p - 1}" for p in (1, 2, 3)}  # nothing yet
    at = click(at, "pictures-replace-apply")
    after = captions(db)
    assert sorted(text for text in after.values() if "woman" in text) == [f"Fig. {p}. a woman, p{p - 1}"
                                                                         for p in (1, 2, 3)]
    assert sum("A Lady" in text for text in after.values()) == 3  # the stock cuts, not in the view
    assert any("Changed 3 captions" in str(t.value) for t in at.toast)
    undo(at)
    assert sum("A Lady" in text for text in captions(db).values()) == 6  # one Undo takes it all back


def test_a_regular_expression_and_the_shown_caption(db):
    engraving, stock = with_words(db, pages=1)
    at = replace_form(pictures_view(), r"^THE <b>(\w+)</b> BONNET", r"The \1 bonnet", regex=True,
                      shown_caption=True)
    assert "**1 caption changes** of the 2 pictures in this view:" in texts(at)
    click(at, "pictures-replace-apply")
    assert captions(db)[engraving].startswith("The NEW bonnet **bold**")
    with Manifest(db) as manifest:
        assert manifest.picture(engraving)["legend"] == LEGEND  # the legend stays as printed


def test_a_bad_regular_expression_is_a_message(db):
    with_pictures(db, pages=1)
    at = replace_form(pictures_view(), "(unclosed", "x", regex=True)
    message = next(e.value for e in at.error)
    assert "'(unclosed' is not a regular expression" in shown(message) and "missing )" in shown(message)
    assert not any(b.key == "pictures-replace-apply" for b in at.button)


def test_a_pattern_bounded_when_compiled_and_a_caption_bounded_when_written_are_said_in_the_preview(db):
    with_pictures(db, pages=1)
    with Manifest(db) as manifest:
        manifest.set_picture_captions([(row["id"], "a b c") for row in manifest.picture_rows()])
    at = replace_form(pictures_view(), "(?:(?:(?:a{100}){100}){100}){6}", "x", regex=True)
    assert "repeats ask for more than 10,000" in shown(next(e.value for e in at.error))
    at = replace_form(pictures_view(), "b", "b" * 500)
    message = shown(next(e.value for e in at.error))
    assert "would pass the limit of 500 characters" in message and "nothing was changed" in message
    assert not any(b.key == "pictures-replace-apply" for b in at.button)
    assert set(captions(db).values()) == {"a b c"}


def test_the_legends_become_the_views_captions_and_a_typed_caption_is_kept(db):
    with_pictures(db, pages=2)
    first, second = picture_ids(db, 0, 1)[0], picture_ids(db, 1, 1)[0]
    set_legends(db, {first: "A WET DAY.", second: "SEPTEMBER MORN."})
    with Manifest(db) as manifest:
        manifest.set_picture_captions([(second, "her own caption")])
    at = click(tool(pictures_view(), "legends"), "pictures-legends")
    assert "**1 of the 4 pictures** in this view get their printed legend as caption; 1 picture keeps the " \
           "caption you typed." in texts(at)
    assert captions(db)[first] is None  # the count comes first
    at = click(at, "pictures-legends-confirm")
    assert captions(db)[first] == "A WET DAY." and captions(db)[second] == "her own caption"
    at.checkbox(key="legends_overwrite").check()
    at = click(ran(at), "pictures-legends")
    assert "**1 of the 4 pictures** in this view get their printed legend as caption." in texts(at)
    click(at, "pictures-legends-confirm")
    assert captions(db)[second] == "SEPTEMBER MORN."  # only when asked


def test_a_viewer_sees_the_captions_and_cannot_change_one(db):
    engraving, stock = with_words(db)
    with Manifest(db) as manifest:
        manifest.set_picture_captions([(stock, "A Lady")])
    at = page("pages/review.py")
    at.secrets.update(SECRETS)
    at.user = signed_in_as(VIEWER)
    at = pictures_view(at)
    assert "BONNET" in grid_cards(at)[str(engraving)]
    use = card_buttons(at, engraving, "copy")
    assert use and all(title.startswith("Only curators") for title in use.values())
    assert all(button.endswith(" disabled>") for button in re.findall(r'<button [^>]*data-event="copy"[^>]*>',
                                                                       grid_cards(at)[str(engraving)]))
    at = tool(at, "replace")
    assert at.text_input(key="replace_find").disabled and at.text_input(key="replace_with").disabled
    assert button(tool(at, "legends"), "pictures-legends").disabled
    # A curator's page still open after the role was taken away: the controls reach the callbacks, which refuse.
    at = pictures_view(as_user("pages/review.py", CURATOR))
    at.secrets["curation"] = {"curators": [], "viewers": [CURATOR]}
    at = grid_event(at, "copy", engraving, "legend")
    assert refused(at)
    at = click(tool(pictures_view(as_user("pages/review.py", CURATOR)), "legends"), "pictures-legends")
    at.secrets["curation"] = {"curators": [], "viewers": [CURATOR]}
    assert refused(click(at, "pictures-legends-confirm"))
    at = replace_form(pictures_view(as_user("pages/review.py", CURATOR)), "Lady", "Gent")
    at.secrets["curation"] = {"curators": [], "viewers": [CURATOR]}
    assert refused(click(at, "pictures-replace-apply"))
    assert captions(db) == {engraving: None, stock: "A Lady", **{i: None for i in picture_ids(db, 1)}}


def test_the_caption_jobs_panel_is_in_the_pictures_view_and_a_running_job_in_the_sidebar(db):
    with_pictures(db, pages=1)
    at = tool(pictures_view(), "model")
    assert "**The captioning model is not installed** in" in texts(at)  # said before Start
    assert [b.label for b in at.button if b.key == "caption_start"] == ["Start"]
    with Manifest(db) as manifest:
        job_id = manifest.start_job(KIND, {})  # this process stands in for the caption job
        manifest.update_job(job_id, done=3, total=8)
    at = ran(page("dashboard.py"))
    assert "Captioning running: 3/8 pictures" in " ".join(str(e.value) for e in at.sidebar.caption)


def test_the_export_preview_shows_the_caption_each_picture_gets(tmp_path, monkeypatch):
    from test_export_cli import record_scores, repeated_scan_pdf

    db = tmp_path / "data" / "manifest.sqlite"
    monkeypatch.setenv("CURATION_DB", str(db))
    pdf = repeated_scan_pdf(tmp_path / "issue.pdf", 2)
    with Manifest(db) as manifest:
        doc_id = record_scores(manifest, pdf, [60, 70])  # both kept at 45
        manifest.set_pictures(doc_id, 0, [(20, 20, 400, 500, 20.0)])
    engraving = picture_ids(db)[0]
    set_legends(db, {engraving: "A WET\nDAY."})
    with Manifest(db) as manifest:
        manifest.set_auto_captions([(engraving, "a lady with an umbrella", "tiny-blip")])
        manifest.set_picture_override(engraving, True)  # exported, whatever the rule makes of this test page

    def previewed_captions():
        return [str(code.value) for code in drawn(page("pages/export.py")).code][:2]

    assert previewed_captions() == ["ohwx, engraving, A WET DAY.", "ohwx, engraving"]  # the legend first
    grid_event(pictures_view(), "copy", engraving, "auto_caption")
    assert previewed_captions() == ["ohwx, engraving, a lady with an umbrella", "ohwx, engraving"]  # yours wins


def test_a_wrong_legend_is_switched_off_kept_shown_and_undone(db):
    engraving, _ = with_words(db)
    at = open_picture(pictures_view(), engraving)
    at = click(at, f"picture-switch-legend-{engraving}")  # "No legend"
    with Manifest(db) as manifest:
        assert manifest.picture(engraving)["no_legend"] == 1
    assert any("switched off" in str(t.value) for t in at.toast)
    assert "Printed legend, switched off: ~~THE <b>NEW</b> BONNET" in texts(at)  # shown struck out
    assert placeholder(at, engraving).startswith("a lady in a")  # the caption it gets now: the model's, not the legend
    assert button(at, f"picture-switch-legend-{engraving}").label == "Use it again"
    undo(at)
    with Manifest(db) as manifest:
        assert manifest.picture(engraving)["no_legend"] == 0


def test_the_kind_is_suggested_and_the_curator_changes_it(db):
    engraving, _ = with_words(db)
    with Manifest(db) as manifest:
        manifest.conn.execute("UPDATE pictures SET kind_suggested = 'engraving'")
        manifest.conn.commit()
    at = open_picture(pictures_view(), engraving)
    kind = next(s for s in at.selectbox if s.key.startswith(f"picture-kind-{engraving}-"))
    assert kind.value is None and kind.format_func(None) == "Engraving (suggested from its look)"
    kind.set_value("cartoon")
    at = ran(at)
    with Manifest(db) as manifest:
        assert manifest.picture(engraving)["kind"] == "cartoon"
    assert any("is a cartoon" in str(t.value) for t in at.toast)


def test_with_no_kind_suggested_the_kind_box_says_the_caption_uses_the_class_word(db):
    engraving, _ = with_words(db)  # the picture job has not suggested a kind
    at = open_picture(pictures_view(), engraving)
    kind = next(s for s in at.selectbox if s.key.startswith(f"picture-kind-{engraving}-"))
    assert kind.value is None
    assert kind.format_func(None) == "None suggested: choose one, or the caption uses the export's class word"


def test_a_failed_caption_job_is_said_once_above_start(db):
    with_pictures(db, pages=1)
    with Manifest(db) as manifest:
        job_id = manifest.start_job(KIND, {})
        manifest.finish_job(job_id, "failed", "the model could not be downloaded: no internet.")
    at = tool(pictures_view(), "model")
    (failed,) = [e.value for e in at.error if "Captioning failed" in e.value]
    assert "no internet. The log is in" in failed and ".." not in failed  # one full stop
    said = [getattr(e, "value", getattr(e, "label", "")) for e in at.main]
    assert said.index(failed) < next(n for n, e in enumerate(at.main) if getattr(e, "key", None) == "caption_start")
