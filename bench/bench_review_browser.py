"""Review in a real browser: how long each key or click takes, from the press to a settled screen.

bench_dashboard.py times the script runs with AppTest (the server's side); a person waits for more: the
browser sends the key, the server runs the script, the browser draws what changed and fetches the images.
This drives Debian's Chromium (1440 x 900, as a curator's laptop) through Review's pages and pictures on a
generated manifest and prints, for each interaction, the time from the key or click to the screen settled:
the script run over (`[data-test-script-state='notRunning']` after it ran) and no image still loading. The
target is under half a second each, on a quiet machine.

The manifest is bench_dashboard's (`--pages`, default 100,000: real page thumbnails, picture rows, overrides,
the model's suggestions, near-duplicate groups), built once and reused with `--keep`; the pictures of its
first `--carded-documents` documents get kept cards (as ingest keeps them; a card is 10-20 kB, so not all of
a big manifest's), the others show a card cut from the page thumbnail as a manifest without its PDFs does.
The PDFs are not there, so the large view shows the page's thumbnail.

    python bench/bench_review_browser.py [--pages 100000] [--repeat 3] [--keep] [--out bench/out/review-browser]
"""

from __future__ import annotations

import argparse
import os
import pathlib
import statistics
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

from bench_dashboard import add_pictures, build, remove_manifest  # noqa: E402
from curation import Manifest  # noqa: E402
from curation.export.card import CARD_SIDE  # noqa: E402
from curation.manifest import picture_images, picture_thumbnails  # noqa: E402
from server_support import CHROMIUM_ARGS, CHROMIUM, streamlit_server  # noqa: E402

TARGET_MS = 500
QUIET_MS = 300  # the screen counts as settled once the script has stayed over this long
NO_RUN_MS = 10_000
# Every change of the script's state, with the browser's clock, from the moment the page loads.
WATCH_JS = """() => {
    window.__benchStates = [];
    let last = null;
    const note = () => {  // on any change of the page: the element that holds the state may be drawn anew
        const el = document.querySelector('[data-test-script-state]');
        const state = el && el.getAttribute('data-test-script-state');
        if (state && state !== last) window.__benchStates.push([performance.now(), last = state]);
    };
    new MutationObserver(note).observe(document.body, {subtree: true, childList: true, attributes: true,
                                                        attributeFilter: ['data-test-script-state']});
}"""
# When the script ran after `since` and stopped for good (none running since), and every image has loaded; -1
# when no script ran within NO_RUN_MS (the interaction needed none: nothing to wait for).
SETTLED_JS = """([since, quiet, none]) => {
    const states = window.__benchStates.filter(([at]) => at >= since);
    if (!states.some(([, state]) => state === 'running')) return performance.now() - since > none ? -1 : null;
    const [at, state] = states[states.length - 1];
    const loading = [...document.images].some(img => img.isConnected && !img.complete);
    if (state !== 'notRunning' || loading || performance.now() - at < quiet) return null;
    return at - since;
}"""


