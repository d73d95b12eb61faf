"""A picture's printed legend is read by OCR; body text beside or under it is not; a page without one
gets none. Pages are generated: an "engraving" (random hatching) with its legend under it, in several
fonts and sizes, Latin and Cyrillic, as a vector page and as a scan."""

import difflib
import pathlib

import numpy as np
import pymupdf
import pytest

from curation.captions import legend as legends
from curation.captions.legend import check_languages, engine_note, installed_languages, read_legends

needs_engine = pytest.mark.skipif(not installed_languages(), reason=f"no OCR engine: {engine_note()}")

PAGE = (432, 576)  # 6 x 8 inches
PICTURE = (54, 72, 234, 252)  # points: the engraving in the left column
BODY = ("The committee met on Tuesday last and resolved that the bridge over the river shall be "
        "rebuilt in stone before the winter sets in, at a cost not exceeding four thousand pounds, "
        "to be raised by subscription among the merchants of the town and the county at large. ") * 3


def engraving(page: pymupdf.Page, rect, seed: int = 0) -> None:
    """Random hatching in a few shapes inside `rect`, framed: what the picture finder takes for line art."""
    rng = np.random.default_rng(seed)
    x0, y0, x1, y1 = rect
    shape = page.new_shape()
    shape.draw_rect(pymupdf.Rect(rect))
    for _ in range(6):
        r = rng.uniform(15, min(45, (x1 - x0) / 2 - 4, (y1 - y0) / 2 - 4))
        cx, cy = rng.uniform(x0 + r + 2, x1 - r - 2), rng.uniform(y0 + r + 2, y1 - r - 2)
        angle = rng.uniform(0, np.pi)
        for k in np.arange(-r, r, 2.5):
            dx, dy = np.cos(angle), np.sin(angle)
            half = np.sqrt(max(r * r - k * k, 0))
            a = (cx - dy * k - dx * half, cy + dx * k - dy * half)
            b = (cx - dy * k + dx * half, cy + dx * k + dy * half)
            shape.draw_line(_clip(a, rect), _clip(b, rect))
        shape.draw_circle((cx, cy), r)
    shape.finish(color=(0, 0, 0), width=0.7)
    shape.commit()


def _clip(point, rect):
    return (min(max(point[0], rect[0]), rect[2]), min(max(point[1], rect[1]), rect[3]))


def centred_line(page, text: str, y: float, font: pymupdf.Font, size: float, left=PICTURE[0], right=PICTURE[2]):
    writer = pymupdf.TextWriter(page.rect)
    width = font.text_length(text, fontsize=size)
    writer.append(((left + right - width) / 2, y), text, font=font, fontsize=size)
    writer.write_text(page)


def body_text(page, rect, size: float = 8) -> None:
    """A justified paragraph filling `rect` (what does not fit is left out)."""
    writer = pymupdf.TextWriter(page.rect)
    writer.fill_textbox(pymupdf.Rect(rect), BODY, font=pymupdf.Font("tiro"), fontsize=size,
                        align=pymupdf.TEXT_ALIGN_JUSTIFY)
    writer.write_text(page)


def legend_page(lines, font="tiro", size=9.0, seed=0, under=True, beside=True) -> pymupdf.Document:
    """A page with the engraving, its legend (`lines`; none when empty), body text in the next column
    and a paragraph under the legend after a gap."""
    doc = pymupdf.open()
    page = doc.new_page(width=PAGE[0], height=PAGE[1])
    engraving(page, PICTURE, seed)
    y = PICTURE[3] + size * 1.4
    for line in lines:
        centred_line(page, line, y, pymupdf.Font(font), size)
        y += size * 1.25
    if beside:
        body_text(page, (252, 72, 396, 400))
    if under:
        body_text(page, (PICTURE[0], y + 14, PICTURE[2], 520))
    return doc


