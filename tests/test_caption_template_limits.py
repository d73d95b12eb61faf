"""Caption templates take placeholder names only: a width (`{caption:x>100000000}`, a 100 MB caption per
image and per preview) or a conversion is refused before anything is filled in, and a caption past the
limit is refused with a message: the preview says so and the export leaves that image out, saying why."""

import tracemalloc
import zipfile

import pytest

from curation import Manifest
from curation.export import ExportSettings, SettingsError, export
from curation.export.captions import MAX_CAPTION_CHARS, CaptionTooLong, render_caption

from apptest_support import page, ran, shown
from test_export_cli import record_scores, repeated_scan_pdf

WIDE = "{trigger}, {caption:x>100000000}"


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
        manifest.set_caption(1, 1, "a lady " * 1_000)
        report = export(manifest, tmp_path / "lora.zip", ExportSettings(size=256, template="{trigger}, {caption}"))
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
        manifest.set_caption(1, 0, "a lady " * 1_000)
    monkeypatch.setenv("CURATION_DB", str(tmp_path / "data" / "manifest.sqlite"))
    at = ran(page("pages/export.py"))
    at.text_input(key="export_template").set_value(WIDE)
    ran(at)
    assert any("placeholders take a name only" in shown(e.value) for e in at.error)
    at.text_input(key="export_template").set_value("{trigger}, {caption}")
    ran(at)  # the preview of the page whose caption is too long says so, as a message
    assert "more than the limit of 2,000" in " ".join(shown(str(e.value)) for kind in ("error", "warning", "caption",
                                                                                        "markdown") for e in at.get(kind))
