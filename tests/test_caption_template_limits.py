"""Caption templates take placeholder names only: a width (`{caption:x>100000000}`, a 100 MB caption per
image and per preview) or a conversion is refused before anything is filled in, and a caption past the
limit is refused with a message: the preview says so and the export leaves that image out, saying why."""

import ast
import time
import tracemalloc
import zipfile

import pytest

from curation import Manifest
from curation.export import ExportSettings, SettingsError, export
from curation.export.captions import MAX_CAPTION_CHARS, CaptionTooLong, render_caption

from apptest_support import ROOT, page, ran, shown
from test_export_cli import record_scores, repeated_scan_pdf

WIDE = "{trigger}, {caption:x>100000000}"
# A stored caption is at most 500 characters (curation.manifest.caption_limit): a template that takes it five times
# makes a caption past the export's limit.
LONG_CAPTION = "a lady " * 70
FIVE_TIMES = "{trigger}, " + ", ".join(["{caption}"] * 5)


def peak_bytes(call) -> int:
    """How far Python's allocations rose above where they were while `call` ran (it may raise)."""
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        try:
            call()
        except Exception:  # noqa: BLE001 - the caller checks what was raised
            pass
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def test_a_width_in_the_template_is_refused_without_allocating():
    with pytest.raises(SettingsError, match=r"\{caption:x>100000000\} in the caption template has a format"):
        ExportSettings(template=WIDE)
    assert peak_bytes(lambda: ExportSettings(template=WIDE)) < 1_000_000  # filling it in takes 100 MB


@pytest.mark.parametrize("template, shown", [("{trigger}, {caption!r}", "{caption!r}"),
                                             ("{trigger}, {page:>50}", "{page:>50}"),
                                             ("{trigger:.3}, {caption}", "{trigger:.3}"),
                                             ("{trigger}, {caption!s:^9}", "{caption!s}")])
def test_conversions_and_formats_are_refused_with_the_name_to_use(template, shown):
    with pytest.raises(SettingsError, match="placeholders take a name only") as refused:
        ExportSettings(template=template)
    assert shown in str(refused.value)


def test_the_renderer_refuses_a_width_itself():
    """The library's own entry point, whatever settings object (or none) led there."""
    assert peak_bytes(lambda: render_caption(WIDE, trigger="ohwx", class_word="x", caption="a")) < 1_000_000
    with pytest.raises(ValueError, match="takes? a name only"):
        render_caption(WIDE, trigger="ohwx", class_word="x", caption="a")


def test_a_very_long_template_is_refused():
    with pytest.raises(SettingsError, match="more than 1,000"):
        ExportSettings(template="{trigger}, " + "x" * 5_000)


def test_a_caption_past_the_limit_is_refused_with_a_message():
    assert render_caption("{trigger}, {caption}", trigger="ohwx", class_word="x", caption="a" * 1_000)
    with pytest.raises(CaptionTooLong, match=f"more than the limit of {MAX_CAPTION_CHARS:,}"):
        render_caption("{trigger}, {caption}", trigger="ohwx", class_word="x", caption="a" * 5_000,
                       doc="issue", page=3)


def test_the_export_leaves_out_an_image_whose_caption_is_too_long_and_says_why(tmp_path):
    pdf = repeated_scan_pdf(tmp_path / "issue.pdf", 2)
    with Manifest(tmp_path / "manifest.sqlite") as manifest:
        record_scores(manifest, pdf, [60, 70])
        manifest.set_caption(1, 1, LONG_CAPTION)
        report = export(manifest, tmp_path / "lora.zip", ExportSettings(size=256, template=FIVE_TIMES))
    assert report.images == 1
    [skipped] = report.skipped
    assert skipped["page"] == 2 and "characters long, more than the limit" in skipped["reason"]
    with zipfile.ZipFile(tmp_path / "lora.zip") as z:
        assert [len(z.read(n)) for n in z.namelist() if n.endswith(".txt")] == [len("ohwx")]


def test_the_export_page_says_why_as_a_viewer_types_the_width_template(tmp_path, monkeypatch):
    """The page as attacked: the template typed on the Export page (a viewer may preview), refused in words."""
    pdf = repeated_scan_pdf(tmp_path / "issue.pdf", 2)
    with Manifest(tmp_path / "data" / "manifest.sqlite") as manifest:
        record_scores(manifest, pdf, [60, 70])
        manifest.set_caption(1, 0, LONG_CAPTION)
    monkeypatch.setenv("CURATION_DB", str(tmp_path / "data" / "manifest.sqlite"))
    at = ran(page("pages/export.py"))
    at.text_input(key="export_template").set_value(WIDE)
    ran(at)
    assert any("placeholders take a name only" in shown(e.value) for e in at.error)
    at.text_input(key="export_template").set_value(FIVE_TIMES)
    ran(at)  # the preview of the page whose caption is too long says so, as a message
    assert "more than the limit of 2,000" in " ".join(shown(str(e.value)) for kind in ("error", "warning", "caption",
                                                                                        "markdown") for e in at.get(kind))