def as_scan(doc: pymupdf.Document, dpi: int = 200) -> pymupdf.Document:
    """The page as a scanner gives it: one gray JPEG covering the page."""
    pix = doc[0].get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY)
    scan = pymupdf.open()
    page = scan.new_page(width=doc[0].rect.width, height=doc[0].rect.height)
    page.insert_image(page.rect, stream=pix.tobytes("jpeg", jpg_quality=85))
    return scan


def reference_box(rect=PICTURE):
    return tuple(round(v * 2) for v in rect)  # points to reference pixels (144 dpi)


def accuracy(read: str, printed: str) -> float:
    """Share of the printed characters read right (1 - edit distance / length, by difflib's matching)."""
    matcher = difflib.SequenceMatcher(None, read, printed, autojunk=False)
    return sum(block.size for block in matcher.get_matching_blocks()) / max(len(printed), 1)


LATIN = [
    (["SEPTEMBER MORN."], "tiro", 9.0),
    (["A WET DAY."], "helv", 11.0),
    (["Fig. 3. The new bridge over the Thames,", "seen from the south bank."], "tiro", 7.0),
    (["Die Schnell- und Zeigerwage."], "tibo", 8.0),
    (["Le Pont Neuf, vu du quai."], "cour", 9.0),
]


@needs_engine
@pytest.mark.parametrize("lines, font, size", LATIN)
def test_the_legend_under_a_picture_is_read(lines, font, size):
    doc = legend_page(lines, font, size)
    [found] = read_legends(doc, 0, [reference_box()])
    assert found is not None
    assert accuracy(found.text, " ".join(lines)) >= 0.9, found.text
    assert 0 < found.confidence <= 1


@needs_engine
def test_a_scanned_page_is_read_at_ocr_resolution():
    lines = ["Fig. 7. Visiting dress of grey silk."]
    doc = as_scan(legend_page(lines, "tiro", 7.0), dpi=200)
    [found] = read_legends(doc, 0, [reference_box()])
    assert found is not None and accuracy(found.text, lines[0]) >= 0.9, found


@needs_engine
def test_a_cyrillic_legend_is_read():
    if not {"rus"} <= installed_languages():
        pytest.skip("Tesseract's Russian data is not installed (apt-get install tesseract-ocr-rus)")
    if not pymupdf.Font("tiro").has_glyph(ord("Ж")):
        pytest.skip("PyMuPDF's built-in Times has no Cyrillic here")
    lines = ["Рис. 3. Визитное платье."]
    doc = legend_page(lines, "tiro", 10.0)
    [found] = read_legends(doc, 0, [reference_box()], languages="rus+eng")
    assert found is not None and accuracy(found.text, lines[0]) >= 0.85, found


@needs_engine
def test_a_title_over_the_picture_is_read_when_none_is_under_it():
    doc = legend_page([], under=False)
    centred_line(doc[0], "THE HARVEST HOME.", PICTURE[1] - 10, pymupdf.Font("tibo"), 10)
    [found] = read_legends(doc, 0, [reference_box()])
    assert found is not None and accuracy(found.text, "THE HARVEST HOME.") >= 0.9, found


@needs_engine
@pytest.mark.parametrize("scan", [False, True])
def test_a_picture_without_a_legend_gets_none_though_body_text_is_beside_and_under_it(scan):
    doc = legend_page([])
    doc = as_scan(doc) if scan else doc
    assert read_legends(doc, 0, [reference_box()]) == [None]


@needs_engine
def test_body_text_running_on_under_a_narrow_picture_is_not_its_legend():
    """Text that flows round a picture and on under it spans the column, wider than the picture."""
    doc = pymupdf.open()
    page = doc.new_page(width=PAGE[0], height=PAGE[1])
    picture = (168, 72, 264, 168)  # in the middle of the column: the text under it is centred too
    engraving(page, picture)
    body_text(page, (274, 72, 378, 170))
    body_text(page, (54, 176, 378, 197))  # two lines, then paper: only their width tells them from a legend
    assert read_legends(doc, 0, [reference_box(picture)]) == [None]


