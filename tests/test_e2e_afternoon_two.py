"""A curator's afternoon, part two, in a real browser (Chromium at 1440 x 900): a folder allowed with
`python -m curation folders add` (or, by the person at the server, from the page) then ingested by path; a fake
PDF counted as failed; Review's first screen with cards on it; the large view opened on the picture, where a
drag from inside the old box away from its handles draws a new box and a box that would exclude the picture
asks first; and the Export page's figures equal to the finished ZIP's."""

import csv
import io
import json
import os
import re
import subprocess
import sys
import time
import zipfile

import pytest

from curation import Manifest, ingest
from curation.sources.synthetic import PageSpec, write_pdf
from curation.views import picture_views as pv
from server_support import CHROMIUM, ROOT, chromium, go, no_exception, settle, streamlit_server

playwright = pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM),
                                reason="needs Debian's chromium (apt-get install chromium)")
SHOTS = os.environ.get("E2E_SHOTS")  # a folder: each test leaves a screenshot of what it checked there


@pytest.fixture
def browser(tmp_path):
    with chromium() as browser:
        yield browser


@pytest.fixture
def page(browser):
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    page.set_default_timeout(60_000)
    return page


def served(tmp_path, db, **env):
    return streamlit_server(tmp_path / "streamlit.log", {"CURATION_DB": str(db), "CURATION_ROOTS": "", **env})


def shot(page, name):
    if SHOTS:
        page.screenshot(path=os.path.join(SHOTS, f"{name}.png"))


def main_text(page) -> str:
    return page.locator("[data-testid='stMain']").inner_text()


def metric(page, label: str) -> str:
    box = page.locator("[data-testid='stMetric']").filter(has=page.get_by_text(label, exact=True))
    return box.locator("[data-testid='stMetricValue']").last.inner_text()


def wait_job(db, kind: str, seconds: float = 120):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with Manifest(db) as manifest:
            job = manifest.latest_job(kind)
            if job is not None and job["status"] != "running":
                return job
        time.sleep(0.5)
    raise TimeoutError(f"the {kind} job did not finish")


# -- Ingest without a shell -------------------------------------------------------------------------------------


