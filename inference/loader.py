"""Acquire, load, unload: one model in memory at a time in the whole process.

The scanner runs on free, shared hardware, so no model stays in memory between
requests. Every request takes the process's single model slot (Streamlit
sessions are threads of one process, so a lock is enough), loads the model,
runs, and unloads it before the slot is released. Requests that arrive while
the slot is taken wait in line; `queue_status()` tells the page so.
"""

import ctypes
import ctypes.util
import gc
import itertools
import logging
import os
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field

import psutil

from .catalog import check_weight_index, read_model_info
from .cattle import read_gate_file
from .errors import InferenceError, ModelBusyError, ModelFolderError

# Weights come from local folders only; never let a library reach for the hub.
# (Must be set before huggingface_hub is imported to take effect.) The one
# deliberate download, the captioning model's, lifts it (captioner._hub_reachable).
os.environ.setdefault("HF_HUB_OFFLINE", "1")

log = logging.getLogger(__name__)

_model_slot = threading.Lock()
_waiting = 0
_waiting_lock = threading.Lock()


@dataclass(frozen=True)
class ModelKind:
    """What a request loads: how a folder is checked before queueing, and loaded once the slot is held.

    The slot, the device, the unloading and the memory report are the same for every kind: one model
    in memory at a time, whichever kind it is.
    """

    task: str  # For messages: "Classification with <model> failed: ..."
    read_info: Callable  # folder -> catalog.ModelInfo, or ModelFolderError
    load: Callable  # (LoadedModel, torch dtype) -> None: fills .model and .processor


@dataclass
class LoadedModel:
    """One request's model. `model` and `processor` are None once unloaded;
    `seconds` and `memory` stay behind for the report."""

    info: object  # catalog.ModelInfo
    device: str
    dtype: str
    model: object = None
    processor: object = None
    cattle_gate: dict = None  # A trained head's copy of its ImageNet base's classifier.
    seconds: dict = field(default_factory=dict)
    memory: dict = field(default_factory=dict)


def queue_status():
    """{"busy": a request holds the model slot, "waiting": requests in line}."""
    return {"busy": _model_slot.locked(), "waiting": _waiting}


@contextmanager
def model_slot(on_wait=None, timeout=None):
    """Hold the process's single model slot, waiting in line if it is taken.

    `on_wait(waiting)` is called once, before blocking, with the number of
    requests now waiting, so a page can say "your request is waiting".
    `timeout` (seconds) raises ModelBusyError instead of waiting for ever.
    """
    _acquire_slot(on_wait, timeout)
    try:
        yield
    finally:
        _model_slot.release()


def loaded_model(model_dir, device=None, on_wait=None, wait_timeout=None, before_load=None, kind=None):
    """A context manager: take the slot, load `model_dir`, and unload on exit.

        with loaded_model("models/demo-vit") as loaded:
            loaded.model(...)

    `as` gives a LoadedModel. The folder is checked before queueing, so a
    wrong folder fails at once. Whatever happens in the block, the model is
    unloaded and the slot released on the way out; an unexpected error from
    torch or transformers comes out as an InferenceError. `before_load()` runs
    with the slot held, before the model is loaded: decoding a photo waits its
    turn like the model, and a photo that fails to decode costs no load.
    `kind` (a ModelKind) says what the folder holds: the image classifier by default.
    """
    kind = kind or CLASSIFIER
    return _ModelRequest(kind, kind.read_info(model_dir), pick_device(device), on_wait, wait_timeout, before_load)