@needs_engine
def test_a_paragraph_under_a_picture_is_not_its_legend():
    """Six lines within the picture's width, then paper: too many lines for a legend."""
    doc = legend_page([], under=False, beside=False)
    body_text(doc[0], (PICTURE[0], PICTURE[3] + 12, PICTURE[2], PICTURE[3] + 72))
    assert read_legends(doc, 0, [reference_box()]) == [None]


@needs_engine
def test_an_engravers_credit_under_a_corner_is_passed_over_for_the_title():
    doc = legend_page([], under=False)
    page = doc[0]
    page.insert_text((PICTURE[0] + 2, PICTURE[3] + 8), "BOSTON ENGRAVING CO.", fontsize=5, fontname="helv")
    centred_line(page, "A WET DAY.", PICTURE[3] + 30, pymupdf.Font("tiro"), 11)
    [found] = read_legends(doc, 0, [reference_box()])
    assert found is not None and accuracy(found.text, "A WET DAY.") >= 0.9 and "BOSTON" not in found.text, found


@needs_engine
def test_a_small_cut_in_an_advertisement_gets_no_legend():
    """Text round a stock cut (a manicule, a pair of boots) is the advertisement's, not a legend."""
    doc = pymupdf.open()
    page = doc.new_page(width=PAGE[0], height=PAGE[1])
    cut = (100, 100, 160, 150)  # under one square inch
    engraving(page, cut)
    centred_line(page, "FINE BOOTS.", cut[3] + 12, pymupdf.Font("tibo"), 9, cut[0], cut[2])
    assert read_legends(doc, 0, [reference_box(cut)]) == [None]
    assert read_legends(legend_page(["FINE BOOTS."]), 0, [reference_box()])[0] is not None


@needs_engine
def test_each_picture_gets_its_own_legend():
    doc = legend_page(["Before taking."], under=False, beside=False)
    page = doc[0]
    other = (252, 72, 396, 252)
    engraving(page, other, seed=3)
    centred_line(page, "After taking.", other[3] + 12, pymupdf.Font("tiro"), 9, other[0], other[2])
    found = read_legends(doc, 0, [reference_box(), reference_box(other)])
    assert [accuracy(f.text, t) >= 0.9 for f, t in zip(found, ["Before taking.", "After taking."])] == [True, True]


@needs_engine
def test_an_advertisements_lettering_under_its_cut_is_not_its_legend():
    """A stack of display lines of several sizes with no gap between ("THE TRUE / DIGESTIVE FLUID"), read
    as its own first line before: the advertisement's lettering, not a title standing apart."""
    doc = legend_page([], under=False)
    page = doc[0]
    y = PICTURE[3] + 12
    for text, size in (("THE TRUE", 7), ("DIGESTIVE FLUID", 14), ("OR", 7), ("GASTRIC JUICE", 14)):
        centred_line(page, text, y + size * 0.8, pymupdf.Font("tibo"), size)
        y += size * 1.25
    body_text(page, (PICTURE[0], y + 4, PICTURE[2], y + 60))
    assert read_legends(doc, 0, [reference_box()]) == [None]


@needs_engine
def test_a_thick_rule_under_the_legend_ends_it():
    """A scan thickens a rule to the height of small type: still a rule, so the headline under it is not
    taken for type of another size in the legend's stack."""
    doc = legend_page(["SEPTEMBER MORN."], under=False)
    page = doc[0]
    rule_y = PICTURE[3] + 9 * 1.4 + 8
    page.draw_line((PICTURE[0], rule_y), (PICTURE[2], rule_y), color=(0, 0, 0), width=3)
    centred_line(page, "FLIER DOWNS FIVE", rule_y + 24, pymupdf.Font("tibo"), 18)
    [found] = read_legends(doc, 0, [reference_box()])
    assert found is not None and accuracy(found.text, "SEPTEMBER MORN.") >= 0.9, found