def test_a_folder_added_with_folders_add_is_ingested_by_path_and_the_person_at_the_server_adds_another(
        tmp_path, page):
    db = tmp_path / "data" / "manifest.sqlite"
    first, second = tmp_path / "scans" / "harpers", tmp_path / "elsewhere"
    write_pdf(first / "issue-1.pdf", [PageSpec(kind="engraving", seed=n, dpi=100, inches=(4.0, 5.0)) for n in range(2)])
    write_pdf(second / "issue-2.pdf", [PageSpec(kind="text", seed=9, dpi=100, inches=(4.0, 5.0))])
    added = subprocess.run([sys.executable, "-m", "curation", "folders", "add", str(first), "--db", str(db)],
                           cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert added.returncode == 0 and f"allowed {first}" in added.stdout, added.stderr
    with served(tmp_path, db) as (_, port):
        url = f"http://127.0.0.1:{port}"
        go(page, url, "ingest")
        assert str(first) in main_text(page)  # among the allowed folders
        page.get_by_label("Path", exact=True).fill(str(first))
        page.get_by_role("button", name="Add").click()
        page.get_by_text("1 PDF(s)").first.wait_for()
        # A folder outside them: the refusal names the command; this browser is the person at the server (sign-in
        # off, 127.0.0.1, no proxy), so the page offers to allow it.
        page.get_by_label("Path", exact=True).fill(str(second))
        page.get_by_role("button", name="Add").click()
        page.get_by_text("python -m curation folders add FOLDER").first.wait_for()
        settle(page)
        shot(page, "ingest-allow-folder")
        page.get_by_role("button", name="Allow this folder and add it").click()
        page.get_by_text(re.compile(r"Added .*elsewhere")).first.wait_for()
        settle(page)
        page.get_by_role("button", name="Start").click()
        job = wait_job(db, "ingest")
        settle(page)
        no_exception(page)
    assert job["status"] == "done"
    with Manifest(db) as manifest:
        paths = sorted(row["path"] for row in manifest.documents())
        roots = json.loads(manifest.get_setting("allowed_roots"))
    assert paths == [str(second / "issue-2.pdf"), str(first / "issue-1.pdf")]
    assert roots == [str(first), str(second)]


def test_a_fake_pdf_upload_is_counted_as_failed(tmp_path, page):
    db = tmp_path / "data" / "manifest.sqlite"
    fake = tmp_path / "scan.pdf"
    fake.write_bytes(b"GIF89a not a PDF at all" * 40)
    with served(tmp_path, db) as (_, port):
        go(page, f"http://127.0.0.1:{port}", "ingest")
        page.get_by_role("tab", name="Upload PDFs").click()
        page.get_by_text(re.compile(r"200\s?MB per file")).first.wait_for()  # the README's 200 MB, not 191
        page.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(str(fake))
        page.get_by_text("1 file(s) chosen").wait_for()
        page.get_by_role("button", name="Start").click()  # no Save first: Start takes the chosen file
        alert = page.locator("[data-testid='stAlertContentError']").filter(has_text="no document could be read")
        alert.wait_for(timeout=90_000)
        settle(page)
        shot(page, "ingest-fake-pdf")
        text = alert.inner_text()
    assert "1 document failed" in text and "0 failed" not in text, text
    assert "1 document could not be read" in text and "scan.pdf" in text and "not a PDF" in text


# -- Review ------------------------------------------------------------------------------------------------------


def test_reviews_first_screen_at_1440_by_900_shows_cards(tmp_path, page):
    from apptest_support import filled_db, thumbnail

    db = filled_db(tmp_path / "data" / "manifest.sqlite", documents=2, pages=30)
    with served(tmp_path, db) as (_, port):
        for path, card in (("review", "review-card-"), ("review?view=Pictures", "picture-card-")):
            if card == "picture-card-":
                with Manifest(db) as manifest:
                    for row in list(manifest.pages())[:12]:
                        manifest.add_picture(row["doc_id"], row["page"], (100, 100, 700, 800))
            go(page, f"http://127.0.0.1:{port}", path)
            page.locator(f"[class*='st-key-{card}']").first.wait_for()
            settle(page)
            shot(page, f"first-screen-{card[:-1]}")
            first = page.locator(f"[class*='st-key-{card}']").first.bounding_box()
            assert first["y"] + first["height"] <= 900, (path, first)  # a whole row of cards on the first screen
            assert page.evaluate("window.scrollY") == 0
    assert thumbnail  # the manifest's thumbnails are real JPEGs


# -- Fixing a box ------------------------------------------------------------------------------------------------

NEWSPAPER = (11.0, 22.0)  # inches: 1584 x 3168 reference pixels; 731 px wide in the large view at 1x
PICTURE = (300, 2750, 760, 3060)  # low on the page, 3.2 x 2.2 inches: kept (the cutoff is 2 sq in)


def image_box(dialog):
    image = dialog.frame_locator("iframe").locator("img")
    image.wait_for()
    return image.bounding_box()


def assert_whole(dialog, box):
    """The page's frame is as tall as its image: none of the page cut off."""
    frame = dialog.locator("iframe").bounding_box()
    assert frame["height"] >= box["height"] - 2, (frame, box)


def drag(page, box, start, end):
    """A drag across the shown image from `start` to `end` (fractions of it)."""
    at = lambda point: (box["x"] + point[0] * box["width"], box["y"] + point[1] * box["height"])  # noqa: E731
    page.mouse.move(*at(start))
    page.mouse.down()
    page.mouse.move(*at(end), steps=8)
    page.mouse.up()


def fraction(region, point):
    return ((point[0] - region[0]) / (region[2] - region[0]), (point[1] - region[1]) / (region[3] - region[1]))


def test_the_large_view_opens_on_the_picture_and_a_drag_inside_the_old_box_draws_a_new_one(tmp_path, page):
    db = tmp_path / "data" / "manifest.sqlite"
    archive = tmp_path / "data" / "archive"
    write_pdf(archive / "gazette.pdf", [PageSpec(kind="text", seed=2, dpi=72, inches=NEWSPAPER)])
    with Manifest(db) as manifest:
        ingest(manifest, [archive], workers=1)
        row = next(manifest.pages())
        area = (PICTURE[2] - PICTURE[0]) * (PICTURE[3] - PICTURE[1]) / 144 / 144
        manifest.set_pictures(row["doc_id"], 0, [(*PICTURE, area)])  # as the finder found it: the cutoff decides
        (picture_id,) = [r["id"] for r in manifest.picture_rows()]
        manifest.set_override(row["doc_id"], 0, True)  # the page kept, whatever its text says
        assert pv.decision_of(dict(manifest.picture(picture_id))) == "kept", "the picture is exported"
        width, height = row["width"], row["height"]
    region = pv.fit_region(PICTURE, width, height)
    with served(tmp_path, db) as (_, port):
        go(page, f"http://127.0.0.1:{port}", "review?view=Pictures&pic_decision=Kept")
        page.locator("[class*='st-key-picture-card-']").first.wait_for()
        settle(page)
        page.keyboard.press("Enter")  # the focused card, the only kept picture, opened large
        dialog = page.get_by_role("dialog")
        dialog.get_by_text("Centred on this picture").wait_for()
        settle(page)
        box = image_box(dialog)
        shot(page, "large-view-opened")
        assert_whole(dialog, box)
        # The picture is on the first screen, filling most of the view, without scrolling.
        (left, top), (right, bottom) = fraction(region, PICTURE[:2]), fraction(region, PICTURE[2:])
        assert 0 <= box["y"] + top * box["height"] and box["y"] + bottom * box["height"] <= 900, box
        assert max(right - left, bottom - top) >= 0.7

        dialog.get_by_text("Fix this picture's box").click()
        dialog.get_by_text("white corner handles").wait_for()
        settle(page)
        box = image_box(dialog)
        shot(page, "large-view-handles")
        assert_whole(dialog, box)  # choosing a drawing mode once cut the page's frame to about 200 px
        # From inside the old box, away from its handles, to beyond its bottom right: a new box from there.
        start = (left + 0.3 * (right - left), top + 0.3 * (bottom - top))
        end = (min(0.99, right + 0.03), min(0.99, bottom + 0.03))
        drag(page, box, start, end)
        page.get_by_text("Redrew the box of picture").first.wait_for()
        settle(page)
        no_exception(page)
        with Manifest(db) as manifest:
            fixed = manifest.picture(picture_id)
        expected = [region[0] + start[0] * (region[2] - region[0]), region[1] + start[1] * (region[3] - region[1]),
                    region[0] + end[0] * (region[2] - region[0]), region[1] + end[1] * (region[3] - region[1])]
        for key, value in zip(("bx0", "by0", "bx1", "by1"), expected):
            assert fixed[key] == pytest.approx(value, abs=0.02 * (region[2] - region[0])), (key, fixed[key], value)
        assert fixed["keep_picture"] == 1

        # A sliver (under the 2 sq in cutoff) asks before it excludes the picture; "Keep the old box" keeps it.
        page.wait_for_timeout(1500)  # the page drawn again with the new box
        box = image_box(dialog)
        drag(page, box, (0.45, 0.45), (0.5, 0.5))
        try:
            dialog.get_by_text("This box would exclude the picture").wait_for(timeout=20_000)
        finally:
            shot(page, "large-view-after-sliver")
            with Manifest(db) as manifest:
                print("after the sliver:", dict(manifest.picture(picture_id)))
        settle(page)
        shot(page, "large-view-asks")
        dialog.get_by_role("button", name="Keep the old box").click()
        settle(page)
        with Manifest(db) as manifest:
            assert dict(manifest.picture(picture_id)) == dict(fixed)
        drag(page, image_box(dialog), (0.45, 0.45), (0.5, 0.5))
        dialog.get_by_role("button", name="Save the box and exclude it").click()
        page.get_by_text("excluded now").first.wait_for()
        settle(page)
        no_exception(page)
    with Manifest(db) as manifest:
        assert manifest.picture(picture_id)["keep_picture"] == 0


# -- Export figures that agree -----------------------------------------------------------------------------------


def scanned_archive(folder, dpis, pages: int) -> None:
    """A PDF of `pages` engravings and mixed pages (6 x 8 in) scanned at each of `dpis`, in `folder`."""
    for n, dpi in enumerate(dpis):
        write_pdf(folder / f"issue-{n}.pdf", [PageSpec(kind=("engraving", "mixed")[p % 2], seed=10 * n + p, dpi=dpi,
                                                       inches=(6.0, 8.0)) for p in range(pages)])


def export_with_minimum(page, port: int, pixels: int) -> None:
    """The Export page, its minimum source size set to `pixels`, once it says what that leaves out."""
    go(page, f"http://127.0.0.1:{port}", "export")
    minimum = page.get_by_role("spinbutton", name="Minimum source size (pixels, short side)")
    minimum.fill(str(pixels))
    minimum.press("Enter")
    page.get_by_text(re.compile(r"\d+ images? left out: their source is under")).wait_for()
    settle(page)


def test_the_export_pages_figures_equal_the_finished_zips(tmp_path, page):
    db = tmp_path / "data" / "manifest.sqlite"
    archive = tmp_path / "data" / "archive"
    scanned_archive(archive, (72, 110, 150, 200), pages=4)
    with Manifest(db) as manifest:
        ingest(manifest, [archive], workers=1)
        manifest.rule, manifest.threshold = "sigma", 0.0
    with served(tmp_path, db) as (_, port):
        export_with_minimum(page, port, 512)
        shot(page, "export-figures")
        images, enlarged = metric(page, "Images"), metric(page, "Enlarged")
        left_out = int(re.search(r"(\d+) images? left out", main_text(page))[1])
        page.get_by_role("button", name=re.compile(r"^Export \d+ images")).click()
        job = wait_job(db, "export", 180)
        settle(page)
        no_exception(page)
    assert job["status"] == "done", job["message"]
    with zipfile.ZipFile(tmp_path / "data" / "exports" / "lora.zip") as archive_zip:
        rows = list(csv.DictReader(io.StringIO(archive_zip.read("manifest.csv").decode())))
        sources = json.loads(archive_zip.read("export.json"))["sources"]
    assert images == f"{len(rows):,}" and "about" not in images
    assert enlarged == f"{sources['enlarged_images']:,}"
    assert left_out == len(sources["too_small"]) > 0
