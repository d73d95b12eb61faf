"""Dashboard benchmark: how long each page's script run takes on a 100,000-page (or 1,000,000-page) manifest.

Builds the manifest by inserting rows directly (no PDFs, no scoring: seconds, not hours; 1 M pages take
a few minutes), with real
256-pixel JPEG thumbnails, picture features on every page, 1,000 overrides, the model's suggestions for
every page, 2,000 near-duplicate groups, captions and a few failed pages, then runs every page with
Streamlit's AppTest and times each interaction a curator makes: the first load, switching the rule,
moving either cutoff, a filter (Model disagrees and Near-duplicates included), the next screen, the last
screen, an override, a caption, learning from the overrides, a bulk action. AppTest runs the script exactly as the server
does, so these are the server's times; the browser's drawing comes on top. The target is under half a
second per interaction. The library's queries are timed alone too, to show where the time goes.

Pictures are rows of the manifest too: 2.5 a page on average (250,000 for 100,000 pages), the largest the
size the page's features say, with a curator's work on some (decisions, added, deleted and redrawn
pictures, captions) and a captioning model's captions on more. The library queries a Pictures screen
runs (its rows by filter and sort, a screen at a time by key, the count, the crops' thumbnails, a picture
override and the page counts after it) are listed in one place, `picture_queries`; the page queries are
timed before the picture rows are added and after, to show the pictures do not slow the pages.

Thumbnails go to the store `--thumbnails` names (curation.manifest.thumbnail_store). Before the timings, the bytes a
page costs in each store are measured on a sample manifest per store (`--size-sample` pages, the same
rows): the manifest file, the folder beside it (disk blocks taken, not only bytes), and their sum.

`--direct` inserts the pages in bulk instead of through the ingest's writer (no thumbnails): 4 M pages in
minutes rather than hours; `--pictures-per-page 0` leaves the picture rows out (the Pictures view untimed).

    python bench/bench_dashboard.py [--pages 100000] [--documents PAGES/333] [--thumbnails sqlite|folder|none]
                                    [--size-sample 20000] [--repeat 3] [--out bench/out/dashboard]
                                    [--pictures-per-page 2.5] [--no-apps] [--direct]
"""

from __future__ import annotations

import argparse
import datetime
import os
import pathlib
import random
import resource
import shutil
import statistics
import sys
import time

import cv2
import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # apptest_support: the grid of cards clicked as the browser does

from curation import Manifest  # noqa: E402
from curation.manifest import history, thumbnail_store  # noqa: E402
from curation import views
from curation.views import picture_views
from curation.manifest.rules import KEEP_SQL, PICTURE_KEEP_SQL  # noqa: E402
from curation.scoring.result import PageResult  # noqa: E402
from curation.scoring.scorer import thumbnail_jpeg  # noqa: E402
from curation.runs.sample import fill_manifest  # noqa: E402
from curation.sources.synthetic import PageSpec, page_image  # noqa: E402

TARGET_MS = 500  # a script run per interaction, and each query alone
PICTURES_PER_SCREEN = 48  # a Pictures screen: 6 or more crops a row at 1440 px, eight rows
PAGE_SIZE = (1224, 1584)  # reference pixels (144 dpi) of the generated pages: 8.5 x 11 inches


def sample_thumbnails() -> list[bytes]:
    """Real thumbnails of synthetic pages, used in turn: a few blobs serve a million pages."""
    return [thumbnail_jpeg(cv2.cvtColor(page_image(PageSpec(kind=kind, seed=n, dpi=100)), cv2.COLOR_RGB2GRAY))
            for n, kind in enumerate(["text", "engraving", "mixed", "text", "faded_engraving", "text"])]


