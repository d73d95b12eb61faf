"""Reading photos safely: every way a file can fail becomes a BadImageError."""

import io
from pathlib import Path

from PIL import Image, UnidentifiedImageError

from .errors import BadImageError

# The formats the page's uploader accepts and the batch mode picks up.
PHOTO_SUFFIXES = (".jpg", ".jpeg", ".png", ".webp")


def open_image(source, name=None):
    """Return `source` decoded as an RGB PIL image.

    `source` is a PIL image, a path, raw bytes, or a binary file object (a
    Streamlit upload). The pixels are decoded here, before any model is
    loaded, so a bad file costs nothing and never reaches the model.
    """
    name = name or _describe(source)
    if isinstance(source, (str, Path)) and not Path(source).is_file():
        raise BadImageError(f"{name}: no such file.")
    if isinstance(source, (bytes, bytearray)):
        source = io.BytesIO(source)
    try:
        if isinstance(source, Image.Image):
            return _decoded_rgb(source, name)
        with Image.open(source) as image:
            rgb = _decoded_rgb(image, name)
            # Leaving the `with` closes `image` and frees its pixels: keep a copy.
            return rgb.copy() if rgb is image else rgb
    except BadImageError:
        raise
    except Image.DecompressionBombError:
        # Pillow refuses at twice its limit; _refuse_oversized covers the rest.
        raise BadImageError(_too_large_message(name)) from None
    except UnidentifiedImageError:
        raise BadImageError(
            f"{name}: not an image Pillow can read (expected JPEG, PNG or WebP)."
        ) from None
    except (OSError, SyntaxError, ValueError) as error:
        # Truncated or corrupt data surfaces here when the pixels are decoded.
        raise BadImageError(
            f"{name}: the image data is damaged or incomplete ({error})."
        ) from None


def find_photos(folder, recursive=False):
    """Paths of the photos in `folder` (by suffix), sorted, for batch mode."""
    folder = Path(folder)
    if not folder.is_dir():
        raise BadImageError(f"{folder}: no such folder.")
    candidates = folder.rglob("*") if recursive else folder.iterdir()
    return sorted(
        path
        for path in candidates
        if path.is_file() and path.suffix.lower() in PHOTO_SUFFIXES
    )


def _refuse_oversized(image, name):
    # Pillow only warns between MAX_IMAGE_PIXELS and twice that; on shared
    # hardware a warning is not enough, so anything over the limit is refused.
    limit = Image.MAX_IMAGE_PIXELS
    if limit and image.width * image.height > limit:
        raise BadImageError(_too_large_message(name, image.width, image.height))


def _too_large_message(name, width=None, height=None):
    size = f" ({width}×{height} pixels)" if width else ""
    return (
        f"{name}: the image is too large{size}; it exceeds Pillow's safety limit "
        f"of {Image.MAX_IMAGE_PIXELS:,} pixels against decompression bombs. "
        "Resize the photo before uploading it."
    )


def _decoded_rgb(image, name):
    _refuse_oversized(image, name)
    image.load()  # Decode now: truncated or corrupt data fails here, not in the model.
    # Models are trained on RGB; palette, greyscale, CMYK and alpha are converted.
    return image if image.mode == "RGB" else image.convert("RGB")


def _describe(source):
    if isinstance(source, (str, Path)):
        return str(source)
    return getattr(source, "name", None) or "photo"
