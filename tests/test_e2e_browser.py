"""The dashboard in a real browser: Chromium driven by Playwright against `streamlit run` on localhost.

The flow a curator follows: ingest a folder by its server path, wait for the job, switch the rule to σ only
and move its cutoff and see the figures change, overrule and caption a page on Review, reload, and find
the override and the caption still there. No page may show an exception element.
"""

import getpass
import os
import re
import time

import pytest
from playwright.sync_api import expect

from curation import Manifest
from server_support import CHROMIUM, chromium, go, no_exception, settle, streamlit_server

playwright = pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM),
                                reason="needs Debian's chromium (apt-get install chromium)")


@pytest.fixture
def server(tmp_path, archive):
    """`streamlit run` on a fresh manifest, with the archive's folder as an allowed root."""
    db = tmp_path / "data" / "manifest.sqlite"
    env = {"CURATION_DB": str(db), "CURATION_ROOTS": str(archive)}
    with streamlit_server(tmp_path / "streamlit.log", env) as (_, port):
        yield f"http://127.0.0.1:{port}", db, archive


@pytest.fixture
def browser_page(server):
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(30_000)
        yield page


def metric(page, label: str) -> str:
    box = page.locator("[data-testid='stMetric']").filter(has=page.get_by_text(label, exact=True))
    return box.locator("[data-testid='stMetricValue']").inner_text()


def test_ingest_threshold_review_in_a_browser(server, browser_page):
    url, db, archive = server
    page = browser_page

    go(page, url, "")
    page.get_by_role("button", name="Try a sample archive").wait_for()
    assert str(db) in page.locator("[data-testid='stSidebar']").inner_text()

    # Ingest by server path; the job runs in its own process and the page follows it live.
    go(page, url, "ingest")
    page.get_by_label("Path", exact=True).fill(str(archive))
    page.get_by_role("button", name="Add").click()
    page.get_by_text("3 PDF(s)").first.wait_for()
    settle(page)
    page.get_by_role("button", name="Start").click()
    page.get_by_text("Ingest finished").wait_for(timeout=90_000)
    settle(page)
    no_exception(page)
    table = page.locator("[data-testid='stDataFrame']")
    table.wait_for()
    with Manifest(db) as manifest:
        assert manifest.summary()["scored"] == 15

    # An upload is stored under the data folder with a safe name and becomes a source.
    page.get_by_role("tab", name="Upload PDFs").click()
    page.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(str(archive / "issue-0.pdf"))
    page.get_by_text("1 file(s) chosen").wait_for()
    page.get_by_role("button", name="Start").click()  # saves the chosen file, a source, and ingests it
    saved = db.parent / "uploads" / "issue-0.pdf"
    deadline = time.monotonic() + 60
    while not saved.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert saved.read_bytes() == (archive / "issue-0.pdf").read_bytes()
    page.get_by_text("1 file(s) chosen").wait_for(state="detached")  # the uploader is emptied once saved
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        with Manifest(db) as manifest:
            if manifest.running_job("ingest") is None:
                break
        time.sleep(0.5)
    settle(page)

    # The picture rule decides by default; switch to σ only, the original method, and move its cutoff:
    # the figures change at once; nothing is saved until Save.
    go(page, url, "threshold")
    main = page.locator("[data-testid='stMain']")
    assert "Picture rule." in main.inner_text() and page.get_by_role("heading", name="Largest picture").count() == 1
    with Manifest(db) as manifest:
        assert metric(page, "Kept") == str(manifest.summary()["kept"])
    page.get_by_role("radio", name="σ only").click()
    page.get_by_text("σ only, the original method.").wait_for()
    settle(page)
    no_exception(page)
    assert page.get_by_role("heading", name="Largest picture").count() == 0  # its cutoff plays no part now
    cutoff = page.get_by_label("σ cutoff", exact=True)
    cutoff.fill("10")
    cutoff.press("Enter")
    page.wait_for_function(
        "() => [...document.querySelectorAll('[data-testid=stMetricValue]')][0].innerText === '15'")
    settle(page)
    no_exception(page)
    assert metric(page, "Kept") == "15"
    assert "Not saved" in main.inner_text()
    with Manifest(db) as manifest:
        assert (manifest.rule, manifest.threshold) == ("picture", 45)

    # Exclude the first page on Review: saved at once, and still there after a reload.
    go(page, url, "review")
    page.get_by_text("0 overrides in the manifest").wait_for()
    first_card = page.locator("[class*='st-key-review-card-']").first
    first_card.get_by_role("button", name="Exclude").click()  # the card's Include / Auto / Exclude
    page.get_by_text(f"excluded by {getpass.getuser()}, ").first.wait_for()
    settle(page)
    page.reload()
    settle(page)
    no_exception(page)
    page.get_by_text(f"excluded by {getpass.getuser()}, ").first.wait_for()
    assert re.search(r"\b1\s+overrides in the manifest", page.locator("[data-testid='stMain']").inner_text())
    with Manifest(db) as manifest:
        assert [row["keep"] for row in manifest.overrides()] == [0]

    # A caption typed on a tile is saved at once and is still there after a reload.
    caption = page.locator("[class*='st-key-review-card-'] input").first
    caption.fill("a lady in a walking dress")
    caption.press("Enter")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # saved by the input's own callback: no button to wait for
        with Manifest(db) as manifest:
            if manifest.captions():
                break
        time.sleep(0.2)
    settle(page)
    page.reload()
    settle(page)
    no_exception(page)
    # The grid is drawn again after the reload: wait for the saved caption rather than read the first frame.
    expect(page.locator("[class*='st-key-review-card-'] input").first).to_have_value(
        "a lady in a walking dress", timeout=20_000)
    with Manifest(db) as manifest:
        assert list(manifest.captions().values()) == ["a lady in a walking dress"]

    go(page, url, "")  # home counts the override too
    assert metric(page, "Overrides") == "1"