# A long field amplified by the template: its length is known from its parts before the caption is built -------

MILLION = "x" * 1_000_000


@pytest.mark.parametrize("placeholder, words", [("{trigger}", {"trigger": MILLION, "class_word": "c"}),
                                                ("{class}", {"trigger": "ohwx", "class_word": MILLION})])
def test_a_template_that_repeats_a_long_part_is_refused_without_building_the_caption(placeholder, words):
    """111 placeholders (999 characters, a template within its limit) of a million characters each made a
    111-million-character caption before its length was checked: now refused from the parts' lengths."""
    template = placeholder * (999 // len(placeholder)) if placeholder == "{trigger}" else "{trigger}" + "{class}" * 141
    started = time.perf_counter()
    with pytest.raises(CaptionTooLong, match="would be at least"):
        render_caption(template, caption="a", **words)
    assert time.perf_counter() - started < 1.0
    assert peak_bytes(lambda: render_caption(template, caption="a", **words)) < 4_000_000  # the input is 1 MB


@pytest.mark.parametrize("word", ["trigger", "class_word"])
def test_settings_refuse_a_long_word_and_a_template_that_multiplies_one(word):
    started = time.perf_counter()
    with pytest.raises(SettingsError, match="characters long, more than 100"):
        ExportSettings(template="{trigger}" * 111, **{word: MILLION})
    assert time.perf_counter() - started < 1.0
    assert peak_bytes(lambda: ExportSettings(template="{trigger}" * 111, **{word: MILLION})) < 4_000_000
    # Within the word's limit, the template's parts alone make every caption too long: refused before any caption.
    placeholder = "{trigger}" if word == "trigger" else "{class}"
    with pytest.raises(SettingsError, match="makes every caption longer than the limit of 2,000"):
        ExportSettings(template="{trigger}" + placeholder * 30, **{word: "y" * 90})


def test_commas_and_blanks_count_as_the_line_keeps_them():
    """The length known in advance is what the line keeps: blanks and empty parts drop out as before."""
    assert render_caption("{trigger},,{class}, ,{caption}", trigger=" ohwx  lady ", class_word=", ,",
                          caption=" a ,, b ") == "ohwx lady, a, b"
    assert render_caption("{trigger}" + "{class}" * 100, trigger="t", class_word=" , " * 1_000) == "t"


@pytest.mark.parametrize("key", ["export_trigger", "export_class"])
def test_the_export_page_refuses_a_million_character_field_at_once(tmp_path, monkeypatch, key):
    """A viewer sends a million characters for the trigger word (or the class) and a template of 111 of it:
    the page answers in well under a second with a refusal, and the server's memory stays where it was."""
    pdf = repeated_scan_pdf(tmp_path / "issue.pdf", 2)
    with Manifest(tmp_path / "data" / "manifest.sqlite") as manifest:
        record_scores(manifest, pdf, [60, 70])
    monkeypatch.setenv("CURATION_DB", str(tmp_path / "data" / "manifest.sqlite"))
    at = ran(page("pages/export.py"))
    ran(at)  # warm: the preview of the default settings cached
    at.text_input(key="export_template").set_value("{trigger}" * 111 if key == "export_trigger" else
                                                   "{trigger}" + "{class}" * 141)
    at.text_input(key=key).set_value(MILLION)
    started = time.perf_counter()
    peak = peak_bytes(lambda: ran(at))
    assert time.perf_counter() - started < 5.0  # the page's own run; 66 s when the caption was built
    assert peak < 50_000_000, peak  # 111 million characters when it was built
    assert any("makes every caption longer than the limit" in shown(e.value) for e in at.error), \
        [e.value for e in at.error]
    assert len(at.text_input(key=key).value) == 100  # the server keeps no more than the field takes


def test_every_text_field_takes_at_most_so_many_characters():
    """Each text input and area of every page names its max_chars (Streamlit's server cuts what a browser
    sends for it to that length)."""
    missing = []
    for script in [ROOT / "dashboard.py", *sorted((ROOT / "pages").glob("*.py"))]:
        for node in ast.walk(ast.parse(script.read_text())):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("text_input", "text_area", "chat_input")
                    and "max_chars" not in {keyword.arg for keyword in node.keywords}):
                missing.append(f"{script.name}:{node.lineno}")
    assert not missing, missing
