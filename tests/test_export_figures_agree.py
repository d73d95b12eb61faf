"""Every figure on the Export page counts the selection the export writes: the page's Images, Enlarged (with
its spread and how many more than 2x) and images left out under a minimum source size equal what the finished
ZIP's manifest.csv and export.json say, for the very command the page shows, on generated pages whose pictures
are enlarged by different amounts."""

import csv
import io
import json
import re
import shlex
import zipfile

import pytest
from click.testing import CliRunner
from streamlit.testing.v1 import AppTest

from curation import Manifest, ingest
from curation.cli import cli
from curation.export import ExportSettings, count_export, select
from curation.sources.synthetic import PageSpec, write_pdf

from conftest import ROOT

PAGE = str(ROOT / "pages" / "export.py")


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    """Engravings and mixed pages scanned at 72 to 200 dpi: their pictures are enlarged from about 1.1x to
    more than 4x at 1024 px, and some are under a 512 px minimum source."""
    folder = tmp_path_factory.mktemp("figures")
    for n, dpi in enumerate((72, 110, 150, 200)):
        write_pdf(folder / "data" / "archive" / f"issue-{n}.pdf",
                  [PageSpec(kind=("engraving", "mixed")[page % 2], seed=10 * n + page, dpi=dpi, inches=(6.0, 8.0))
                   for page in range(4)])
    with Manifest(folder / "data" / "manifest.sqlite") as manifest:
        ingest(manifest, [folder / "data" / "archive"], workers=1)
        manifest.rule, manifest.threshold = "sigma", 0.0  # every page kept
    return folder / "data" / "manifest.sqlite"


def page_figures(db, monkeypatch, min_source: int):
    monkeypatch.setenv("CURATION_DB", str(db))
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.run()
    if min_source:
        at.number_input(key="export_min_source").set_value(min_source).run()
    assert not at.exception, at.exception
    metrics = {m.label: (m.value, m.help) for m in at.metric}
    [command] = [c.value for c in at.code if c.value.startswith("python -m curation export")]
    captions = " ".join(c.value for c in at.caption)
    button = next(b.label for b in at.button if b.label.startswith("Export"))
    return metrics, command, captions, button


def zip_figures(db, command: str, out):
    args = shlex.split(command)[3:]  # after "python -m curation"
    args[args.index("--out") + 1] = str(out)
    result = CliRunner().invoke(cli, [*args, "-q"] if "-q" not in args else args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    with zipfile.ZipFile(out) as archive:
        rows = list(csv.DictReader(io.StringIO(archive.read("manifest.csv").decode())))
        written = json.loads(archive.read("export.json"))
    return rows, written["sources"]


@pytest.mark.parametrize("min_source", [0, 512])
def test_the_pages_figures_are_the_zips(scored, monkeypatch, tmp_path, min_source):
    metrics, command, captions, button = page_figures(scored, monkeypatch, min_source)
    rows, sources = zip_figures(scored, command, tmp_path / "lora.zip")

    images, images_help = metrics["Images"]
    assert images == f"{len(rows):,}", (images, len(rows))  # exact, never "about"
    assert button == f"Export {len(rows):,} images"
    enlarged, enlarged_help = metrics["Enlarged"]
    assert enlarged == f"{sources['enlarged_images']:,}"
    assert sources["enlarged_images"] > 0
    spread = re.search(r"(\d+\.\d)(?:-(\d+\.\d))?x", enlarged_help)
    assert spread and (spread[2] or spread[1]) == f"{sources['largest_enlargement']:.1f}"
    twice = sources["enlarged_more_than_2x"]
    assert (f"{twice:,} more than 2x" in enlarged_help) == bool(twice)
    left_out = len(sources["too_small"])
    if min_source:
        assert left_out > 0
        assert f"{left_out:,} image{'s' if left_out != 1 else ''} left out" in captions
        assert f"{left_out:,}" in images_help and "about" not in captions.lower()
    else:
        assert left_out == 0 and "left out: their source" not in captions


def test_the_counts_are_those_of_the_export_for_every_crop(scored, tmp_path):
    from curation.export import export

    for settings in (ExportSettings(crop="page", min_source_side=700), ExportSettings(crop="picture", size=768),
                     ExportSettings(mode="bucket", min_source_side=300)):
        with Manifest(scored) as manifest:
            counted = count_export(select(manifest, crop=settings.crop).items, settings)
            report = export(manifest, tmp_path / "out.zip", settings)
        factors = [f for f in report.upscales if f >= 1.05]
        assert (counted.images, counted.too_small, counted.enlarged) == (report.images, len(report.too_small),
                                                                         len(factors)), settings
        assert counted.largest == max(factors, default=1.0)