def build_manifest(db: pathlib.Path, pages: int, carded_documents: int) -> None:
    remove_manifest(db)
    build(db, max(1, pages // 333), pages)
    with Manifest(db) as manifest:
        count = add_pictures(manifest)
        add_cards(manifest, carded_documents)
        manifest.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    print(f"with {count:,} pictures, the first {carded_documents} documents' pictures carded", flush=True)


def add_cards(manifest: Manifest, documents: int) -> None:
    """Kept cards for the pictures of the first `documents` documents: each cut from its page's thumbnail at
    the card's size (the bytes and the reading are what count here, not the sharpness)."""
    rows = list(manifest.picture_rows(where=f"x.doc_id <= {int(documents)}"))
    thumbs = dict(((d, p), j) for d, p, j in manifest.conn.execute(
        f"SELECT doc_id, page, jpeg FROM thumbnails WHERE doc_id <= {int(documents)}"))
    with manifest.transaction():
        for row in rows:
            thumb = thumbs.get((row["doc_id"], row["page"]))
            if thumb:
                box = (row["bx0"], row["by0"], row["bx1"], row["by1"])
                card = picture_images.crop(thumb, box, row["width"], row["height"], side=CARD_SIDE)
                picture_thumbnails.store(manifest.conn, "sqlite", manifest.thumbnail_folder, None,
                                         [(row["id"], row["page"], row["number"], box, card)])


class Browser:
    """One Chromium page on the dashboard, timing each interaction to a settled screen."""

    def __init__(self, page, url: str):
        self.page, self.url = page, url

    def load(self, path: str) -> float:
        started = time.perf_counter()
        self.page.goto(f"{self.url}/{path}")
        self.page.wait_for_selector("[data-test-script-state='notRunning']", timeout=120_000)
        self.page.wait_for_function("() => [...document.images].every(img => img.complete)", timeout=120_000)
        elapsed = (time.perf_counter() - started) * 1000
        self.page.wait_for_function("() => Boolean((window.__curationKeyboards || {})['review-pages'])")  # keys heard
        self.page.evaluate(WATCH_JS)
        self.page.wait_for_timeout(1000)  # a rerun the first one asks for (the keyboard's) is over
        return elapsed

    def now(self) -> float:
        return self.page.evaluate("performance.now()")

    def settle_after(self, since: float) -> float:
        handle = self.page.wait_for_function(SETTLED_JS, arg=[since, QUIET_MS, NO_RUN_MS], timeout=120_000,
                                             polling=20)
        return handle.json_value()

    def timed(self, action) -> float:
        """`action()` (a key, a click), timed in the browser's clock from just before it to the settled screen."""
        since = self.now()
        action()
        return self.settle_after(since)


def interactions(browser: Browser) -> list[tuple[str, callable]]:
    """(what a curator does, how) in the order done: each leaves the screen where the next starts."""
    page = browser.page
    key = lambda name: lambda: page.keyboard.press(name)  # noqa: E731
    click = lambda key, name: lambda: page.locator(f".st-key-{key}").get_by_role("radio", name=name).click()  # noqa: E731
    dialog = page.get_by_role("dialog")

    def drag():
        image = dialog.frame_locator("iframe").locator("img")
        box = image.bounding_box()
        page.mouse.move(box["x"] + 0.2 * box["width"], box["y"] + 0.1 * box["height"])
        page.mouse.down()
        page.mouse.move(box["x"] + 0.5 * box["width"], box["y"] + 0.3 * box["height"], steps=5)
        page.mouse.up()

    return [
        ("pages: → (next card)", key("ArrowRight")),
        ("pages: ↓ (a row down)", key("ArrowDown")),
        ("pages: e (exclude)", key("e")),
        ("pages: z (undo)", key("z")),
        ("pages: Enter (open large)", key("Enter")),
        ("pages: → in the large view", key("ArrowRight")),
        ("pages: Esc (close)", key("Escape")),
        ("pages: filter Kept (click)", click("decision", "Kept")),
        ("pages: filter All (click)", click("decision", "All pages")),
        ("pages: next screen (click)", lambda: page.get_by_role("button", name="Next 40 pages").click()),
        ("switch to Pictures (click)", click("view", "Pictures")),
        ("pictures: → (next card)", key("ArrowRight")),
        ("pictures: i (include)", key("i")),
        ("pictures: z (undo)", key("z")),
        ("pictures: Enter (open large)", key("Enter")),
        ("pictures: → in the large view", key("ArrowRight")),
        ("pictures: + (zoom)", key("+")),
        ("pictures: Fix this picture's box (click)", lambda: dialog.get_by_text("Fix this picture's box").click()),
        ("pictures: drag a box", drag),
        ("pictures: z (undo the box)", key("z")),
        ("pictures: Esc (close)", key("Escape")),
        ("pictures: filter Kept (click)", click("pic_decision", "Kept")),
        ("pictures: filter All (click)", click("pic_decision", "All pictures")),
        ("pictures: next screen (click)", lambda: page.get_by_role("button", name="Next 48").click()),
        ("switch to Pages (click)", click("view", "Pages")),
    ]


def run(db: pathlib.Path, repeat: int, log: pathlib.Path) -> list[tuple[str, list[float]]]:
    from playwright.sync_api import sync_playwright

    times: dict[str, list[float]] = {}
    with streamlit_server(log, {"CURATION_DB": str(db)}) as (_, port), sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for _ in range(repeat):
                page = chromium.new_page(viewport={"width": 1440, "height": 900})
                page.set_default_timeout(120_000)
                browser = Browser(page, f"http://127.0.0.1:{port}")
                times.setdefault("load Review", []).append(browser.load("review"))
                for label, action in interactions(browser):
                    times.setdefault(label, []).append(browser.timed(action))
                    print(f"  {label}: {times[label][-1]:.0f} ms", flush=True)
                page.close()
        finally:
            chromium.close()
    return list(times.items())


def report(results: list[tuple[str, list[float]]], repeat: int) -> bool:
    print(f"\nReview in Chromium, key or click to settled screen (median of {repeat}; target < {TARGET_MS} ms):")
    ok = True
    for label, values in results:
        values = [v for v in values if v >= 0]  # -1: no script ran
        if not values:
            print(f"  {label:44s}  no script run")
            continue
        median = statistics.median(values)
        over = median > TARGET_MS and not label.startswith("load")
        ok &= not over
        spread = f"{min(values):.0f}-{max(values):.0f}" if len(values) > 1 else ""
        print(f"  {label:44s} {median:7.0f} ms  {spread:>11s}{'  OVER' if over else ''}")
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--carded-documents", type=int, default=5, help="documents whose pictures get kept cards")
    parser.add_argument("--keep", action="store_true", help="reuse the manifest of an earlier run if present")
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "bench" / "out" / "review-browser")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    db = args.out / f"manifest-{args.pages}.sqlite"
    if not (args.keep and db.exists()):
        build_manifest(db, args.pages, args.carded_documents)
    os.environ.pop("CURATION_ROOTS", None)
    ok = report(run(db, args.repeat, args.out / "streamlit.log"), args.repeat)
    print("\nall under target" if ok else "\nSOME OVER TARGET")


if __name__ == "__main__":
    main()