@needs_engine
def test_a_stroke_of_the_picture_reaching_down_to_its_legend_does_not_hide_it():
    """A rope or a leg drawn past the picture's box joins the legend's line to the picture's edge."""
    doc = legend_page(["The ferry at Richmond."], under=False)
    page = doc[0]
    page.draw_line((PICTURE[0] + 20, PICTURE[3] - 2), (PICTURE[0] + 30, PICTURE[3] + 14), color=(0, 0, 0), width=1.2)
    [found] = read_legends(doc, 0, [reference_box()])
    assert found is not None and accuracy(found.text, "The ferry at Richmond.") >= 0.9, found


MASTHEAD_PRINT = ["PRINTED AND PUBLISHED AT KATOOMBA EVERY FRIDAY MORNING.",
                  "Circulating in Katoomba, Lithgow, Jenolan Caves, Mount Irvine, Mount Wilson, Bell, Mount Victoria, "
                  "Blackheath, Medlow Bath, Leura, Wentworth Falls,",
                  "Lawson, Hazelbrook, Woodford, Linden, Faulconbridge, Springwood, Valley Heights, Blaxland, "
                  "Glenbrook, Emu Plains, the Commonwealth and Foreign Parts."]


@needs_engine
def test_a_mastheads_small_print_under_its_picture_is_not_a_legend():
    """Lines of small print run across the page under a masthead's engraving: more characters a line than
    a title is set in."""
    doc = pymupdf.open()
    page = doc.new_page(width=PAGE[0], height=PAGE[1])
    masthead = (18, 36, 414, 120)
    engraving(page, masthead, seed=5)
    y = masthead[3] + 10
    for line in MASTHEAD_PRINT:
        centred_line(page, line, y, pymupdf.Font("tiro"), 5.5, masthead[0], masthead[2])
        y += 7
    [found] = read_legends(doc, 0, [reference_box(masthead)])
    assert found is None, found
    assert legends.is_legend(" ".join(MASTHEAD_PRINT[:1]), 0.95, 1)  # its first line alone would pass as a title


def test_a_read_with_little_confidence_is_no_legend():
    assert legends.is_legend("SEPTEMBER MORN.", 0.95, 1)
    assert not legends.is_legend("KKKKKKK KKK AK KR RRR ROR OK", legends.MIN_CONFIDENCE - 0.01, 1)
    assert not legends.is_legend("|", 0.99, 1)


def test_legend_languages_are_checked():
    assert check_languages("ENG + deu+eng") == "eng+deu"
    with pytest.raises(ValueError, match="language code"):
        check_languages("eng;rm -rf")
    with pytest.raises(ValueError, match="at least one"):
        check_languages(" + ")


@needs_engine
def test_a_language_that_is_not_installed_is_refused():
    with pytest.raises(ValueError, match="not installed: xyz"):
        check_languages("eng+xyz")


def test_without_the_engine_the_note_says_how_to_get_legends(monkeypatch):
    monkeypatch.setattr(legends, "tessdata_folder", lambda: None)
    legends.installed_languages.cache_clear()
    try:
        assert legends.installed_languages() == frozenset()
        assert "apt-get install tesseract-ocr-eng" in legends.engine_note()
    finally:
        legends.installed_languages.cache_clear()


def ingest_folder(tmp_path, docs) -> "pathlib.Path":
    folder = tmp_path / "archive"
    folder.mkdir()
    for n, doc in enumerate(docs):
        doc.save(folder / f"issue-{n}.pdf")
    return folder


