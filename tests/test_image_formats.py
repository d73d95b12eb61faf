"""Photos and page images are opened only by the Pillow readers of the formats the product reads: JPEG, PNG,
WebP and TIFF for a photo, JPEG for the page images the product makes (thumbnails, drawn pages, exported
pictures). Whatever else arrives (EPS, which Pillow hands to Ghostscript where it is installed; BMP, GIF, PSD…)
is refused with a message, and no other reader so much as looks at it."""

import io

import pytest
from PIL import EpsImagePlugin, Image

from curation.views import images as page_images
from curation.views import picture_images
from inference import BadImageError
from inference.images import open_image

EPS = (b"%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 16 16\n%%EndComments\n"
       b"newpath 0 0 moveto 16 16 lineto stroke\nshowpage\n%%EOF\n")


def encoded(fmt: str, size=(32, 24)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, (120, 80, 40)).save(out, fmt)
    return out.getvalue()


@pytest.fixture
def eps_reader_calls(monkeypatch):
    """Every time Pillow's EPS reader is asked to read something."""
    calls = []
    real = EpsImagePlugin.EpsImageFile._open
    monkeypatch.setattr(EpsImagePlugin.EpsImageFile, "_open", lambda self: calls.append(1) or real(self))
    return calls


def test_an_eps_photo_is_refused_without_the_eps_reader(eps_reader_calls):
    with pytest.raises(BadImageError, match="not an image this server reads"):
        open_image(EPS, name="cow.jpg")
    assert eps_reader_calls == []


@pytest.mark.parametrize("fmt", ["BMP", "GIF", "ICO", "PCX", "TGA"])
def test_other_formats_are_refused_as_photos(fmt):
    with pytest.raises(BadImageError, match="not an image this server reads"):
        open_image(encoded(fmt), name=f"cow.{fmt.lower()}")


@pytest.mark.parametrize("fmt", ["JPEG", "PNG", "WEBP", "TIFF"])
def test_the_photo_formats_still_open(fmt):
    assert open_image(encoded(fmt), name="cow").size == (32, 24)


@pytest.mark.parametrize("image", [EPS, encoded("PNG"), encoded("BMP")], ids=["EPS", "PNG", "BMP"])
def test_a_page_image_that_is_not_a_jpeg_is_refused_without_other_readers(image, eps_reader_calls):
    """A thumbnail folder's file replaced by another format: the crop and the outlines refuse it."""
    box = (2, 2, 20, 20)
    with pytest.raises(Image.UnidentifiedImageError):
        picture_images.crop(image, box, 32, 24)
    with pytest.raises(Image.UnidentifiedImageError):
        page_images.outline_pictures(image, [box], 32)
    assert eps_reader_calls == []


def test_a_jpeg_page_image_is_cut_and_outlined():
    jpeg = encoded("JPEG")
    assert Image.open(io.BytesIO(picture_images.crop(jpeg, (2, 2, 20, 20), 32, 24))).format == "JPEG"
    assert Image.open(io.BytesIO(page_images.outline_pictures(jpeg, [(2, 2, 20, 20)], 32))).format == "JPEG"
