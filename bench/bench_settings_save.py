"""Settings-save benchmark: what saving a cutoff or switching the rule costs in CPU, beside the stored picture
decisions (curation.manifest.picture_decisions), against deciding every picture again (the reference).

Builds the dashboard benchmark's manifest (bench_dashboard: pages, features, overrides, suggestions and
2.5 pictures a page), or reuses it with --keep, then on a copy times in CPU milliseconds (the machine may be
busy): a σ cutoff moved up and back, the area cutoff moved up and down, a rule switch each way, the
Threshold page's Save (all three settings in one action, the σ cutoff moved) and its undo; then one chunk
of a rule switch's catch-up and the rest of it; and, as the reference in the same run, every picture
decided again in one statement where no decision changes (what any setting saved cost before: every
picture evaluated). Prints each with its ratio to the reference.

    python bench/bench_settings_save.py [--pages 100000] [--keep] [--direct] [--out bench/out/dashboard]
"""

from __future__ import annotations

import argparse
import os
import pathlib
import shutil
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import bench_dashboard  # noqa: E402
from bench_dashboard import ROOT, TARGET_MS, Manifest  # noqa: E402
from curation.manifest import history, picture_decisions  # noqa: E402
from curation.manifest.store import DEFAULT_THRESHOLD  # noqa: E402


def cpu_ms(action) -> float:
    started = time.process_time()
    action()
    return (time.process_time() - started) * 1000


def saved(manifest: Manifest, **settings):
    def save():
        with manifest.recording("setting"):
            for name, value in settings.items():
                setattr(manifest, name, value)
    return save


def measured(manifest: Manifest) -> list[tuple[str, float]]:
    threshold = manifest.threshold
    steps = [
        ("σ cutoff +2", saved(manifest, threshold=threshold + 2)),
        ("σ cutoff back", saved(manifest, threshold=threshold)),
        ("area cutoff 2.0 → 2.5 sq in", saved(manifest, picture_area_min=2.5)),
        ("area cutoff 2.5 → 1.5 sq in", saved(manifest, picture_area_min=1.5)),
        ("rule switched to σ only", saved(manifest, rule="sigma")),
        ("rule switched back to the picture rule", saved(manifest, rule="picture")),
        ("Threshold's Save: σ +1, area 2.0, rule kept",
         saved(manifest, threshold=threshold + 1, picture_area_min=2.0, rule="picture")),
        ("its undo", manifest.undo),
        ("catch-up: one chunk", lambda: picture_decisions.catch_up(manifest, budget_s=0)),
        ("catch-up: the rest", lambda: picture_decisions.catch_up(manifest, budget_s=float("inf"))),
    ]
    return [(label, cpu_ms(action)) for label, action in steps]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=100_000)
    parser.add_argument("--keep", action="store_true", help="reuse the manifest of an earlier run if present")
    parser.add_argument("--direct", action="store_true", help="insert the pages in bulk (bench_dashboard --direct)")
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "bench" / "out" / "dashboard")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault(history.USER_VARIABLE, "bench")
    db = args.out / f"settings-{args.pages}.sqlite"
    if not (args.keep and db.exists()):
        bench_dashboard.remove_manifest(db)
        build = bench_dashboard.build_direct if args.direct else bench_dashboard.build
        build(db, max(1, args.pages // 333), args.pages, *(() if args.direct else ("none",)))
        with Manifest(db) as manifest:
            bench_dashboard.add_pictures(manifest)
            manifest.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    copy = args.out / "settings-copy.sqlite"
    bench_dashboard.remove_manifest(copy)
    shutil.copy(db, copy)
    try:
        with Manifest(copy) as manifest:
            pictures = manifest.conn.execute("SELECT COUNT(*) FROM pictures").fetchone()[0]
            results = measured(manifest)
            reference = cpu_ms(lambda: picture_decisions.decide_all(manifest.conn, DEFAULT_THRESHOLD))
    finally:
        bench_dashboard.remove_manifest(copy)
    print(f"Settings saved on {args.pages:,} pages, {pictures:,} pictures (CPU ms; target {TARGET_MS} ms a save):")
    print(f"  {'every picture evaluated again (the reference)':48s} {reference:8.0f} ms")
    for label, ms in results:
        print(f"  {label:48s} {ms:8.0f} ms  {ms / reference:6.1%} of the reference")
    area = max(ms for label, ms in results if label.startswith("area cutoff"))
    print(f"the area cutoff's save at {pictures:,} pictures: {area:.0f} ms CPU at most "
          f"(target {TARGET_MS} ms: {'met' if area <= TARGET_MS else 'not met'})")


if __name__ == "__main__":
    main()
