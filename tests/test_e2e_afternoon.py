"""A curator's afternoon, in a real browser (Chromium at 1440 x 900): progress that moves while one large PDF is
read (on Ingest and in Home's figures), a fake PDF's upload summed up as the problem it is, and the pictures a
picture cutoff keeps and drops shown beside the pages on Threshold."""

import os
import re

import pytest

from curation import Manifest
from curation.runs import jobs
from curation.sources.synthetic import PageSpec, write_pdf
from server_support import CHROMIUM, chromium, go, settle, streamlit_server

playwright = pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM),
                                reason="needs Debian's chromium (apt-get install chromium)")
PROGRESS = re.compile(r"Ingest: (\d+) of (\d+) pages")


@pytest.fixture
def browser_at(tmp_path):
    """(url, db, folder, page): the dashboard on a fresh manifest whose allowed folder is `folder`."""
    folder = tmp_path / "archive"
    folder.mkdir()
    db = tmp_path / "data" / "manifest.sqlite"
    env = {"CURATION_DB": str(db), "CURATION_ROOTS": str(folder)}
    with streamlit_server(tmp_path / "streamlit.log", env) as (_, port), chromium() as browser:
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        page.set_default_timeout(30_000)
        yield f"http://127.0.0.1:{port}", db, folder, page


def main_text(page) -> str:
    return page.locator("[data-testid='stMain']").inner_text()


def metric(page, label: str) -> str:
    box = page.locator("[data-testid='stMetric']").filter(has=page.get_by_text(label, exact=True))
    return box.locator("[data-testid='stMetricValue']").last.inner_text()  # a fragment's rerun may hold the last one


def add_and_start(page, url, path):
    go(page, url, "ingest")
    page.get_by_label("Path", exact=True).fill(str(path))
    page.get_by_role("button", name="Add").click()
    settle(page)
    page.get_by_role("button", name="Start").click()


def large_pdf(path, pages: int, dpi: int, seed: int = 0):
    """`pages` pages of 6 x 8 inches: at 300 dpi about a quarter second each to score on a core here."""
    return write_pdf(path, [PageSpec(kind=("text", "engraving")[n % 2], seed=seed + n, dpi=dpi, inches=(6.0, 8.0))
                            for n in range(pages)])


def watch(page, read, until, seconds: float = 90) -> set:
    """Every value `read(page)` gave every quarter second until `until(page)` holds (or `seconds` pass)."""
    seen = set()
    for _ in range(int(seconds * 4)):
        value = read(page)
        if value is not None:
            seen.add(value)
        if until(page):
            break
        page.wait_for_timeout(250)
    return seen


def test_one_large_pdf_shows_pages_as_they_finish_on_ingest_and_home(browser_at):
    url, db, folder, page = browser_at
    large_pdf(folder / "first.pdf", 60, 300)  # the issue's: "0 of 26 pages" until it ended; longer, to be watched
    add_and_start(page, url, folder / "first.pdf")

    def progress(page):
        found = PROGRESS.search(main_text(page))
        return int(found[1]) if found else None

    seen = watch(page, progress, lambda page: "Ingest finished" in main_text(page))
    # Tasks of 16 pages showed the count in steps of 16; pages as they finish show it move in smaller steps
    # (how far it got by the page's first poll depends on the machine's speed, not on the steps).
    between = [done for done in seen if 0 < done < 60]
    assert len(between) >= 2 and any(done % 16 for done in between), f"the count hardly moved: {sorted(seen)}"
    # Home's figures follow the job as it goes: a second large PDF (ingested as the app launches it), watched from Home.
    large_pdf(folder / "second.pdf", 80, 200, seed=100)
    with Manifest(db) as manifest:
        jobs.wait_for_job(manifest, "ingest", jobs.launch(db, "ingest", str(folder / "second.pdf")))
    go(page, url, "")
    sidebar = page.locator("[data-testid='stSidebar']")
    figures = watch(page, lambda page: int(metric(page, "Pages scored").replace(",", "")),
                    lambda page: "running" not in sidebar.inner_text() and "Watch the ingest" not in main_text(page))
    assert len([n for n in figures if 80 < n < 160]) >= 2, f"Home's pages did not grow from 80 to 160: {sorted(figures)}"
    settle(page)
    assert page.locator("[data-testid='stMetric']").filter(has=page.get_by_text("Pages scored", exact=True)).count() == 1


def test_a_fake_pdf_upload_ends_in_an_error_that_says_why(browser_at, tmp_path):
    url, db, folder, page = browser_at
    fake = tmp_path / "scan.pdf"
    fake.write_bytes(b"GIF89a not a PDF at all" * 40)
    go(page, url, "ingest")
    page.get_by_role("tab", name="Upload PDFs").click()
    page.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(str(fake))
    page.get_by_text("1 file(s) chosen").wait_for()  # Start takes the chosen file: no Save first
    page.get_by_role("button", name="Start").click()
    alert = page.locator("[data-testid='stAlertContentError']").filter(has_text="no document could be read")
    alert.wait_for(timeout=60_000)
    text = alert.inner_text()
    assert "1 document could not be read" in text and "scan.pdf" in text and "not a PDF" in text, text
    assert page.locator("[data-testid='stAlertContentSuccess']").count() == 0


