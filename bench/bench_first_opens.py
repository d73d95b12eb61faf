"""The first open of every page, and of Review's Pictures view, in a real browser: a curator's first minute.

A curator's first visit to a page pays for whatever that page computes before it can be drawn; the target is
under 2 s each, on a quiet machine. Two manifests:

- `large`: 100,000 pictures (bench_dashboard's manifest at 40,000 pages, its picture rows written straight
  into SQLite through the manifest's writers, a curator's decisions among them; no PDFs), opened by a fresh
  server and a fresh browser.
- `ingest`: an archive ingested from the app as a new user does: the server up, the Ingest page open, Start
  pressed (the same `python -m curation ingest` the page launches, followed by its picture job); once the
  ingest ends the curator goes through the pages in the same browser tab while the picture job may still run
  (`right after ingest`), then again in a new tab once every job is done (`later`). The archive is generated
  (`--archive generated`, `--pages`) or the labelled real pages of ../shared/realdata (`--archive real`).

Each open is a click on the page's link in the sidebar (Home: the address itself), timed from the click to the
page's own content drawn (its title, or the Pictures view's model bar), its script run over and every image
loaded, with the server process's CPU time beside it, which a loaded machine changes less; and to the end of the
runs the page asks for once drawn (`complete`: what a page makes after it is drawn, saying so, such as Export's
list of a large manifest's pictures and its size estimate; "-" where a running job's progress never lets the
page rest).

    python bench/bench_first_opens.py [--manifests large ingest] [--archive generated|real] [--pages 100]
                                      [--keep] [--out bench/out/first-opens]

The figures of the code under test are the reference of nothing else: run it on two checkouts (e.g. with
`git stash`) one after the other to compare.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sqlite3
import sys
import time

import psutil
from playwright.sync_api import TimeoutError as PlaywrightTimeout

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

from bench_dashboard import add_pictures, build, remove_manifest  # noqa: E402
from bench_review_browser import Browser  # noqa: E402
from curation import Manifest  # noqa: E402
from curation.sources import paths  # noqa: E402
from server_support import CHROMIUM, CHROMIUM_ARGS, streamlit_server  # noqa: E402

TARGET_MS = 2000
LARGE_PAGES = 40_000  # 2.5 pictures a page: 100,000 pictures
# (label, the sidebar link clicked, or None for Review's Pictures view), in the order a curator goes.
OPENS = [("Home", None), ("Ingest", "Ingest"), ("Threshold", "Threshold"), ("Review", "Review"),
         ("Review: Pictures view", "Pictures"), ("Export", "Export"), ("Vet scanner", "Vet scanner")]


def build_large(db: pathlib.Path) -> None:
    remove_manifest(db)
    build(db, max(1, LARGE_PAGES // 333), LARGE_PAGES)
    with Manifest(db) as manifest:
        count = add_pictures(manifest)
        manifest.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    print(f"with {count:,} pictures", flush=True)


def write_archive(folder: pathlib.Path, kind: str, pages: int) -> None:
    """The PDFs the ingest reads: generated periodical pages (20 a document), or the real labelled pages."""
    if kind == "real":
        import realdata

        realdata.build(ROOT.parent / "shared" / "realdata", folder)
        return
    from curation.runs import sample

    sample.write_sample(folder, sample.sample_specs(documents=max(1, pages // 20), pages=min(pages, 20)))


# What shows the page asked for is being drawn (its title; the Pictures view's model bar), before its run ends.
MARKERS = {"Home": "Curation dashboard", "Ingest": "Ingest", "Threshold": "Threshold", "Review": "Review",
           "Export": "Export", "Vet scanner": "Vet scanner"}
DRAWN_JS = """() => document.querySelector('[data-test-script-state]')?.getAttribute('data-test-script-state') === 'notRunning'
    && [...document.images].every(img => !img.isConnected || img.complete)"""


def open_page(browser: Browser, label: str, link: str | None) -> tuple[float, float, float | None]:
    """Open one page as a curator does (its link in the sidebar; Home by its address): (ms from the click to the
    page's own content being drawn, its script run over and every image loaded; the server's CPU ms meanwhile;
    ms from the click to the end of the runs it asks for once drawn, None where it never rests)."""
    page = browser.page
    cpu = browser.server_cpu()
    clicked = 0.0 if link is None else page.evaluate("performance.now()")  # the page's clock: a new one at goto
    started = time.perf_counter()
    if link is None:
        page.goto(browser.url)
    elif label.endswith("Pictures view"):
        page.locator(".st-key-view").get_by_role("radio", name=link).click()
    else:
        page.get_by_test_id("stSidebar").get_by_role("link", name=link).click()
    if label.endswith("Pictures view"):
        page.locator(".st-key-pictures-model-bar").wait_for(timeout=300_000)
    else:
        page.get_by_role("heading", name=MARKERS[label], exact=True).first.wait_for(timeout=300_000)
    page.wait_for_function(DRAWN_JS, timeout=300_000, polling=20)
    elapsed = (time.perf_counter() - started) * 1000
    spent = (browser.server_cpu() - cpu) * 1000
    rested = quiet_for(page, 1000)  # what the page makes once drawn (a size estimate, cards), and its rerun, are over
    complete = max(elapsed, page.evaluate("window.__benchQuietSince") - clicked) if rested else None
    return elapsed, spent, complete


def quiet_for(page, ms: int, limit_ms: int = 15_000) -> bool:
    """Until no script has run for `ms` (the runs a page asks for once drawn: a component's first value, a size
    estimate, the next cards), so that they are not charged to the next open; False where it never rests."""
    page.evaluate("""() => {
        window.__benchQuietSince = performance.now();
        const note = () => {
            const el = document.querySelector('[data-test-script-state]');
            if (!el || el.getAttribute('data-test-script-state') !== 'notRunning') window.__benchQuietSince = performance.now();
        };
        if (!window.__benchQuietWatch) {
            window.__benchQuietWatch = new MutationObserver(note);
            window.__benchQuietWatch.observe(document.body, {subtree: true, childList: true, attributes: true});
        }
        note();
    }""")
    try:
        page.wait_for_function(f"() => performance.now() - window.__benchQuietSince > {ms}", timeout=limit_ms,
                               polling=50)
        return True
    except PlaywrightTimeout:  # a running job's progress reruns a fragment every second: never quiet that long
        return False


def go_through(browser: Browser, title: str, results: dict) -> None:
    print(f"{title}:", flush=True)
    for label, link in OPENS:
        timed(browser, title, label, link, results)


def timed(browser: Browser, title: str, label: str, link: str | None, results: dict) -> None:
    settled, cpu, complete = open_page(browser, label, link)
    results.setdefault(title, []).append((label, settled, cpu, complete))
    print(f"  {label:24s} {settled:7.0f} ms  (server CPU {cpu:6.0f} ms, complete {shown_ms(complete)})", flush=True)


def shown_ms(ms: float | None) -> str:
    return "-" if ms is None else f"{ms:,.0f} ms"


def job_states(db: pathlib.Path) -> dict[str, str]:
    with sqlite3.connect(db, timeout=30) as conn:
        return {kind: status for kind, status in conn.execute("SELECT kind, status FROM jobs ORDER BY id")}


def wait_until(condition, limit_s: float, what: str) -> float:
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > limit_s:
            raise TimeoutError(f"{what}: not within {limit_s:.0f} s")
        time.sleep(0.5)
    return time.monotonic() - started


def large(out: pathlib.Path, keep: bool, results: dict) -> None:
    db = out / f"manifest-{LARGE_PAGES}.sqlite"
    if not (keep and db.exists()):
        build_large(db)
    with streamlit_server(out / "streamlit-large.log", {"CURATION_DB": str(db)}) as (server, port), browsing() as new_page:
        browser = Browser(new_page(), f"http://127.0.0.1:{port}", psutil.Process(server.pid))
        go_through(browser, "100,000 pictures, first opens", results)
        browser = Browser(new_page(), f"http://127.0.0.1:{port}", psutil.Process(server.pid))
        go_through(browser, "100,000 pictures, again in a new tab", results)


def ingest(out: pathlib.Path, archive: str, pages: int, results: dict) -> None:
    folder = out / f"ingest-{archive}"
    db = folder / "manifest.sqlite"
    remove_manifest(db)
    write_archive(folder / "archive", archive, pages)
    with Manifest(db) as manifest:
        paths.add_source(manifest, folder / "archive")
    env = {"CURATION_DB": str(db), "CURATION_ROOTS": str(folder)}
    with streamlit_server(out / "streamlit-ingest.log", env) as (server, port), browsing() as new_page:
        browser = Browser(new_page(), f"http://127.0.0.1:{port}", psutil.Process(server.pid))
        browser.page.goto(f"{browser.url}/ingest")
        browser.page.wait_for_selector("[data-test-script-state='notRunning']", timeout=120_000)
        browser.page.get_by_role("button", name="Start").click()
        took = wait_until(lambda: job_states(db).get("ingest") == "done", 1800, "the ingest")
        print(f"ingest of {archive} pages done in {took:.0f} s; picture job: {job_states(db).get('embed', 'none')}",
              flush=True)
        browser.page.wait_for_timeout(1500)  # the Ingest page's panel notices the end and draws anew
        go_through_from_ingest(browser, results)
        wait_until(lambda: all(status != "running" for status in job_states(db).values()), 1800, "every job")
        browser = Browser(new_page(), f"http://127.0.0.1:{port}", psutil.Process(server.pid))
        go_through(browser, f"{archive} archive, later in a new tab", results)


def go_through_from_ingest(browser: Browser, results: dict) -> None:
    """From the Ingest page the curator watched: every other page, in the same tab."""
    title = "right after an app ingest (same tab)"
    print(f"{title}:", flush=True)
    for label, link in [("Home", "Home"), *OPENS[2:], ("Ingest", "Ingest")]:
        timed(browser, title, label, link, results)


class browsing:
    """Chromium, opening 1440 x 900 tabs on demand."""

    def __enter__(self):
        from playwright.sync_api import sync_playwright

        self.playwright = sync_playwright().start()
        self.chromium = self.playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)

        def new_page():
            page = self.chromium.new_page(viewport={"width": 1440, "height": 900})
            page.set_default_timeout(300_000)
            return page

        return new_page

    def __exit__(self, *exc):
        self.chromium.close()
        self.playwright.stop()


def report(results: dict) -> bool:
    print(f"\nFirst opens in Chromium, click to settled screen (target < {TARGET_MS} ms):")
    ok = True
    for title, rows in results.items():
        print(f"  {title}")
        for label, settled, cpu, complete in rows:
            over = settled > TARGET_MS
            ok &= not over
            print(f"    {label:24s} {settled:7.0f} ms   server CPU {cpu:6.0f} ms   complete {shown_ms(complete):>9s}"
                  f"{'  OVER' if over else ''}")
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--manifests", nargs="+", choices=["large", "ingest"], default=["large", "ingest"])
    parser.add_argument("--archive", choices=["generated", "real"], default="generated")
    parser.add_argument("--pages", type=int, default=100, help="generated pages the app ingests")
    parser.add_argument("--keep", action="store_true", help="reuse the large manifest of an earlier run")
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "bench" / "out" / "first-opens")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    os.environ.pop("CURATION_ROOTS", None)
    results: dict = {}
    if "large" in args.manifests:
        large(args.out, args.keep, results)
    if "ingest" in args.manifests:
        ingest(args.out, args.archive, args.pages, results)
    print("\nall under target" if report(results) else "\nSOME OVER TARGET")


if __name__ == "__main__":
    main()