class _ModelRequest:
    # A class rather than @contextmanager: contextlib's __exit__ keeps the
    # traceback of an error in a local while the generator runs, and that
    # traceback's frames (a forward() with `self`) would keep the model alive
    # through the unload.

    def __init__(self, kind, info, device, on_wait, wait_timeout, before_load=None):
        self.kind = kind
        self.before_load = before_load
        self.info = info
        self.device = device
        self.on_wait = on_wait
        self.wait_timeout = wait_timeout
        self.loaded = None

    def __enter__(self):
        torch = _import_torch()  # Seconds on first use: not counted as loading.
        dtype = torch.float16 if self.device.startswith("cuda") else torch.float32
        waited_from = time.perf_counter()
        _acquire_slot(self.on_wait, self.wait_timeout)
        loaded = self.loaded = LoadedModel(
            info=self.info, device=self.device, dtype=str(dtype).removeprefix("torch.")
        )
        try:
            loaded.seconds["wait"] = time.perf_counter() - waited_from
            if self.before_load:
                self.before_load()
            loaded.memory.update(_memory_now(self.device, "before"))
            if self.device.startswith("cuda"):
                torch.cuda.reset_peak_memory_stats(self.device)
            started = time.perf_counter()
            self.kind.load(loaded, dtype)
            loaded.seconds["load"] = time.perf_counter() - started
        except BaseException:
            self._unload_and_release()
            raise
        return loaded

    def __exit__(self, exc_type, error, traceback):
        del traceback  # Our reference to the frames; _forget_frames drops the rest.
        failure = None
        if isinstance(error, Exception):
            _forget_frames(error)
            if not isinstance(error, InferenceError):
                failure = f"{type(error).__name__}: {error}"
        self._unload_and_release()
        if failure:
            raise InferenceError(
                f"{self.kind.task} with {self.info.name} failed: {failure}"
            ) from None
        return False

    def _unload_and_release(self):
        try:
            _unload(self.loaded)
        finally:
            _model_slot.release()


def pick_device(requested=None):
    """"cuda" where a GPU is present, else "cpu" (the normal case on our machines)."""
    torch = _import_torch()
    if requested in (None, "", "auto"):
        return "cuda" if torch.cuda.is_available() else "cpu"
    if requested.startswith("cuda") and not torch.cuda.is_available():
        raise InferenceError(f"Device {requested!r} asked for, but no CUDA GPU is available.")
    if requested != "cpu" and not requested.startswith("cuda"):
        raise InferenceError(f"Unknown device {requested!r}: use cpu, cuda or auto.")
    return requested


def _load(loaded, dtype):
    from transformers import AutoImageProcessor, AutoModelForImageClassification

    path = loaded.info.path
    check_weight_index(path)  # again: the request may have waited in line while the folder changed
    failure = None
    try:
        # The PIL backend: torchvision is not a dependency here (it is large).
        loaded.processor = AutoImageProcessor.from_pretrained(
            path, local_files_only=True, trust_remote_code=False, backend="pil"
        )
        # device_map hands placement to accelerate: weights are created empty
        # and filled straight on the target device, so there is never a second
        # full copy in RAM (transformers 5 always loads with low CPU memory).
        loaded.model, loading = AutoModelForImageClassification.from_pretrained(
            path,
            local_files_only=True,
            trust_remote_code=False,
            use_safetensors=True,
            dtype=dtype,
            device_map=loaded.device,
            output_loading_info=True,
        )
    except Exception as error:  # noqa: BLE001 - turned into a readable error below
        failure = f"{type(error).__name__}: {error}"
    if failure:
        raise ModelFolderError(f"{path} could not be loaded as an image classifier: {failure}")
    loaded.model.eval()
    check_all_weights(path, loading)
    loaded.cattle_gate = read_gate_file(path, loaded.device)
    if loaded.device == "cpu":
        read_weights_in(loaded.model)


def check_all_weights(path, loading):
    """Refuse a model whose weights file lacks tensors or has them in another shape.

    Missing or reshaped weights mean freshly initialised layers: the model
    would answer with confident noise. `loading` is from_pretrained's
    output_loading_info.
    """
    untrained = sorted(loading["missing_keys"]) + [
        key if isinstance(key, str) else key[0] for key in loading["mismatched_keys"]
    ]
    if untrained:
        raise ModelFolderError(
            f"{path}: the weights do not match config.json "
            f"({len(untrained)} tensors missing or of the wrong shape, e.g. {untrained[0]}); "
            "the model would predict with untrained layers."
        )