@needs_engine
def test_ingest_keeps_each_pictures_legend_in_the_manifest(tmp_path):
    from curation import Manifest, ingest

    folder = ingest_folder(tmp_path, [as_scan(legend_page(["SEPTEMBER MORN."], "tiro", 10.0)),
                                      as_scan(legend_page([]))])
    with Manifest(tmp_path / "m.sqlite") as manifest:
        report = ingest(manifest, [folder], workers=1, legend_languages="eng")
        rows = manifest.conn.execute(
            "SELECT d.path, x.legend, x.legend_confidence FROM pictures x JOIN documents d ON d.id = x.doc_id "
            "ORDER BY d.path, x.rank").fetchall()
        shown = {row["doc"]: row["legend"] for row in manifest.picture_rows()}
    assert report.pages_scored == 2 and report.legend_note is None
    by_issue = {pathlib.Path(path).name: (legend, confidence) for path, legend, confidence in rows}
    legend, confidence = by_issue["issue-0.pdf"]
    assert accuracy(legend, "SEPTEMBER MORN.") >= 0.9 and 0 < confidence <= 1
    assert by_issue["issue-1.pdf"] == (None, None)
    assert accuracy(shown[str((folder / "issue-0.pdf").resolve())], "SEPTEMBER MORN.") >= 0.9


def test_the_languages_are_a_manifest_setting_kept_in_the_history(tmp_path):
    from curation import Manifest
    from curation.manifest import history

    with Manifest(tmp_path / "m.sqlite") as manifest:
        assert manifest.legend_languages == "eng+deu+fra"
        manifest.legend_languages = "eng"
        assert manifest.legend_languages == "eng"
        with pytest.raises(ValueError):
            manifest.legend_languages = "eng;deu"
        assert manifest.legend_languages == "eng"
        [latest] = [a for a in history.actions(manifest.conn) if a["kind"] == "setting"]
        assert history.describe(manifest.conn, latest["id"], "setting").startswith("legend languages ")


@needs_engine
def test_the_ingest_command_saves_the_languages_and_refuses_one_not_installed(tmp_path):
    from click.testing import CliRunner

    from curation import Manifest
    from curation.cli import cli

    folder = ingest_folder(tmp_path, [as_scan(legend_page(["A WET DAY."], "helv", 10.0))])
    db = tmp_path / "m.sqlite"
    bad = CliRunner().invoke(cli, ["ingest", str(folder), "--db", str(db), "-q", "--legend-languages", "eng+xyz"])
    assert bad.exit_code == 2 and "not installed: xyz" in bad.output
    good = CliRunner().invoke(cli, ["ingest", str(folder), "--db", str(db), "-q", "-w", "1", "--legend-languages", "eng"])
    assert good.exit_code == 0, good.output
    with Manifest(db) as manifest:
        assert manifest.legend_languages == "eng"


@pytest.fixture
def app_db(tmp_path, monkeypatch):
    from curation.sources import paths

    db = tmp_path / "data" / "manifest.sqlite"
    monkeypatch.setenv("CURATION_DB", str(db))
    monkeypatch.setenv(paths.ROOTS_ENV, str(tmp_path / "archive"))
    ingest_folder(tmp_path, [legend_page(["A WET DAY."])])
    return db


def ingest_page_with_a_source(tmp_path):
    from apptest_support import page, ran

    at = ran(page("pages/ingest.py"))
    at.text_input[0].input(str(tmp_path / "archive"))
    next(b for b in at.button if b.label == "Add").click()
    return ran(at)


@needs_engine
def test_the_ingest_page_chooses_the_legend_languages(app_db, tmp_path):
    from apptest_support import ran

    from curation import Manifest

    at = ingest_page_with_a_source(tmp_path)
    [advanced] = at.expander
    [languages] = advanced.multiselect
    assert languages.label == "Legend languages" and languages.value == ["eng", "deu", "fra"]
    languages.set_value(["eng", "deu"])
    ran(at)
    with Manifest(app_db) as manifest:
        assert manifest.legend_languages == "eng+deu"


def test_without_the_engine_the_ingest_page_says_how_to_get_legends(app_db, tmp_path, monkeypatch):
    from apptest_support import texts

    monkeypatch.setattr(legends, "tessdata_folder", lambda: None)
    legends.installed_languages.cache_clear()
    try:
        at = ingest_page_with_a_source(tmp_path)
        assert not at.expander[0].multiselect
        assert "apt-get install tesseract-ocr-eng" in texts(at)
    finally:
        legends.installed_languages.cache_clear()