def remove_manifest(db: pathlib.Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        pathlib.Path(f"{db}{suffix}").unlink(missing_ok=True)
    shutil.rmtree(thumbnail_store.folder_of(db), ignore_errors=True)


def build(db: pathlib.Path, documents: int, pages: int, store: str = "sqlite") -> None:
    started = time.perf_counter()
    thumbs = sample_thumbnails()
    with Manifest(db) as manifest:
        manifest.thumbnail_store = store
        ids = fill_manifest(manifest, documents, pages // documents, seed=1, thumbnails=thumbs)
        add_overrides_and_failures(manifest, ids, pages // documents)
        add_features(manifest, ids, pages // documents)
        manifest.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    manifest_bytes, folder_bytes = stored_bytes(db)
    print(f"built {db} ({documents} documents, {documents * (pages // documents):,} pages, thumbnails: {store}; "
          f"manifest {manifest_bytes / 1e6:,.0f} MB, folder {folder_bytes / 1e6:,.0f} MB) "
          f"in {time.perf_counter() - started:.1f} s")


def stored_bytes(db: pathlib.Path) -> tuple[int, int]:
    """The manifest's bytes (with its WAL) and the disk its thumbnail folder takes (whole blocks per file)."""
    manifest = sum(p.stat().st_size for p in (db, pathlib.Path(f"{db}-wal")) if p.exists())
    folder = thumbnail_store.folder_of(db)
    on_disk = sum(f.stat().st_blocks * 512 for f in folder.rglob("*") if f.is_file()) if folder.is_dir() else 0
    return manifest, on_disk


def store_sizes(folder: pathlib.Path, pages: int) -> list[tuple[str, float, float]]:
    """(store, manifest bytes per page, folder bytes per page) on a `pages`-page sample of the same rows."""
    sizes = []
    documents = max(1, pages // 333)
    for store in thumbnail_store.STORES:
        db = folder / f"size-{store}.sqlite"
        remove_manifest(db)
        build(db, documents, pages, store)
        in_manifest, in_folder = stored_bytes(db)
        count = documents * (pages // documents)
        sizes.append((store, in_manifest / count, in_folder / count))
        remove_manifest(db)
    return sizes


def report_sizes(sizes: list[tuple[str, float, float]], pages: int) -> None:
    print(f"\nBytes per page by thumbnail store ({pages:,}-page sample; thumbnails average "
          f"{statistics.mean(map(len, sample_thumbnails())):,.0f} bytes):")
    print(f"  {'store':8s} {'manifest':>10s} {'folder':>10s} {'total':>10s}   16 M pages")
    for store, in_manifest, in_folder in sizes:
        total = in_manifest + in_folder
        print(f"  {store:8s} {in_manifest:10,.0f} {in_folder:10,.0f} {total:10,.0f}   "
              f"{16e6 * in_manifest / 1e9:,.0f} GB manifest + {16e6 * in_folder / 1e9:,.0f} GB folder")


def add_features(manifest: Manifest, ids: list[int], per_document: int) -> None:
    """Picture features as real scans give them (σ fooled on one page in five), the model's suggestions
    for every page, near-duplicate groups of reprinted plates and some captions, all in bulk SQL."""
    rows = manifest.conn.execute("SELECT doc_id, page, sigma FROM pages WHERE status = 'ok' ORDER BY doc_id, page"
                                 ).fetchall()
    rng = np.random.default_rng(2)
    sigma = np.array([row["sigma"] for row in rows])
    picture, share, tone, phash = page_figures(sigma, rng)
    keys = [(row["doc_id"], row["page"]) for row in rows]
    with manifest.transaction():
        manifest.conn.executemany(
            # picture_area as on a page of about 100 square inches: the picture rule decides on it.
            "UPDATE pages SET picture_share = ?, picture_area = ?, ink_tone = ?, sigma_content = ?, "
            "ink_coverage = ?, phash = ?, features_version = 1 WHERE doc_id = ? AND page = ?",
            ((float(a), float(a) * 100, float(b), float(c) * 0.8, float(a) * 2, int(h), d, p) for a, b, c, h, (d, p) in
             zip(share, tone, sigma, phash, keys)))
    add_model_and_groups(manifest, keys, picture, rng)


def page_figures(sigma: np.ndarray, rng) -> tuple[np.ndarray, ...]:
    """Whether each page holds a picture (σ fooled on one page in five), its picture share, ink tone and hash."""
    count = len(sigma)
    picture = (sigma > 45) ^ (rng.random(count) < 0.2)
    share = np.where(picture, 10 ** rng.uniform(np.log10(0.02), np.log10(0.6), count),
                     np.where(rng.random(count) < 0.5, 0.0, 10 ** rng.uniform(-4, np.log10(0.03), count)))
    tone = np.where(picture, rng.uniform(0.6, 0.85, count), rng.uniform(0.35, 0.55, count))
    return picture, share, tone, rng.integers(-2**62, 2**62, count)


def add_model_and_groups(manifest: Manifest, keys: list[tuple[int, int]], picture: np.ndarray, rng) -> None:
    """The model's suggestions for every page, near-duplicate groups of reprinted plates and some captions."""
    # A model that agrees with the truth on 97 % of the pages: it disagrees with the picture rule on a few.
    suggested = picture ^ (rng.random(len(keys)) < 0.03)
    manifest.replace_suggestions((d, p, bool(k), float(c)) for (d, p), k, c in
                                 zip(keys, suggested, rng.uniform(0.5, 1.0, len(keys))))
    manifest.set_setting("suggestions_from_overrides", 1000)
    plates = [key for key, is_picture in zip(keys, picture) if is_picture]
    order = rng.permutation(len(plates))
    groups, start = [], 0
    while len(groups) < 2000 and start + 4 <= len(order):
        size = int(rng.integers(2, 5))
        groups.append([plates[i] for i in order[start:start + size]])
        start += size
    manifest.replace_duplicates(groups)
    manifest.set_captions((d, p, "fashion plate, engraving") for d, p in plates[:5000])


def build_direct(db: pathlib.Path, documents: int, pages: int) -> None:
    """The same manifest as build() without thumbnails, its pages inserted in bulk rather than through the
    ingest's writer: minutes for 4 M pages where build() takes hours on a small machine."""
    started = time.perf_counter()
    per_document = pages // documents
    rng = np.random.default_rng(1)
    total = documents * per_document
    text = rng.random(total) < 0.7
    sigma = np.where(text, rng.normal(25, 6, total), rng.normal(60, 12, total)).clip(3, 120)
    picture, share, tone, phash = page_figures(sigma, np.random.default_rng(2))
    doc_ids = np.repeat(np.arange(1, documents + 1), per_document)
    numbers = np.tile(np.arange(per_document), documents)
    with Manifest(db) as manifest:
        manifest.thumbnail_store = "none"
        manifest.conn.execute("PRAGMA cache_size = -1000000")  # 1 GB: the indexes' pages stay in memory
        stamp = history.now()
        with manifest.transaction():
            manifest.conn.executemany(
                "INSERT INTO documents (id, sha256, path, size, pages, status, added_at, updated_at) "
                "VALUES (?, ?, ?, 1000000, ?, 'ok', ?, ?)",
                ((d, f"{1:08x}{d:056x}", f"/archive/issue-001-{d:06d}.pdf", per_document, stamp, stamp)
                 for d in range(1, documents + 1)))
            manifest.conn.executemany(
                "INSERT INTO pages (doc_id, page, status, sigma, width, height, method, scored_at, picture_share, "
                "picture_area, ink_tone, sigma_content, ink_coverage, phash, features_version) "
                "VALUES (?, ?, 'ok', ?, 1224, 1584, 'jpeg', ?, ?, ?, ?, ?, ?, ?, 1)",
                ((int(d), int(n), float(s), stamp, float(a), float(a) * 100, float(b), float(s) * 0.8, float(a) * 2,
                  int(h)) for d, n, s, a, b, h in zip(doc_ids, numbers, sigma, share, tone, phash)))
        add_overrides_and_failures(manifest, list(range(1, documents + 1)), per_document)
        add_model_and_groups(manifest, list(zip(doc_ids.tolist(), numbers.tolist())), picture,
                             np.random.default_rng(3))
        manifest.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    manifest_bytes, _ = stored_bytes(db)
    print(f"built {db} directly ({documents} documents, {total:,} pages, thumbnails: none; "
          f"manifest {manifest_bytes / 1e6:,.0f} MB) in {time.perf_counter() - started:.1f} s", flush=True)


def add_overrides_and_failures(manifest: Manifest, ids: list[int], per_document: int) -> None:
    """1,000 overrides through the writer (recorded), and five failed pages."""
    rng = random.Random(0)
    with manifest.transaction():
        for _ in range(1000):
            manifest.set_override(rng.choice(ids), rng.randrange(per_document), rng.random() < 0.5)
    manifest.save_pages(ids[0], [PageResult(page=per_document + n, status="failed", error="damaged page")
                                 for n in range(5)])


def add_pictures(manifest: Manifest, per_page: float = 2.5, seed: int = 3) -> int:
    """Picture rows for every scored page, inserted in bulk as the scorer would leave them: a Poisson number
    a page (`per_page` on average), the largest the size the page's features give, the others smaller, at
    random places; then a curator's work, through the writer's own figures (Manifest._refresh_pages):
    2,000 decisions (300 of them on pictures the scorer no longer finds), 500 added and 500 deleted pictures, 1,000 redrawn boxes, 3,000 captions; and a
    captioning model's caption on one picture in five. Returns how many pictures there are."""
    rows = manifest.conn.execute("SELECT doc_id, page, COALESCE(picture_area, 0) AS area FROM pages "
                                 "WHERE status = 'ok' ORDER BY doc_id, page").fetchall()
    rng = np.random.default_rng(seed)
    counts = rng.poisson(per_page, len(rows))
    width, height = PAGE_SIZE
    pictures = []
    for (doc_id, page, largest), count in zip(rows, counts):
        if not count:
            continue
        areas = [largest or float(rng.uniform(0.05, 0.5))] + list(rng.uniform(0.05, 1, count - 1) * (largest or 0.5))
        for rank, area in enumerate(areas):
            side_w = min(width - 2, max(8, int(np.sqrt(area) * 144 * rng.uniform(0.7, 1.4))))
            side_h = min(height - 2, max(8, int(area * 144 * 144 / side_w)))
            x0, y0 = int(rng.integers(0, width - side_w)), int(rng.integers(0, height - side_h))
            pictures.append((doc_id, page, rank + 1, rank, x0, y0, x0 + side_w, y0 + side_h, round(float(area), 3)))
    with manifest.transaction():
        manifest.conn.executemany("INSERT INTO pictures (doc_id, page, number, rank, x0, y0, x1, y1, area) "
                                  "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", pictures)
        manifest.conn.execute("UPDATE pages SET picture_count = (SELECT COUNT(*) FROM pictures x WHERE "
                              "x.doc_id = pages.doc_id AND x.page = pages.page)")
    ids = [row[0] for row in manifest.conn.execute("SELECT id FROM pictures ORDER BY id")]
    chosen = iter(rng.permutation(ids).tolist())
    decided = [next(chosen) for _ in range(2000)]
    deleted = [next(chosen) for _ in range(500)]
    redrawn = [next(chosen) for _ in range(1000)]
    captioned = [next(chosen) for _ in range(3000)]
    with manifest.transaction():
        manifest.conn.executemany("UPDATE pictures SET keep = ? WHERE id = ?",
                                  ((int(rng.random() < 0.5), pid) for pid in decided))
        manifest.conn.executemany("UPDATE pictures SET rank = NULL WHERE id = ?",  # decided, then not found again
                                  ((pid,) for pid in decided[:300]))
        manifest.conn.executemany("UPDATE pictures SET deleted = 1 WHERE id = ?", ((pid,) for pid in deleted))
        manifest.conn.executemany(
            "UPDATE pictures SET fx0 = x0 + 4, fy0 = y0 + 4, fx1 = x1 - 4, fy1 = y1 - 4, "
            "fixed_area = ROUND((x1 - x0 - 8) * (y1 - y0 - 8) / 20736.0, 3) WHERE id = ?", ((pid,) for pid in redrawn))
        manifest.conn.executemany("UPDATE pictures SET caption = ? WHERE id = ?",
                                  ((f"a lady in a walking dress, plate {n}", pid) for n, pid in enumerate(captioned)))
        manifest.conn.execute("UPDATE pictures SET auto_caption = 'an engraving of a person', "
                              "auto_caption_model = 'bench' WHERE id % 5 = 0")
        for n in range(500):  # added by hand on pages the scorer saw
            doc_id, page, _ = rows[int(rng.integers(len(rows)))]
            number = manifest._last_number(doc_id, page) + 1
            manifest.conn.execute("INSERT INTO pictures (doc_id, page, number, x0, y0, x1, y1, area, added) "
                                  "VALUES (?, ?, ?, 100, 100, 500, 600, 9.645, 1)", (doc_id, page, number))
        touched = manifest.conn.execute("SELECT DISTINCT doc_id, page FROM pictures WHERE keep IS NOT NULL OR added "
                                        "OR deleted OR fx0 IS NOT NULL").fetchall()
        manifest._refresh_pages([tuple(key) for key in touched])
    return manifest.conn.execute("SELECT COUNT(*) FROM pictures").fetchone()[0]


def timed(action, repeat: int, clock=time.perf_counter) -> float:
    """Median milliseconds of `action()` over `repeat` runs (by `clock`: wall, or with time.process_time the CPU
    time of this process, the script's runs and any thread of theirs, not the jobs' processes)."""
    samples = []
    for _ in range(repeat):
        started = clock()
        action()
        samples.append((clock() - started) * 1000)
    return statistics.median(samples)


def latest_job_id(kind: str) -> int:
    with Manifest(os.environ["CURATION_DB"]) as manifest:
        job = manifest.latest_job(kind)
    return job["id"] if job is not None else 0


def wait_for_job(kind: str, after: int, limit_s: float = 900) -> None:
    """Until a job of `kind` newer than job `after` has registered and ended."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        with Manifest(os.environ["CURATION_DB"]) as manifest:
            job = manifest.latest_job(kind)
        if job is not None and job["id"] > after and job["status"] != "running":
            return
        time.sleep(0.5)
    raise SystemExit(f"the {kind} job did not end in {limit_s:.0f} s")


def app(script: str):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / script), default_timeout=120)
    at.run()  # the first run imports and compiles; a person pays it once per server, not per click
    assert not at.exception, [e.value for e in at.exception]
    return at


def run(at) -> None:
    at.run()
    assert not at.exception, [e.value for e in at.exception]


def interactions(repeat: int, results: list[tuple[str, float]], pictures: bool = True,
                 clock=time.perf_counter) -> list[tuple[str, float]]:
    """Each interaction's median script run (by `clock`), appended to `results` as it is measured; the Pictures
    view's too when the manifest holds `pictures`."""

    def measure(label, action):
        results.append((label, timed(action, repeat, clock)))

    for script in ("streamlit_app.py", "pages/home.py", "pages/ingest.py"):
        at = app(script)
        measure(f"{script}: load", lambda: run(at))

    at = app("pages/threshold.py")
    measure("threshold: load (picture rule)", lambda: run(at))
    shares = iter([2.0, 5.0, 1.0, 8.0, 3.5, 0.5, 12.0, 4.0] * repeat)
    measure("threshold: move the picture cutoff", lambda: (
        at.slider(key="picture_area_slider").set_value(next(shares)), run(at)))
    values = iter([30.0, 40.0, 50.0, 35.0, 45.5, 38.0, 52.0, 41.0] * repeat)
    measure("threshold: move the σ cutoff", lambda: (at.slider(key="threshold_slider").set_value(next(values)), run(at)))
    measure("threshold: log count on/off", lambda: (at.toggle(key="threshold_log").set_value(
        not at.toggle(key="threshold_log").value), run(at)))
    measure("threshold: Suggest", lambda: (
        next(b for b in at.button if b.label == "Suggest a σ cutoff").click(), run(at)))
    for rule in ("sigma", "model", "picture"):
        measure(f"threshold: switch the rule to {rule}", lambda r=rule: (
            at.segmented_control(key="threshold_rule").set_value(r), run(at)))
    measure("threshold: σ only, move the σ cutoff", lambda: (
        at.segmented_control(key="threshold_rule").set_value("sigma"),
        at.slider(key="threshold_slider").set_value(next(values)), run(at)))

    at = app("pages/review.py")
    measure("review: load (40 thumbnails)", lambda: run(at))
    screens = iter(range(2, 2 + 3 * repeat))
    measure("review: next screen", lambda: (at.pagination[0].set_value(next(screens)), run(at)))
    last = -(-views_count() // 40)
    measure(f"review: last screen (offset {(last - 1) * 40:,})", lambda: (at.pagination[0].set_value(last), run(at)))
    for decision in ("kept", "rejected", "near", "overridden", "disagrees", "duplicates", "failed"):
        measure(f"review: filter {decision}", lambda d=decision: (
            at.segmented_control(key="decision").set_value(d), run(at)))
    at.segmented_control(key="decision").set_value("all")
    run(at)
    measure("review: sort by document and page", lambda: (at.selectbox(key="sort").set_value("page"), run(at)))
    choices = iter(["exclude", "include", "auto"] * repeat)

    def override():  # a click on the first card's control, as the grid sends it
        from apptest_support import grid_cards, grid_event

        grid_event(at, "decide", next(iter(grid_cards(at))), next(choices))
    measure("review: include/exclude one page", override)
    texts = iter(["a lady in a walking dress", "an evening gown", ""] * repeat)

    def caption():  # the first card's caption box left, as the grid sends it
        from apptest_support import grid_cards, grid_event

        grid_event(at, "caption", next(iter(grid_cards(at))), next(texts))
    measure("review: caption one page", caption)
    # Learn is a job: the click launches it (measured once, the button waits while it runs), then it is waited for.
    before = latest_job_id(views.LEARN_JOB)
    results.append(("review: Learn from my overrides (1,000): the click", timed(lambda: (
        next(b for b in at.button if b.label == "Learn from my overrides").click(), run(at)), 1)))
    wait_for_job(views.LEARN_JOB, before)
    run(at)
    at.segmented_control(key="decision").set_value("duplicates")
    run(at)
    measure("review: Near-duplicates, next screen", lambda: (at.pagination[0].set_value(next(screens)), run(at)))
    at.segmented_control(key="decision").set_value("disagrees")
    at.pagination[0].set_value(1)
    run(at)
    measure("review: Model disagrees, next screen", lambda: (at.pagination[0].set_value(next(screens) % 20 + 1),
                                                             run(at)))

    def bulk_caption():
        at.segmented_control(key="decision").set_value("near")
        run(at)
        next(b for b in at.button if b.label == "Caption all").click()
        run(at)
        at.text_area(key="bulk-caption-text").input("fashion plate")
        run(at)
        overwrite = [box for box in at.checkbox if box.key == "bulk-caption-overwrite"]
        if overwrite:  # the view's pages are captioned (by the run before): overwrite them, as asked
            overwrite[0].check()
            run(at)
        next(b for b in at.button if b.key == "bulk-caption-confirm").click()
        before = last_bulk_job()
        started = time.perf_counter()
        run(at)
        return (time.perf_counter() - started) * 1000, bulk_job_seconds(before)
    timed_bulk("review: bulk caption 'near' (confirmed)", bulk_caption, repeat, results)

    def bulk():
        at.segmented_control(key="decision").set_value("near")
        run(at)
        next(b for b in at.button if b.label == "Exclude all").click()
        run(at)
        next(b for b in at.button if b.label.startswith("Exclude ") and b.label.endswith(" pages")).click()
        before = last_bulk_job()
        started = time.perf_counter()
        run(at)
        return (time.perf_counter() - started) * 1000, bulk_job_seconds(before)
    timed_bulk("review: bulk exclude 'near' (confirmed)", bulk, repeat, results)
    if pictures:
        picture_interactions(repeat, results)
    return results


def threshold_interactions(repeat: int, clock=time.perf_counter) -> list[tuple[str, list[float]]]:
    """Threshold's script runs in ms, every sample, in the order `interactions` makes them: each a real change (a
    cutoff or rule not tried before in this run, Suggest and the log count aside), so no sample is a rerun that
    changes nothing. Every rule's counts at every cutoff are read as the jobs stored them
    (curation.views.cutoff_counts), or, on a manifest without them, counted by the job the page launches
    while the page says so; the moves are lookups."""
    results: list[tuple[str, list[float]]] = []

    def measure(label, actions):
        samples = []
        for action in actions:
            started = clock()
            action()
            samples.append((clock() - started) * 1000)
        results.append((label, samples))
        print(f"  {label:48s} " + " ".join(f"{ms:6.0f}" for ms in samples), flush=True)

    at = app("pages/threshold.py")
    slider = lambda key, value: lambda: (at.slider(key=key).set_value(value), run(at))  # noqa: E731
    rule = lambda name: lambda: (at.segmented_control(key="threshold_rule").set_value(name), run(at))  # noqa: E731
    measure("load (picture rule)", [lambda: run(at)] * repeat)
    measure("move the picture cutoff", [slider("picture_area_slider", v) for v in [5.0, 1.0, 8.0, 3.5, 0.5, 12.0][:repeat * 2]])
    measure("move the σ cutoff", [slider("threshold_slider", v) for v in [30.0, 40.0, 50.0, 35.0, 45.5, 38.0][:repeat * 2]])
    log = lambda: (at.toggle(key="threshold_log").set_value(not at.toggle(key="threshold_log").value), run(at))  # noqa: E731
    measure("log count on/off", [log] * repeat)
    suggest = lambda: (next(b for b in at.button if b.label == "Suggest a σ cutoff").click(), run(at))  # noqa: E731
    measure("Suggest", [suggest] * repeat)
    measure("switch the rule (σ only, model, picture)", [rule(r) for r in ("sigma", "model", "picture")])
    measure("σ only: switch, then move the σ cutoff", [rule("sigma")] + [slider("threshold_slider", v)
                                                                        for v in [52.0, 41.0, 47.5, 33.0][:repeat + 1]])
    measure("model: switch, then move the picture cutoff", [rule("model")] + [slider("picture_area_slider", v)
                                                                              for v in [2.5, 6.0, 0.8, 9.5][:repeat + 1]])
    return results


def count_tables(db: pathlib.Path) -> None:
    """Every rule's Threshold tables counted and stored, as the jobs that score pages leave them (the build
    inserts its rows directly, as no job does)."""
    import subprocess

    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "curation", "cutoffs", "--db", str(db), "--quiet"], cwd=ROOT, check=True)
    print(f"counted Threshold's tables (python -m curation cutoffs) in {time.perf_counter() - started:.1f} s",
          flush=True)


def last_bulk_job() -> int:
    """The id of the latest bulk job (0: none yet)."""
    from curation.views import bulk

    with Manifest(os.environ["CURATION_DB"]) as manifest:
        job = manifest.latest_job(bulk.JOB)
        return job["id"] if job is not None else 0


def bulk_job_seconds(before: int, wait: float = 30.0) -> float | None:
    """How long the bulk job a click started ran (its process registers it within seconds), once it has ended;
    not timed as the click. None when no job came after job `before` (the click did the work itself)."""
    from curation.views import bulk

    deadline = time.monotonic() + wait
    with Manifest(os.environ["CURATION_DB"]) as manifest:
        while True:
            job = manifest.latest_job(bulk.JOB)
            if job is not None and job["id"] > before and job["status"] != "running":
                break
            if (job is None or job["id"] <= before) and time.monotonic() > deadline:
                return None
            time.sleep(0.2)
    ended = datetime.datetime.fromisoformat(job["finished_at"]) - datetime.datetime.fromisoformat(job["started_at"])
    print(f"  (bulk job: {job['message']})")
    return ended.total_seconds()


def timed_bulk(label: str, action, repeat: int, results: list[tuple[str, float]]) -> None:
    """The click's script run of a bulk action (median of `repeat`), and the job it started, run to its end."""
    runs = [action() for _ in range(repeat)]
    results.append((label, statistics.median(ms for ms, _ in runs)))
    jobs = [seconds for _, seconds in runs if seconds is not None]
    if jobs:
        print(f"  ({label}: the bulk job then ran {statistics.median(jobs):.1f} s, to the second)")


def picture_interactions(repeat: int, results: list[tuple[str, float]], clock=time.perf_counter) -> list[tuple[str, float]]:
    """Review's Pictures view: each interaction's median script run, appended to `results`; by `clock`
    (time.process_time: the CPU the process spent, the script's thread included, whatever else runs)."""
    import streamlit as st

    def measure(label, action):
        def once():
            started = clock()
            action()
            return (clock() - started) * 1000
        results.append((label, statistics.median(once() for _ in range(repeat))))

    at = app("pages/review.py")

    def first_open():  # as on a fresh server: nothing kept between script runs
        st.cache_resource.clear()
        at.segmented_control(key="view").set_value("pages")
        run(at)
        at.segmented_control(key="view").set_value("pictures")
        started = clock()
        run(at)
        return (clock() - started) * 1000
    results.append(("pictures: first open (fresh server)", statistics.median(first_open() for _ in range(repeat))))
    measure("pictures: load again", lambda: run(at))
    decision = lambda: at.segmented_control(key="pic_decision")  # noqa: E731 (elements are new each run)
    sort = lambda: at.selectbox(key="pic_sort")  # noqa: E731

    def then(prepare, action):
        """Milliseconds of the script run after `action`, once `prepare` has run untimed."""
        prepare()
        run(at)
        action()
        started = clock()
        run(at)
        return (clock() - started) * 1000

    for name in ("size", "unsure", "duplicates", "page"):
        results.append((f"pictures: sort by {name}", statistics.median(then(
            lambda n=name: sort().set_value("page" if n != "page" else "size"),
            lambda n=name: sort().set_value(n)) for _ in range(repeat))))
    for name in ("kept", "excluded", "overridden", "duplicates", "gone", "deleted", "all"):
        results.append((f"pictures: filter {name}", statistics.median(
            then(lambda: decision().set_value("all"), lambda n=name: decision().set_value(n)) for _ in range(repeat))))
    for name in ("excluded", "kept"):
        results.append((f"pictures: {name}, largest first", statistics.median(then(
            lambda n=name: (sort().set_value("page"), decision().set_value(n)), lambda: sort().set_value("size"))
            for _ in range(repeat))))
    at.segmented_control(key="pic_decision").set_value("all")
    run(at)
    choices = iter(["exclude", "include", "auto"] * repeat)

    def override():  # a click on the first card's control, as the grid sends it
        from apptest_support import grid_cards, grid_event

        grid_event(at, "decide", next(iter(grid_cards(at))), next(choices))
    measure("pictures: include/exclude one picture", override)
    return results


def views_count() -> int:
    with Manifest(os.environ["CURATION_DB"]) as manifest:
        return views.page_count(manifest)


def queries(repeat: int) -> list[tuple[str, float]]:
    with Manifest(os.environ["CURATION_DB"], user="bench") as m:
        deepest = views.page_count(m) - 40
        rows = views.page_rows(m, 45, limit=40)
        keys = [(r["doc_id"], r["page"]) for r in rows]
        checks = [
            ("summary()", lambda: m.summary(45)),
            ("figures(draft, saved), picture", lambda: views.figures(m, 40, 45, rule="picture")),
            ("figures(draft, saved), sigma", lambda: views.figures(m, 40, 45, rule="sigma")),
            ("figures(draft, saved), model", lambda: views.figures(m, 40, 45, rule="model")),
            ("histogram(60 bins)", lambda: views.histogram(m, 45, 60)),
            ("picture_histogram(45 bins)", lambda: views.picture_histogram(m, 45)),
            ("suggest_threshold()", lambda: views.suggest_threshold(m)),
            ("borderline(8), picture", lambda: views.borderline(m, 45, 8, rule="picture")),
            ("borderline(8), sigma", lambda: views.borderline(m, 45, 8, rule="sigma")),
            ("borderline(8), model", lambda: views.borderline(m, 45, 8, rule="model")),
            ("filter_counts(all)", lambda: views.filter_counts(m, 45)),
            ("filter_counts(kept)", lambda: views.filter_counts(m, 45, views.PageFilter("kept"))),
            ("filter_counts(disagrees)", lambda: views.filter_counts(m, 45, views.PageFilter("disagrees"))),
            ("filter_counts(duplicates)", lambda: views.filter_counts(m, 45, views.PageFilter("duplicates"))),
            ("model_state()", lambda: views.model_state(m)),
            ("page_rows(first 40)", lambda: views.page_rows(m, 45, limit=40)),
            (f"page_rows(offset {deepest:,})", lambda: views.page_rows(m, 45, limit=40, offset=deepest)),
            (f"page_rows(offset {deepest:,}, total given)", lambda: views.page_rows(
                m, 45, limit=40, offset=deepest, total=deepest + 40)),
            ("page_rows(disagrees, first 40)", lambda: views.page_rows(m, 45, views.PageFilter("disagrees"), limit=40)),
            ("page_rows(duplicates, offset 4,000)", lambda: views.page_rows(
                m, 45, views.PageFilter("duplicates"), limit=40, offset=4_000)),
            ("thumbnails(40)", lambda: views.thumbnails(m, keys)),
            ("captions_for(40)", lambda: views.captions_for(m, keys)),
            ("documents()", lambda: m.documents()),
        ]
        return [(label, timed(fn, repeat)) for label, fn in checks]


def timed_picture_queries(repeat: int) -> list[tuple[str, float]]:
    with Manifest(os.environ["CURATION_DB"], user="bench") as m:
        return [(label, timed(fn, repeat)) for label, fn in picture_queries(m)]


# A Pictures screen's filters, as SQL over picture_rows' aliases (x pictures, p, d, o).
PICTURE_FILTERS = {
    "all": "",
    "kept": f"({KEEP_SQL}) = 1 AND ({PICTURE_KEEP_SQL}) = 1",
    "left out": f"NOT (({KEEP_SQL}) = 1 AND ({PICTURE_KEEP_SQL}) = 1)",
    "overridden": "x.keep IS NOT NULL",
    "added": "x.added",
    "deleted": "x.deleted",
    "not found again": "x.rank IS NULL",
    "captioned": "x.caption IS NOT NULL",
}
AREA_SQL = "COALESCE(x.fixed_area, x.area)"
# A sort, the key a screen continues after, and that key's SQL condition (paging by key, not by offset).
PICTURE_SORTS = {
    # Documents in the order they were added (ids), pages, numbers: the pictures' own index.
    "document order": ("x.doc_id, x.page, x.number", ("doc_id", "page", "number"),
                       "(x.doc_id, x.page, x.number) > (:doc_id, :page, :number)"),
    # Documents by path as Review's "Document and page" sorts: SQLite sorts every picture for it.
    "document path order": ("d.path, x.doc_id, x.page, x.number", ("doc", "doc_id", "page", "number"),
                            "(d.path, x.doc_id, x.page, x.number) > (:doc, :doc_id, :page, :number)"),
    "largest first": (f"{AREA_SQL} DESC, x.id DESC", ("box_area", "id"), f"({AREA_SQL}, x.id) < (:box_area, :id)"),
    "smallest first": (f"{AREA_SQL}, x.id", ("box_area", "id"), f"({AREA_SQL}, x.id) > (:box_area, :id)"),
}


def picture_screen(m: Manifest, flt: str = "all", sort: str = "document order", after: dict | None = None,
                   deleted: bool = False) -> list:
    """One screen of the Pictures view: its rows by filter and sort, continuing after `after` (a row's key)."""
    order, key, condition = PICTURE_SORTS[sort]
    where = " AND ".join(part for part in (PICTURE_FILTERS[flt], condition if after else "") if part)
    params = {k: after[k] for k in key} if after else {}
    return list(m.picture_rows(45, where=where, params=params, order=order, limit=PICTURES_PER_SCREEN,
                               deleted=deleted or flt == "deleted"))


def picture_count(m: Manifest, flt: str = "all") -> int:
    """How many pictures a filter holds (the Pictures view's header and page count)."""
    where = PICTURE_FILTERS[flt]
    return m.conn.execute(
        "SELECT COUNT(*) FROM pictures x JOIN pages p ON p.doc_id = x.doc_id AND p.page = x.page "
        "JOIN documents d ON d.id = x.doc_id LEFT JOIN overrides o ON o.doc_id = x.doc_id AND o.page = x.page "
        f"WHERE d.status != 'replaced' AND p.status = 'ok' {'' if flt == 'deleted' else 'AND NOT x.deleted'} "
        f"{'AND (' + where + ')' if where else ''}", m.decision_params(45)).fetchone()[0]


def picture_queries(m: Manifest) -> list[tuple[str, object]]:
    """What a Pictures screen asks of the library, each a (label, call): the one list to extend when the
    Pictures view's own queries (curation.views.picture_views) are timed here."""
    first = picture_screen(m)
    last_doc = m.conn.execute("SELECT MAX(id) FROM documents").fetchone()[0]
    deep = {"doc_id": last_doc, "page": -1, "number": 0}  # the last document's pictures: a deep screen by key
    largest = picture_screen(m, sort="largest first")
    keys = list(dict.fromkeys((row["doc_id"], row["page"]) for row in first))
    picture_id = first[0]["id"]
    decisions = iter([False, True, None] * 100)
    checks = [(f"pictures: count ({flt})", lambda f=flt: picture_count(m, f)) for flt in PICTURE_FILTERS]
    checks += [(f"pictures: first {PICTURES_PER_SCREEN} ({flt})", lambda f=flt: picture_screen(m, f))
               for flt in PICTURE_FILTERS]
    # The view's own: its counts (stored under the saved settings, or every decision evaluated) and a screen of
    # each filter in each sort.
    checks += [("pictures: the view's filter_counts (stored)", lambda: picture_views.filter_counts(m, None)),
               ("pictures: the view's counts, every decision evaluated", lambda: picture_views.scanned_counts(m, None))]
    checks += [(f"pictures: the view's screen ({flt}, {sort})", lambda f=flt, s=sort: picture_views.screen(
        m, None, picture_views.PictureFilter(f), s, limit=PICTURES_PER_SCREEN)) for flt in ("all", "kept", "excluded")
        for sort in picture_views.SORTS]
    checks += [
        (f"pictures: first {PICTURES_PER_SCREEN} (kept, largest first)", lambda: picture_screen(m, "kept", "largest first")),
        (f"pictures: first {PICTURES_PER_SCREEN} (smallest first)", lambda: picture_screen(m, sort="smallest first")),
        (f"pictures: first {PICTURES_PER_SCREEN} (document path order)", lambda: picture_screen(
            m, sort="document path order")),
        (f"pictures: first {PICTURES_PER_SCREEN} (kept, document path order)", lambda: picture_screen(
            m, "kept", "document path order")),
        ("pictures: next screen by key", lambda: picture_screen(m, after=dict(first[-1]))),
        ("pictures: next screen by key (largest first)", lambda: picture_screen(m, sort="largest first",
                                                                                after=dict(largest[-1]))),
        ("pictures: the last document's screen by key", lambda: picture_screen(m, after=deep)),
        ("pictures: one document's pictures", lambda: list(m.picture_rows(
            45, where="x.doc_id = :doc", params={"doc": first[0]["doc_id"]}, deleted=False))),
        (f"pictures: thumbnails of a screen ({len(keys)} pages)", lambda: views.thumbnails(m, keys)),
        ("pictures: one page's boxes (opened)", lambda: m.pictures(*keys[0])),
        ("pictures: override one picture", lambda: m.set_picture_override(picture_id, next(decisions))),
        ("pictures: override, then filter_counts(all)", lambda: (
            m.set_picture_override(picture_id, next(decisions)), views.filter_counts(m, 45))),
        ("pictures: override, then figures(draft, saved)", lambda: (
            m.set_picture_override(picture_id, next(decisions)), views.figures(m, 45, 45))),
        ("pictures: caption one picture", lambda: m.set_picture_captions([(picture_id, "an evening gown")])),
        ("pictures: undo the last change", lambda: m.undo()),
    ]
    return checks


def report(title: str, results: list[tuple[str, float]]) -> bool:
    print(f"\n{title}")
    ok = True
    for label, ms in results:
        flag = "" if ms < TARGET_MS else "  OVER TARGET"
        ok &= ms < TARGET_MS
        print(f"  {label:52s} {ms:8.0f} ms{flag}")
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=100_000)
    parser.add_argument("--documents", type=int, default=None, help="default: one per 333 pages")
    parser.add_argument("--thumbnails", choices=list(thumbnail_store.STORES), default="sqlite",
                        help="where the timed manifest keeps its thumbnails")
    parser.add_argument("--size-sample", type=int, default=20_000,
                        help="pages of the manifest built per store to measure bytes per page (0: skip)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "bench" / "out" / "dashboard")
    parser.add_argument("--keep", action="store_true", help="reuse the manifest of an earlier run if present")
    parser.add_argument("--pictures-per-page", type=float, default=2.5, help="picture rows a page, on average")
    parser.add_argument("--no-apps", action="store_true", help="time the library's queries only, not the pages")
    parser.add_argument("--pictures-only", action="store_true",
                        help="time the Pictures view's library queries and script runs only")
    parser.add_argument("--threshold-only", action="store_true",
                        help="time Threshold's script runs only, every sample a real change (with --cpu: CPU ms)")
    parser.add_argument("--counted", action="store_true",
                        help="count every rule's Threshold tables first, as the ingest job does before it ends "
                             "(`python -m curation cutoffs`); without it a manifest built here has none, and "
                             "Threshold's first load launches that job")
    parser.add_argument("--cpu", action="store_true",
                        help="time the script runs in CPU seconds of this process (on a busy machine; the jobs the "
                             "pages launch run in processes of their own)")
    parser.add_argument("--direct", action="store_true",
                        help="insert the pages in bulk, not through the ingest's writer (thumbnails none): "
                             "for 4 M pages and more")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.size_sample:
        report_sizes(store_sizes(args.out, args.size_sample), args.size_sample)
    if args.direct and args.thumbnails != "none":
        parser.error("--direct builds without thumbnails: add --thumbnails none")
    db = args.out / f"manifest-{args.pages}-{args.thumbnails}{'-direct' if args.direct else ''}.sqlite"
    os.environ["CURATION_DB"] = str(db)
    before = None
    if not (args.keep and db.exists()):
        remove_manifest(db)
        documents = args.documents or max(1, args.pages // 333)
        if args.direct:
            build_direct(db, documents, args.pages)
        else:
            build(db, documents, args.pages, args.thumbnails)
        if args.pictures_per_page > 0:
            before = queries(args.repeat)  # the page queries without picture rows
            started = time.perf_counter()
            with Manifest(db) as manifest:
                count = add_pictures(manifest, args.pictures_per_page)
                manifest.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            print(f"added {count:,} pictures in {time.perf_counter() - started:.1f} s")
    if args.counted:
        count_tables(db)
    if args.threshold_only:
        print(f"Threshold's script runs, AppTest, {'CPU' if args.cpu else 'wall'} ms, each sample:")
        threshold_interactions(args.repeat, time.process_time if args.cpu else time.perf_counter)
        return
    if args.pictures_only:
        ok = report(f"Pictures view's library queries (median of {args.repeat}; {PICTURES_PER_SCREEN} a screen):",
                    timed_picture_queries(args.repeat))
        measured = []
        try:
            picture_interactions(args.repeat, measured, time.process_time if args.cpu else time.perf_counter)
        finally:
            ok &= report(f"Pictures view's script runs, AppTest, {'CPU' if args.cpu else 'wall'} ms "
                         f"(median of {args.repeat}; target < {TARGET_MS} ms):",
                         measured)
        print("\nall under target" if ok else "\nSOME OVER TARGET")
        return
    after = queries(args.repeat)
    if before is not None:
        print(f"\nLibrary queries (median of {args.repeat}), without picture rows → with them:")
        for (label, ms), (_, with_pictures) in zip(before, after):
            print(f"  {label:52s} {ms:8.0f} ms → {with_pictures:6.0f} ms")
    ok = report(f"Library queries (median of {args.repeat}):", after)
    if args.pictures_per_page > 0:
        ok &= report(f"Pictures view's library queries (median of {args.repeat}; {PICTURES_PER_SCREEN} a screen):",
                     timed_picture_queries(args.repeat))
    if not args.no_apps:
        measured: list[tuple[str, float]] = []
        try:
            interactions(args.repeat, measured, pictures=args.pictures_per_page > 0,
                         clock=time.process_time if args.cpu else time.perf_counter)
        finally:  # what was measured is shown even when an interaction fails
            ok &= report(f"Script run per interaction, AppTest, {'CPU' if args.cpu else 'wall'} ms "
                         f"(median of {args.repeat}; target < {TARGET_MS} ms):",
                         measured)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux
    print(f"\npeak RSS of this process (the app's script runs, the library queries, the build): {peak:,.0f} MB")
    print("\nall under target" if ok else "\nSOME OVER TARGET")


if __name__ == "__main__":
    main()
