"""Reading photos safely: every way a file can fail becomes a BadImageError.

A photo is checked from its header first (what it is, how many pixels it declares), which costs
nothing, and decoded only when its request holds the model slot, at the size the model needs: the
models read 224 px, so a big photo is decoded reduced (JPEG: `draft` decodes at 1/2, 1/4 or 1/8
scale; other formats are reduced right after decoding). Photos on the server are read only under
the allowed folders, checked as each file is opened (`guards.folders`).
"""

import io
import os
from pathlib import Path

from PIL import Image, UnidentifiedImageError

from guards.folders import REFUSAL, OutsideAllowedFolders, folder_entries, open_binary_inside
from guards.uploads import PHOTO_UPLOADS, env_number

from .errors import BadImageError

# The formats the page's uploader accepts and the batch mode picks up.
PHOTO_SUFFIXES = (".jpg", ".jpeg", ".png", ".webp")
# The only Pillow plugins a photo is opened with, whatever its name says: Pillow's others (EPS runs
# Ghostscript where it is installed; PSD, ICNS, FITS…) are more code reading a stranger's bytes, for no photo.
PHOTO_FORMATS = ("JPEG", "PNG", "WEBP", "TIFF")
# Pixels decoded at most for one photo (after a JPEG's reduced decoding): 40 M pixels are 120 MB as RGB.
MAX_PIXELS = int(env_number("VET_MAX_PIXELS", 40_000_000))
# The shorter side a photo is decoded at, at least: twice the 224 px the models read, for their own resizing.
MODEL_SIDE = 448
# What one session may upload to the page's photo uploader ($VET_UPLOAD_MAX_FILE_MB, _SESSION_MB, _FILES).
UPLOAD_LIMITS = PHOTO_UPLOADS


def check_image(source, name=None, roots=None):
    """Refuse `source` if it is no image or declares too many pixels, from its header only."""
    name = name or _describe(source)
    if isinstance(source, Image.Image):
        _refuse_oversized(source, name)
        _refuse_too_many_pixels(source, name)
        return
    with _opened(source, name, roots) as image:
        _refuse_oversized(image, name)
        _reduced_size(image)
        _refuse_too_many_pixels(image, name)


def open_image(source, name=None, roots=None):
    """Return `source` decoded as an RGB PIL image, reduced to what the models need.

    `source` is a PIL image, a path, raw bytes, or a binary file object (a
    Streamlit upload). With `roots` (the allowed folders), a path is read only
    if the file opened really lies under them.
    """
    name = name or _describe(source)
    if isinstance(source, Image.Image):
        return _guarded(lambda: _decoded_rgb(source, name), name)
    with _opened(source, name, roots) as image:
        rgb = _guarded(lambda: _decoded_rgb(image, name), name)
        # Leaving the `with` closes `image` and frees its pixels: keep a copy.
        return rgb.copy() if rgb is image else rgb


def find_photos(folder, recursive=False, roots=None):
    """Paths of the photos in `folder` (by suffix), sorted, for batch mode.

    With `roots`, the folder (and each subfolder) is listed only if it really
    lies under them; subfolders that do not are left out.
    """
    folder = Path(folder)
    photos = []
    try:
        _collect_photos(folder, recursive, roots, photos, set(), top=True)
    except OutsideAllowedFolders:
        raise BadImageError(f"{folder}: {REFUSAL}; this server reads photos only there.") from None
    except (FileNotFoundError, NotADirectoryError):
        raise BadImageError(f"{folder}: no such folder.") from None
    return sorted(photos)


def _collect_photos(folder, recursive, roots, photos, seen, top=False):
    try:
        entries = folder_entries(folder, roots, seen)
    except (OutsideAllowedFolders, FileNotFoundError, NotADirectoryError):
        if top:
            raise
        return  # a subfolder that is a link out of the allowed folders, or gone meanwhile
    for name, is_folder in entries:
        path = folder / name
        if is_folder:
            if recursive:
                _collect_photos(path, recursive, roots, photos, seen)
        elif path.suffix.lower() in PHOTO_SUFFIXES:
            photos.append(path)