def read_weights_in(model):
    # On the CPU the safetensors file is memory-mapped: from_pretrained only
    # maps it, and each page is read the first time inference touches it.
    # Touch every weight now, so that "load" is the time to get the weights
    # into memory and "infer" the time to compute, as on a GPU.
    import torch

    with torch.inference_mode():
        for tensor in itertools.chain(model.parameters(), model.buffers()):
            tensor.sum()


# The image classifier: the kind every request loaded before there were others.
# A lambda, so that _load is looked up when a request loads (tests replace it).
CLASSIFIER = ModelKind("Classification", read_model_info, lambda loaded, dtype: _load(loaded, dtype))


def _unload(loaded):
    torch = _import_torch()
    started = time.perf_counter()
    on_cuda = loaded.device.startswith("cuda")
    if on_cuda and loaded.model is not None:
        # Off the GPU first, so the memory is free even if a stray reference survives.
        loaded.model.cpu()
    loaded.model = None
    loaded.processor = None
    loaded.cattle_gate = None
    gc.collect()
    if on_cuda:
        torch.cuda.empty_cache()
    _give_freed_memory_back_to_os()
    loaded.seconds["unload"] = time.perf_counter() - started
    loaded.memory.update(_memory_now(loaded.device, "after"))
    if on_cuda:
        loaded.memory["cuda_peak_bytes"] = torch.cuda.max_memory_allocated(loaded.device)


def _memory_now(device, when):
    memory = {f"rss_{when}_bytes": psutil.Process().memory_info().rss}
    if device.startswith("cuda"):
        memory[f"cuda_{when}_bytes"] = _import_torch().cuda.memory_allocated(device)
    return memory


def _give_freed_memory_back_to_os():
    # glibc keeps freed heap pages for reuse; on a shared machine the point of
    # unloading is that other processes get the memory, so hand it back.
    if _libc is not None:
        _libc.malloc_trim(0)


def _find_libc():
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
    except OSError:
        return None
    return libc if libc is not None and hasattr(libc, "malloc_trim") else None


_libc = _find_libc()


def _acquire_slot(on_wait, timeout):
    if _model_slot.acquire(blocking=False):
        return
    waiting = _count_waiting(+1)
    try:
        if on_wait:
            on_wait(waiting)
        acquired = _model_slot.acquire(timeout=-1 if timeout is None else timeout)
    finally:
        _count_waiting(-1)
    if not acquired:
        raise ModelBusyError(
            f"The model is still busy with another request after {timeout:g} s; "
            "try again in a moment."
        )


def _forget_frames(error):
    # The traceback of an error raised inside forward() holds the model (as
    # `self`) for as long as the error lives, and the caller keeps the error a
    # while (to show it). Drop the frames along the whole chain of causes, so
    # unloading really frees the model. The message survives.
    log.debug("Request failed; dropping its traceback", exc_info=error)
    chain, seen = [error], set()
    while chain:
        error = chain.pop()
        if error is None or id(error) in seen:
            continue
        seen.add(id(error))
        error.__traceback__ = None
        chain += [error.__cause__, error.__context__]


def _count_waiting(change):
    global _waiting
    with _waiting_lock:
        _waiting += change
        return _waiting


def _import_torch():
    # torch and transformers take seconds to import: `import inference`, the
    # CLI's --help and the page's first render should not pay for it.
    global _imported
    import torch
    import transformers  # noqa: F401
    from transformers import AutoImageProcessor, AutoModelForImageClassification  # noqa: F401
    from transformers.utils import logging as transformers_logging

    if not _imported:
        _imported = True
        # A progress bar per request would flood the server log.
        transformers_logging.disable_progress_bar()
        # Importing torch and transformers leaves ~400,000 objects (modules,
        # classes, functions) that live as long as the process. Freezing them
        # takes them out of the collector's sight, so the gc.collect() of each
        # unload walks only what the request created: measured 0.3 s -> 5 ms.
        gc.collect()
        gc.freeze()
    return torch


_imported = False