def test_threshold_shows_the_pictures_a_cutoff_drops_beside_the_pages(browser_at):
    url, db, folder, page = browser_at
    from curation.runs.sample import fill_manifest

    db.parent.mkdir(parents=True)
    with Manifest(db) as manifest:
        fill_manifest(manifest, 1, 6)
        manifest.conn.execute("UPDATE pages SET picture_area = 9.0, ink_tone = 0.6, features_version = 1")
        for number in range(6):  # a 9 sq in plate on every page, and a 2.4 sq in cut on the first
            manifest.set_pictures(1, number, [(100, 100, 700, 700, 9.0)] + [(800, 900, 1000, 1100, 2.4)] * (number == 0))
    go(page, url, "threshold")
    assert metric(page, "Pictures kept") == "7" and metric(page, "Pictures left out") == "0"
    cutoff = page.get_by_label("Picture cutoff (sq in)")
    cutoff.fill("2.5")
    cutoff.press("Enter")
    settle(page)
    assert metric(page, "Kept") == "6"  # no page changes...
    assert metric(page, "Pictures kept") == "6" and metric(page, "Pictures left out") == "1"  # ...but a picture goes
    assert "2.5 sq in" in main_text(page)


def test_no_page_asks_another_host_for_anything(browser_at):
    """An offline server's visitors reach only the server: the tab's icon came from fonts.gstatic.com."""
    url, db, folder, page = browser_at
    elsewhere = []
    page.on("request", lambda request: elsewhere.append(request.url)
            if not request.url.startswith((url, "data:", "blob:")) else None)
    for path in ("", "ingest", "threshold", "review", "export", "vet_scanner"):
        go(page, url, path)
    assert elsewhere == []


def test_deciding_in_review_leaves_no_warning_in_the_server_log(tmp_path, archive):
    """Pressing e or i in the Pictures view (on the grid, or on a picture opened large) logged "A fragment rerun
    was triggered with a callback that displays one or more elements": the decision's message was drawn by the
    callback itself. So did a click in a large view (a dialog: a fragment) that decides, sets the kind, switches
    a legend off or undoes. Each message is still shown, by the run that follows."""
    from test_e2e_pictures import FIRST_CROPS_SHOWN, cli

    db = tmp_path / "data" / "manifest.sqlite"
    cli("ingest", archive, "--db", db, "--workers", 1, "-q")
    with Manifest(db) as manifest:
        for row in manifest.pages():
            manifest.add_picture(row["doc_id"], row["page"], (20, 40, row["width"] // 2, row["height"] // 3))
        first = manifest.conn.execute("SELECT MIN(id) FROM pictures").fetchone()[0]
        manifest.conn.execute("UPDATE pictures SET legend = 'A WET DAY.' WHERE id = ?", (first,))
        manifest.conn.commit()
    log = tmp_path / "streamlit.log"
    with streamlit_server(log, {"CURATION_DB": str(db), "CURATION_ROOTS": str(archive)}) as (_, port), \
            chromium() as browser:
        url = f"http://127.0.0.1:{port}"
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        page.set_default_timeout(30_000)
        go(page, url, "review?view=Pictures")
        page.wait_for_function(FIRST_CROPS_SHOWN)
        dialog = page.get_by_role("dialog")
        for opened in (False, True):  # on the grid, then in the large view (a dialog: a fragment)
            if opened:
                page.keyboard.press("Enter")
                dialog.wait_for()
                settle(page)
            for key, words in (("e", "Excluded picture"), ("i", "Included picture")):
                page.keyboard.press(key)
                page.get_by_text(words).first.wait_for()  # the decision's message, shown by the next run
                settle(page)
        clicks = ((lambda: dialog.locator("[class*='st-key-picture-dialog-']").get_by_role("radio", name="Exclude")
                   .click(), "Excluded picture 1"),
                  (lambda: dialog.get_by_role("button", name="No legend").click(), "switched off"),
                  (lambda: dialog.get_by_role("button", name="Undo").click(), "Undone"))
        for click, words in clicks:  # each reruns the dialog alone
            click()
            page.get_by_text(words).first.wait_for()
            settle(page)
        page.keyboard.press("Escape")
        settle(page)
        go(page, url, "review")  # the pages' large view is a dialog too
        page.wait_for_function("() => Boolean((window.__curationKeyboards || {})['review-pages'])")
        page.keyboard.press("Enter")
        dialog.wait_for()
        settle(page)
        dialog.locator("[class*='st-key-dialog-']").get_by_role("radio", name="Exclude").click()
        page.get_by_text("Excluded page").first.wait_for()
        settle(page)
    with Manifest(db) as manifest:
        # Excluded by the click in the large view; its legend switched off, then undone.
        assert [(row["id"], row["keep"]) for row in manifest.picture_rows(where="x.keep IS NOT NULL")] == [(first, 0)]
        assert manifest.picture(first)["no_legend"] == 0
        assert manifest.conn.execute("SELECT COUNT(*) FROM overrides WHERE keep = 0").fetchone()[0] == 1
    assert "fragment rerun was triggered" not in log.read_text()
