"""Dashboard benchmark: how long each page's script run takes on a 100,000-page manifest.

Builds the manifest by inserting rows directly (no PDFs, no scoring: seconds, not hours), with real
256-pixel JPEG thumbnails, 1,000 overrides and a few failed pages, then runs every page with Streamlit's
AppTest and times each interaction a curator makes: the first load, moving the cutoff, a filter, the
next screen, the last screen, an override, a bulk action. AppTest runs the script exactly as the server
does, so these are the server's times; the browser's drawing comes on top. The target is under one
second per interaction. The library's queries are timed alone too, to show where the time goes.

    python bench/bench_dashboard.py [--pages 100000] [--documents 300] [--repeat 3] [--out bench/out/dashboard]
"""

from __future__ import annotations

import argparse
import os
import pathlib
import random
import statistics
import sys
import time

import cv2

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from curation import Manifest, views  # noqa: E402
from curation.manifest import PageResult  # noqa: E402
from curation.sample import fill_manifest  # noqa: E402
from curation.scorer import thumbnail_jpeg  # noqa: E402
from curation.synthetic import PageSpec, page_image  # noqa: E402

TARGET_MS = 1000


def build(db: pathlib.Path, documents: int, pages: int) -> None:
    started = time.perf_counter()
    thumbs = [thumbnail_jpeg(cv2.cvtColor(page_image(PageSpec(kind=kind, seed=n, dpi=100)), cv2.COLOR_RGB2GRAY))
              for n, kind in enumerate(["text", "engraving", "mixed", "text", "faded_engraving", "text"])]
    with Manifest(db) as manifest:
        ids = fill_manifest(manifest, documents, pages // documents, seed=1, thumbnails=thumbs)
        rng = random.Random(0)
        with manifest.transaction():
            for _ in range(1000):
                manifest.set_override(rng.choice(ids), rng.randrange(pages // documents), rng.random() < 0.5)
        manifest.save_pages(ids[0], [PageResult(page=pages // documents + n, status="failed", error="damaged page")
                                     for n in range(5)])
    size = db.stat().st_size / 1e6
    print(f"built {db} ({documents} documents, {documents * (pages // documents):,} pages, {size:,.0f} MB) "
          f"in {time.perf_counter() - started:.1f} s")


def timed(action, repeat: int) -> float:
    """Median milliseconds of `action()` over `repeat` runs."""
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def app(script: str):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / script), default_timeout=120)
    at.run()  # the first run imports and compiles; a person pays it once per server, not per click
    assert not at.exception, [e.value for e in at.exception]
    return at


def run(at) -> None:
    at.run()
    assert not at.exception, [e.value for e in at.exception]


def interactions(repeat: int) -> list[tuple[str, float]]:
    results = []

    def measure(label, action):
        results.append((label, timed(action, repeat)))

    for script in ("streamlit_app.py", "pages/home.py", "pages/ingest.py"):
        at = app(script)
        measure(f"{script}: load", lambda: run(at))

    at = app("pages/threshold.py")
    measure("threshold: load", lambda: run(at))
    values = iter([30.0, 40.0, 50.0, 35.0, 45.5, 38.0, 52.0, 41.0] * repeat)
    measure("threshold: move the cutoff", lambda: (at.slider(key="threshold_slider").set_value(next(values)), run(at)))
    measure("threshold: log count on/off", lambda: (at.toggle(key="threshold_log").set_value(
        not at.toggle(key="threshold_log").value), run(at)))
    measure("threshold: Suggest", lambda: (next(b for b in at.button if b.label == "Suggest").click(), run(at)))

    at = app("pages/review.py")
    measure("review: load (40 thumbnails)", lambda: run(at))
    screens = iter(range(2, 2 + 3 * repeat))
    measure("review: next screen", lambda: (at.pagination[0].set_value(next(screens)), run(at)))
    last = -(-views_count() // 40)
    measure("review: last screen (offset ~100k)", lambda: (at.pagination[0].set_value(last), run(at)))
    for decision in ("kept", "rejected", "near", "overridden", "failed"):
        measure(f"review: filter {decision}", lambda d=decision: (
            at.segmented_control(key="decision").set_value(d), run(at)))
    at.segmented_control(key="decision").set_value("all")
    run(at)
    measure("review: sort by document and page", lambda: (at.selectbox(key="sort").set_value("page"), run(at)))
    choices = iter(["exclude", "include", "auto"] * repeat)

    def override():
        card = next(c for c in at.segmented_control if c.label == "Decision")
        card.set_value(next(choices))
        run(at)
    measure("review: include/exclude one page", override)

    def bulk():
        at.segmented_control(key="decision").set_value("near")
        run(at)
        next(b for b in at.button if b.label == "Exclude all").click()
        run(at)
        next(b for b in at.button if b.label.startswith("Exclude ") and b.label.endswith(" pages")).click()
        started = time.perf_counter()
        run(at)
        return (time.perf_counter() - started) * 1000
    results.append(("review: bulk exclude 'near' (confirmed)", statistics.median(bulk() for _ in range(repeat))))
    return results


def views_count() -> int:
    with Manifest(os.environ["CURATION_DB"]) as manifest:
        return views.page_count(manifest)


def queries(repeat: int) -> list[tuple[str, float]]:
    with Manifest(os.environ["CURATION_DB"]) as m:
        rows = views.page_rows(m, 45, limit=40)
        keys = [(r["doc_id"], r["page"]) for r in rows]
        checks = [
            ("summary()", lambda: m.summary(45)),
            ("figures(draft, saved)", lambda: views.figures(m, 40, 45)),
            ("histogram(60 bins)", lambda: views.histogram(m, 45, 60)),
            ("suggest_threshold()", lambda: views.suggest_threshold(m)),
            ("borderline(8)", lambda: views.borderline(m, 45, 8)),
            ("filter_counts(all)", lambda: views.filter_counts(m, 45)),
            ("filter_counts(kept)", lambda: views.filter_counts(m, 45, views.PageFilter("kept"))),
            ("page_rows(first 40)", lambda: views.page_rows(m, 45, limit=40)),
            ("page_rows(offset 99,960)", lambda: views.page_rows(m, 45, limit=40, offset=99_960)),
            ("thumbnails(40)", lambda: views.thumbnails(m, keys)),
            ("documents()", lambda: m.documents()),
        ]
        return [(label, timed(fn, repeat)) for label, fn in checks]


def report(title: str, results: list[tuple[str, float]]) -> bool:
    print(f"\n{title}")
    ok = True
    for label, ms in results:
        flag = "" if ms < TARGET_MS else "  OVER TARGET"
        ok &= ms < TARGET_MS
        print(f"  {label:42s} {ms:8.0f} ms{flag}")
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=100_000)
    parser.add_argument("--documents", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "bench" / "out" / "dashboard")
    parser.add_argument("--keep", action="store_true", help="reuse the manifest of an earlier run if present")
    args = parser.parse_args()
    db = args.out / f"manifest-{args.pages}.sqlite"
    if not (args.keep and db.exists()):
        for suffix in ("", "-wal", "-shm"):
            pathlib.Path(f"{db}{suffix}").unlink(missing_ok=True)
        args.out.mkdir(parents=True, exist_ok=True)
        build(db, args.documents, args.pages)
    os.environ["CURATION_DB"] = str(db)
    ok = report(f"Library queries (median of {args.repeat}):", queries(args.repeat))
    ok &= report(f"Script run per interaction, AppTest (median of {args.repeat}; target < {TARGET_MS} ms):",
                 interactions(args.repeat))
    print("\nall under target" if ok else "\nSOME OVER TARGET")


if __name__ == "__main__":
    main()
