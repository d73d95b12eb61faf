"""Errors a person can act on.

Every failure the scanner expects (a bad photo, a wrong model folder, a busy
model) is raised as an InferenceError whose message says what went wrong and
what to do, so the page can show it with st.error and the CLI can print it,
neither with a traceback.
"""


class InferenceError(Exception):
    """Base class: the request could not be answered; the message says why."""


class BadImageError(InferenceError):
    """The photo cannot be read: not an image, truncated, or too large."""


class ModelFolderError(InferenceError):
    """The model folder is missing, incomplete, or not an image classifier."""


class ModelBusyError(InferenceError):
    """Waited too long for another request to release the model."""