class _opened:
    """`with _opened(source, name, roots) as image`: the PIL image of `source`, header read, not decoded."""

    def __init__(self, source, name, roots):
        self.source, self.name, self.roots, self.file = source, name, roots, None
        self.owned = not hasattr(source, "read")  # a caller's file stays open: Pillow's close() would close it

    def __enter__(self):
        source = self.source
        if isinstance(source, (str, Path)):
            try:
                source = self.file = open_binary_inside(source, self.roots)
            except OutsideAllowedFolders:
                raise BadImageError(f"{self.name}: not read, the file is {REFUSAL}.") from None
            except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
                raise BadImageError(f"{self.name}: no such file.") from None
            except OSError as error:
                raise BadImageError(f"{self.name}: cannot be read ({error.strerror or error}).") from None
        elif isinstance(source, (bytes, bytearray)):
            source = io.BytesIO(source)
        elif hasattr(source, "seek"):
            source.seek(0)  # An upload read before (a rerun) starts again.
        self.image = _guarded(lambda: Image.open(source, formats=PHOTO_FORMATS), self.name)
        return self.image

    def __exit__(self, *exc):
        if self.owned:
            self.image.close()
        if self.file is not None:
            self.file.close()
        return False


def _guarded(read, name):
    """`read()`, with Pillow's errors as BadImageErrors a person can act on."""
    try:
        return read()
    except BadImageError:
        raise
    except Image.DecompressionBombError:
        # Pillow refuses at twice its limit; _refuse_oversized covers the rest.
        raise BadImageError(_too_large_message(name)) from None
    except UnidentifiedImageError:
        raise BadImageError(
            f"{name}: not an image this server reads (JPEG, PNG, WebP or TIFF)."
        ) from None
    except (OSError, SyntaxError, ValueError) as error:
        # Truncated or corrupt data surfaces here when the pixels are decoded.
        raise BadImageError(
            f"{name}: the image data is damaged or incomplete ({error})."
        ) from None


def _refuse_oversized(image, name):
    # Pillow only warns between MAX_IMAGE_PIXELS and twice that; on shared
    # hardware a warning is not enough, so anything over the limit is refused.
    limit = Image.MAX_IMAGE_PIXELS
    if limit and image.width * image.height > limit:
        raise BadImageError(_too_large_message(name, image.width, image.height))


def _refuse_too_many_pixels(image, name):
    """Refuse a photo whose pixels, at the size it would be decoded, pass MAX_PIXELS."""
    if image.width * image.height > MAX_PIXELS:
        raise BadImageError(
            f"{name}: {image.width}×{image.height} pixels are more than this server decodes for one "
            f"photo ({MAX_PIXELS:,} pixels; a JPEG is decoded reduced, other formats in full). "
            "Resize the photo or save it as a JPEG, and upload it again."
        )


def _too_large_message(name, width=None, height=None):
    size = f" ({width}×{height} pixels)" if width else ""
    return (
        f"{name}: the image is too large{size}; it exceeds Pillow's safety limit "
        f"of {Image.MAX_IMAGE_PIXELS:,} pixels against decompression bombs. "
        "Resize the photo before uploading it."
    )


def _reduced_size(image):
    """Ask a JPEG to decode at the smallest scale that keeps MODEL_SIDE (its size changes to it)."""
    if image.format == "JPEG" and min(image.size) > 2 * MODEL_SIDE:
        scale = MODEL_SIDE / min(image.size)
        image.draft("RGB", (round(image.width * scale), round(image.height * scale)))


def _decoded_rgb(image, name):
    _refuse_oversized(image, name)
    _reduced_size(image)
    _refuse_too_many_pixels(image, name)
    image.load()  # Decode now: truncated or corrupt data fails here, not in the model.
    if image.mode not in ("RGB", "RGBA", "L", "LA"):  # the modes Pillow can reduce
        image = image.convert("RGB")
    factor = min(image.size) // MODEL_SIDE
    if factor >= 2:  # no longer kept at a size the model never reads
        image = image.reduce(factor)
    # Models are trained on RGB; palette, greyscale, CMYK and alpha are converted.
    return image if image.mode == "RGB" else image.convert("RGB")


def to_jpeg(image, quality=85):
    """A decoded photo as JPEG bytes, to show it."""
    buffer = io.BytesIO()
    image.save(buffer, "JPEG", quality=quality)
    return buffer.getvalue()


def _describe(source):
    if isinstance(source, (str, Path, os.PathLike)):
        return str(source)
    return getattr(source, "name", None) or "photo"