def test_without_the_engine_ingest_scores_every_page_and_says_why_legends_are_missing(tmp_path, monkeypatch):
    from curation import Manifest, ingest

    monkeypatch.setattr(legends, "tessdata_folder", lambda: None)
    legends.installed_languages.cache_clear()
    try:
        folder = ingest_folder(tmp_path, [legend_page(["A WET DAY."])])
        with Manifest(tmp_path / "m.sqlite") as manifest:
            report = ingest(manifest, [folder], workers=1)
            legends_kept = manifest.conn.execute("SELECT legend FROM pictures").fetchall()
    finally:
        legends.installed_languages.cache_clear()
    assert report.pages_scored == 1 and "apt-get install" in report.legend_note
    assert legends_kept and all(row[0] is None for row in legends_kept)


@needs_engine
def test_a_dask_clusters_workers_read_the_legends(tmp_path):
    pytest.importorskip("distributed")
    from curation import Manifest, ingest
    from curation.runs.cluster import Cluster

    folder = ingest_folder(tmp_path, [as_scan(legend_page(["SEPTEMBER MORN."], "tiro", 10.0))])
    with Cluster("local:1", dashboard_port=0) as cluster, Manifest(tmp_path / "m.sqlite") as manifest:
        ingest(manifest, [folder], cluster=cluster, legend_languages="eng")
        [(legend,)] = manifest.conn.execute("SELECT legend FROM pictures").fetchall()
    assert accuracy(legend, "SEPTEMBER MORN.") >= 0.9


def test_a_legend_that_cannot_be_read_leaves_the_pages_score(monkeypatch):
    from curation.scoring.scorer import score_page

    doc = legend_page(["A WET DAY."])
    scored = score_page(doc, 0)

    def broken(*args, **kwargs):
        raise MemoryError("needed more memory than a worker may take")

    monkeypatch.setattr(legends, "read_legends", broken)
    assert legends.with_legends(scored, doc, "eng") == scored


@needs_engine
def test_a_scan_the_score_decoded_is_not_decoded_again_for_its_legends(monkeypatch):
    from curation.scoring.scorer import score_page_and_scan

    doc = as_scan(legend_page(["THE OLD MILL."]), dpi=250)
    _, scan = score_page_and_scan(doc, 0)
    assert scan is not None and scan.shape[0] == round(doc[0].rect.height * 250 / 72)  # whole, at its own dpi

    def decoded_again(*args, **kwargs):
        raise AssertionError("the page was read again")

    monkeypatch.setattr(legends, "decode_gray", decoded_again)
    monkeypatch.setattr(legends, "_scan_gray", decoded_again)
    [found] = read_legends(doc, 0, [reference_box()], scan=scan)
    assert accuracy(found.text, "THE OLD MILL.") >= 0.9


@pytest.mark.parametrize("seed", range(4))
def test_the_strips_paper_and_ink_levels_are_numpys_percentiles_exactly(seed):
    """Where a legend's ink starts is decided from these two levels: counted from a histogram (fast), they must
    be np.percentile's to the last bit, or a legend read before could be read differently."""
    rng = np.random.default_rng(seed)
    for size in [1, 2, 3, 47, 48, 499, 1000, 20_000]:
        strips = [rng.integers(0, 256, size, dtype=np.uint8),
                  np.clip(rng.normal(215, 45, size), 0, 255).astype(np.uint8),  # paper with some ink
                  np.full(size, rng.integers(0, 256), np.uint8)]
        for gray in strips:
            gray = gray.reshape(-1, 1) if size % 2 else gray
            for q in (90, 0.2, 0, 50, 99.9, 100, 12.5):
                assert legends.percentiles(gray, q) == [float(np.percentile(gray, q))], (size, q)
