"""Fixtures are generated here, small enough to keep the suite fast: 3x4 inch pages at 150-200 dpi."""

import pathlib
import sys

import numpy as np
import pytest
from PIL import Image

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from curation import Manifest  # noqa: E402
from curation.synthetic import PageSpec, periodical_specs, write_pdf  # noqa: E402

SMALL = (3.0, 4.0)


def small_specs(pages: int, seed: int = 0, dpi: int = 150):
    return list(periodical_specs(pages, seed=seed, dpi=dpi, inches=SMALL))


def small_pdf(path, pages: int = 4, seed: int = 0, dpi: int = 150) -> pathlib.Path:
    return write_pdf(path, small_specs(pages, seed, dpi))


@pytest.fixture
def archive(tmp_path):
    """A folder with three small periodical PDFs (4, 5 and 6 pages)."""
    folder = tmp_path / "archive"
    for n, pages in enumerate((4, 5, 6)):
        small_pdf(folder / f"issue-{n}.pdf", pages=pages, seed=n)
    return folder


@pytest.fixture
def manifest(tmp_path):
    with Manifest(tmp_path / "manifest.sqlite") as m:
        yield m


@pytest.fixture
def page_spec():
    return PageSpec(kind="engraving", seed=1, dpi=150, inches=SMALL)


@pytest.fixture(scope="module")
def demo_model(tmp_path_factory):
    """The untrained demo classifier, written once per test module."""
    import inference  # torch only for the tests that use it

    return inference.write_demo_model(tmp_path_factory.mktemp("models") / "demo-vit")


def make_photo(seed=0, size=(240, 320)):
    pixels = np.random.default_rng(seed).integers(0, 256, (*size, 3), dtype=np.uint8)
    return Image.fromarray(pixels)
