"""No model outlives its request; one model at a time in the whole process."""

import gc
import json
import threading
import time
import warnings
import weakref

import psutil
import pytest
from transformers import PreTrainedModel
from transformers.models.auto.modeling_auto import AutoModelForImageClassification

import inference
from inference.loader import loaded_model

from conftest import make_photo

MiB = 2**20


def models_alive():
    gc.collect()
    with warnings.catch_warnings():  # isinstance() pokes deprecated torch aliases.
        warnings.simplefilter("ignore", FutureWarning)
        return sum(isinstance(thing, PreTrainedModel) for thing in gc.get_objects())


def rss():
    return psutil.Process().memory_info().rss


def test_the_gc_check_sees_a_loaded_model(demo_model):
    # Guard against a vacuous check: while loaded, the model *is* found.
    assert models_alive() == 0
    with loaded_model(demo_model) as loaded:
        seen_while_loaded = models_alive()  # The classifier and its ViT backbone.
    assert seen_while_loaded >= 1
    assert loaded.model is None and loaded.processor is None
    assert models_alive() == 0


def test_no_model_alive_after_each_request(demo_model):
    for seed in range(3):
        result = inference.classify(make_photo(seed), demo_model)
        assert result["top"]
        assert models_alive() == 0


def test_rss_after_ten_requests_stays_near_the_first(demo_model):
    inference.classify(make_photo(), demo_model)  # First use: imports, thread pools.
    inference.classify(make_photo(), demo_model)
    after_first = rss()
    for seed in range(9):
        inference.classify(make_photo(seed), demo_model)
    after_tenth = rss()
    growth = (after_tenth - after_first) / MiB
    # The model is 11 MiB of weights: keeping each one would add ~100 MiB.
    assert growth < 30, f"RSS grew {growth:.1f} MiB over 9 requests"


def test_a_failed_request_leaves_nothing_loaded(demo_model, tmp_path):
    # A preprocessor at 64 px against a model made for 224 px: forward() raises
    # deep inside the model, the hardest case for dropping every reference.
    broken = inference.write_demo_model(tmp_path / "wrong-size")
    config_path = broken / "preprocessor_config.json"
    config = json.loads(config_path.read_text())
    config["size"] = {"height": 64, "width": 64}
    config_path.write_text(json.dumps(config))

    with pytest.raises(inference.InferenceError, match="doesn't match") as failure:
        inference.classify(make_photo(), broken)
    assert failure.value is not None  # The error is still held here...
    assert models_alive() == 0  # ...yet holds no model.
    assert inference.queue_status() == {"busy": False, "waiting": 0}
    assert inference.classify(make_photo(), demo_model)["top"]


class ModelWatch:
    """Counts live models by weak reference, sampled by a background thread."""

    def __init__(self, monkeypatch):
        self.models = []
        self.most_alive = 0
        self._stop = threading.Event()
        load = AutoModelForImageClassification.from_pretrained

        def watched_load(*args, **kwargs):
            result = load(*args, **kwargs)
            model = result[0] if isinstance(result, tuple) else result
            self.models.append(weakref.ref(model))
            time.sleep(0.2)  # Widen the window in which a second load would overlap.
            return result

        # On the class itself: transformers swaps its top-level module object
        # during lazy imports, so patching `transformers.<name>` can miss.
        monkeypatch.setattr(
            AutoModelForImageClassification, "from_pretrained", staticmethod(watched_load)
        )
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def alive(self):
        return sum(ref() is not None for ref in self.models)

    def _sample(self):
        while not self._stop.is_set():
            self.most_alive = max(self.most_alive, self.alive())
            time.sleep(0.001)

    def stop(self):
        self._stop.set()
        self._thread.join()


def test_concurrent_requests_never_hold_two_models(demo_model, monkeypatch):
    watch = ModelWatch(monkeypatch)
    start = threading.Barrier(3)
    results, errors, waits = [], [], []

    def request(seed):
        start.wait()
        try:
            results.append(inference.classify(make_photo(seed), demo_model, on_wait=waits.append))
        except Exception as error:  # noqa: BLE001 - reported by the assertion below
            errors.append(error)

    threads = [threading.Thread(target=request, args=(seed,)) for seed in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    watch.stop()

    assert not errors
    assert len(results) == 3 and len(watch.models) == 3
    assert watch.most_alive == 1
    assert watch.alive() == 0
    assert len(waits) == 2  # Two of the three queued behind the first.
    assert sorted(r["seconds"]["wait"] > 0.2 for r in results) == [False, True, True]
    assert inference.queue_status() == {"busy": False, "waiting": 0}
