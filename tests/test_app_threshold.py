"""Threshold page: the rule and both cutoffs are tried live, Save stores them, the rule is explained."""

import pytest

from apptest_support import add_features, filled_db, page, ran, texts
from curation import Manifest, views


@pytest.fixture
def db(tmp_path, monkeypatch):
    path = tmp_path / "data" / "manifest.sqlite"
    monkeypatch.setenv("CURATION_DB", str(path))
    return path


def metrics(at):
    return {m.label: m.value for m in at.metric}


def button(at, label):
    return next(b for b in at.button if b.label == label)


def kept(db, **decision) -> str:
    with Manifest(db) as manifest:
        return f"{views.filter_counts(manifest, decision.pop('threshold', 45), **decision)['kept']:,}"


def test_figures_follow_the_slider_and_save_stores_it(db):
    filled_db(db, documents=4, pages=50)  # no picture features: σ decides under every rule
    with Manifest(db) as manifest:
        at_45, at_30 = manifest.summary(45), manifest.summary(30)
    at = ran(page("pages/threshold.py"))
    assert metrics(at)["Kept"] == f"{at_45['kept']:,}"
    assert at.number_input(key="threshold_number").value == 45.0
    assert "No page has picture features yet" in at.warning[0].value
    at.slider(key="threshold_slider").set_value(30.0)
    ran(at)
    assert metrics(at)["Kept"] == f"{at_30['kept']:,}"
    assert at.number_input(key="threshold_number").value == 30.0  # the number box follows the slider
    assert "Not saved" in texts(at)
    with Manifest(db) as manifest:
        assert manifest.threshold == 45
    button(at, "Save").click()
    ran(at)
    with Manifest(db) as manifest:
        assert manifest.threshold == 30
    assert "Saved: picture rule, a picture ≥ 2 sq in, σ > 30" in texts(at)


def test_the_number_box_moves_the_slider(db):
    filled_db(db, documents=1, pages=40)
    at = ran(page("pages/threshold.py"))
    at.number_input(key="threshold_number").set_value(52.5)
    ran(at)
    assert at.slider(key="threshold_slider").value == 52.5
    button(at, "Back to saved").click()
    ran(at)
    assert at.slider(key="threshold_slider").value == 45.0


def test_switching_the_rule_changes_the_figures_and_save_stores_it(db):
    filled_db(db, documents=2, pages=40)
    add_features(db)
    picture, sigma = kept(db, rule="picture"), kept(db, rule="sigma")
    assert picture != sigma  # the features disagree with σ on some pages
    at = ran(page("pages/threshold.py"))
    assert at.segmented_control(key="threshold_rule").value == "picture"
    assert metrics(at)["Kept"] == picture
    assert "**Picture rule.**" in texts(at) and "**2 sq in**" in texts(at)
    assert "**σ only** is the original" in at.markdown[0].proto.help  # the details: the explanation's tooltip
    assert len(at.get("vega_lite_chart")) == 2  # largest picture and σ

    at.segmented_control(key="threshold_rule").set_value("sigma")
    ran(at)
    assert metrics(at)["Kept"] == sigma
    assert "**σ only, the original method.**" in texts(at)
    assert len(at.get("vega_lite_chart")) == 1  # σ alone
    assert "Not saved" in texts(at)
    button(at, "Save").click()
    ran(at)
    with Manifest(db) as manifest:
        assert manifest.rule == "sigma"
    assert "Saved: σ only, σ > 45" in texts(at)

    at.segmented_control(key="threshold_rule").set_value("picture")
    ran(at)
    at.number_input(key="picture_area_number").set_value(25.0)  # square inches
    ran(at)
    assert metrics(at)["Kept"] == kept(db, rule="picture", picture_area_min=25.0)
    assert at.slider(key="picture_area_slider").value == 20.0  # the slider stops at 20 sq in
    button(at, "Save").click()
    ran(at)
    with Manifest(db) as manifest:
        assert (manifest.rule, manifest.picture_area_min) == ("picture", 25.0)


def test_the_picture_slider_and_the_edge_follow_the_rule(db):
    filled_db(db, documents=2, pages=30)
    add_features(db)
    at = ran(page("pages/threshold.py"))
    assert "Just under the picture cutoff: removed" in texts(at) and "Just over it: kept" in texts(at)
    assert len(at.get("image")) == 16
    at.slider(key="picture_area_slider").set_value(10.0)
    ran(at)
    assert at.number_input(key="picture_area_number").value == 10.0
    assert metrics(at)["Kept"] == kept(db, rule="picture", picture_area_min=10.0)
    at.segmented_control(key="threshold_rule").set_value("sigma")
    ran(at)
    assert "Just below the σ cutoff" in texts(at)


def test_the_learned_rule_explains_what_it_has_learned(db):
    filled_db(db, documents=1, pages=20)
    add_features(db)
    at = ran(page("pages/threshold.py"))
    at.segmented_control(key="threshold_rule").set_value("model")
    ran(at)
    assert "Nothing is learned yet" in texts(at)
    assert metrics(at)["Kept"] == kept(db, rule="picture")  # nothing learned: the picture rule
    button(at, "Save").click()
    ran(at)
    with Manifest(db) as manifest:
        assert manifest.rule == "model"


def test_a_rule_saved_elsewhere_replaces_the_draft(db):
    filled_db(db, documents=1, pages=20)
    at = ran(page("pages/threshold.py"))
    with Manifest(db) as manifest:
        manifest.rule = "sigma"  # the CLI, or Review's "Let the model decide"
    ran(at)
    assert at.segmented_control(key="threshold_rule").value == "sigma"
    assert "Not saved" not in texts(at)


def test_suggest_proposes_a_cutoff_in_one_line(db):
    filled_db(db, documents=4, pages=100)
    with Manifest(db) as manifest:
        manifest.rule = "sigma"
    at = ran(page("pages/threshold.py"))
    suggest = button(at, "Suggest a σ cutoff")
    assert "Otsu" in suggest.help  # how it is found: the button's tooltip, not the answer
    suggest.click()
    ran(at)
    answer = at.info[0].value
    suggested = at.slider(key="threshold_slider").value
    assert 30 < suggested < 55 and f"σ > {suggested:g}" in answer
    assert "\n" not in answer and "Otsu" not in answer and len(answer) < 80


def test_the_active_rule_comes_first_in_plain_words_and_sigma_folds_away(db):
    filled_db(db, documents=2, pages=30)
    add_features(db)
    at = ran(page("pages/threshold.py"))  # the picture rule, the default
    labels = [s.label for s in at.slider] + [n.label for n in at.number_input]
    assert not [label for label in labels if "_" in label]  # no internal names (picture_area_min, min_variance)
    assert at.slider[0].key == "picture_area_slider"  # the picture rule's control first
    fold = at.expander[0]
    assert "σ" in fold.label and [s.key for s in fold.slider] == ["threshold_slider", "threshold_bins"]
    assert [b.label for b in fold.button] == ["Suggest a σ cutoff"]
    assert [s.key for s in at.slider if s.key == "picture_area_slider"]
    explanation = at.markdown[0].value
    assert "\n" not in explanation.strip() and "Picture rule" in explanation  # one line; details in its tooltip
    at.segmented_control(key="threshold_rule").set_value("sigma")
    ran(at)
    assert not at.expander and at.slider[0].key == "threshold_slider"  # σ only: σ is the rule, not folded


def test_histogram_options_and_borderline_strips(db):
    filled_db(db, documents=2, pages=30)
    at = ran(page("pages/threshold.py"))
    assert len(at.get("vega_lite_chart")) == 1  # no picture features to draw
    assert len(at.get("image")) == 16  # eight pages each side of the cutoff
    at.slider(key="threshold_bins").set_value(20)
    at.toggle(key="threshold_log").set_value(True)
    ran(at)
    assert "Just below the σ cutoff" in texts(at)


def test_without_scored_pages_the_page_says_so(db):
    Manifest(db).close()
    at = ran(page("pages/threshold.py"))
    assert "No page is scored yet" in at.info[0].value


def test_without_a_manifest_the_page_says_how_to_get_one(db):
    at = ran(page("pages/threshold.py"))
    assert "no manifest" in at.info[0].value


def test_a_rule_switch_saved_on_a_large_manifest_launches_the_decide_job(db, monkeypatch):
    from curation.manifest import picture_decisions
    from curation.runs import jobs
    from test_picture_views import ENGRAVING, STOCK_CUT, scored

    filled_db(db, documents=2, pages=40)
    with Manifest(db) as manifest:
        doc = manifest.register_document(sha256="c" * 64, path="/archive/c.pdf", size=1)["id"]
        for number in range(3):
            scored(manifest, doc, number, [ENGRAVING, STOCK_CUT], sigma=30.0)
    launched = []
    monkeypatch.setattr(jobs, "launch", lambda path, kind, *args: launched.append((str(path), kind)))
    monkeypatch.setattr(picture_decisions, "JOB_CHUNKS", 0)  # any stale picture is too many for readers alone
    at = ran(page("pages/threshold.py"))
    at.number_input(key="picture_area_number").set_value(3.0)
    ran(at)
    button(at, "Save").click()  # a cutoff moved: its pictures decided at once, no job
    ran(at)
    assert launched == []
    at.segmented_control(key="threshold_rule").set_value("sigma")
    ran(at)
    button(at, "Save").click()
    ran(at)
    assert launched == [(str(db), picture_decisions.DECIDE_JOB)]


def test_suggest_under_the_picture_rule_leaves_its_cutoffs_alone_and_offers_sigma_only(db):
    """Suggest finds σ only's cutoff: under the picture rule it used to change the σ fallback, and Save stored it."""
    filled_db(db, documents=4, pages=100)
    add_features(db)
    at = ran(page("pages/threshold.py"))
    button(at, "Suggest a σ cutoff").click()
    ran(at)
    assert at.slider(key="threshold_slider").value == 45.0  # the saved σ, untouched
    assert button(at, "Save").disabled and "Not saved" not in texts(at)
    answer = next(i.value for i in at.info if "For σ only" in i.value)
    offer = next(b for b in at.button if b.label.startswith("Try σ only at σ > "))
    offered = float(offer.label.rsplit("> ", 1)[1])
    assert f"σ > {offered:g}" in answer
    offer.click()
    ran(at)
    assert at.segmented_control(key="threshold_rule").value == "sigma"
    assert at.slider(key="threshold_slider").value == offered and not button(at, "Save").disabled


def test_a_cutoff_of_1_97_is_shown_as_1_97_everywhere(db):
    filled_db(db, documents=1, pages=10)
    add_features(db)
    with Manifest(db) as manifest:
        manifest.picture_area_min = 1.97
    at = ran(page("pages/threshold.py"))
    assert at.slider(key="picture_area_slider").value == 1.97
    shown = texts(at) + " ".join(str(e.proto) for e in at.main)
    assert "1.97 sq in" in shown and "≥ 2 sq in" not in shown
    assert views.square_inches(1.996) == "1.99 sq in"  # under a cutoff of 2, never shown as 2


def test_raising_the_picture_cutoff_shows_the_pictures_it_drops(db):
    """From 2 to 2.5 sq in: no page changes (each keeps a 9 sq in picture), but a 2.4 sq in picture is dropped."""
    filled_db(db, documents=1, pages=6)
    with Manifest(db) as manifest:
        manifest.conn.execute("UPDATE pages SET picture_area = 9.0, ink_tone = 0.6, features_version = 1")
        for number in range(6):
            manifest.set_pictures(1, number, [(100, 100, 700, 700, 9.0)] + [(800, 900, 1000, 1100, 2.4)] * (number == 0))
    at = ran(page("pages/threshold.py"))
    assert metrics(at)["Pictures kept"] == "7" and metrics(at)["Pictures left out"] == "0"
    at.number_input(key="picture_area_number").set_value(2.5)
    ran(at)
    figures = metrics(at)
    assert figures["Kept"] == "6" and figures["Pictures kept"] == "6" and figures["Pictures left out"] == "1"
    dropped = next(m for m in at.metric if m.label == "Pictures kept")
    assert "-1" in str(dropped.proto)
    with Manifest(db) as manifest:  # a curator's change elsewhere (Review, the CLI): counted again
        manifest.set_picture_override(manifest.picture_by_number(1, 1, 1)["id"], False)
    ran(at)
    assert metrics(at)["Pictures kept"] == "5" and metrics(at)["Pictures left out"] == "2"


def test_a_score_cutoff_being_tried_moves_the_kept_pages_before_save(db):
    """At 0.20 only the sure engraving's page is kept; at 0.10 the page of a 0.15 cut counts too, unsaved."""
    from test_picture_score_cutoff import learned_document

    db.parent.mkdir(parents=True)
    with Manifest(db) as manifest:
        learned_document(manifest)
    at = ran(page("pages/threshold.py"))
    assert metrics(at)["Kept"] == "1" and metrics(at)["Pictures kept"] == "1"
    at.number_input(key="picture_score_number").set_value(0.1)
    ran(at)
    assert metrics(at)["Kept"] == "2" and metrics(at)["Pictures kept"] == "3"
    assert "+1" in str(next(m for m in at.metric if m.label == "Kept").proto)
    assert "follow it before you save" in texts(at) and not button(at, "Save").disabled


def generated(db, documents: int = 4, pages: int = 30, seed: int = 5):
    """A manifest as ingest and curators leave it, generated: pages of random σ, ink tone and pictures (0 to 4 a
    page, from stock cuts to plates, some near the cutoffs), and every kind of curator's work on some of them:
    page overrides, picture decisions, deleted, added and redrawn pictures, the model's suggestions."""
    import numpy as np

    from test_picture_views import scored

    rng = np.random.default_rng(seed)
    with Manifest(db) as manifest:
        for d in range(documents):
            doc = manifest.register_document(sha256=f"{d:064x}", path=f"/archive/g{d}.pdf", size=1)["id"]
            for number in range(pages):
                boxes = []
                for _ in range(int(rng.integers(0, 5))):
                    x0, y0 = int(rng.integers(0, 600)), int(rng.integers(0, 900))
                    w, h = int(rng.integers(20, 390)), int(rng.integers(20, 490))
                    area = float(rng.choice([w * h / 20736, 2.0, 2.2, 0.48]))  # on and beside the cutoffs too
                    boxes.append((x0, y0, x0 + w, y0 + h, round(area, 2)))
                scored(manifest, doc, number, boxes, sigma=float(rng.choice([rng.uniform(10, 90), 45.0, 30.0])))
            manifest.set_document(doc, status="ok", pages=pages)
        with manifest.transaction():
            manifest.conn.execute("UPDATE pages SET ink_tone = 0.3 WHERE page % 7 = 3")  # too little ink
            manifest.conn.execute("UPDATE pages SET ink_tone = NULL WHERE page % 11 = 5")  # no ink measure
        keys = [tuple(row) for row in manifest.conn.execute("SELECT doc_id, page FROM pages ORDER BY doc_id, page")]
        pictures = [row[0] for row in manifest.conn.execute("SELECT id FROM pictures ORDER BY id")]
        for doc, number in keys[::9]:
            manifest.set_override(doc, number, bool(rng.random() < 0.5))
        for picture in pictures[::13]:
            manifest.set_picture_override(picture, bool(rng.random() < 0.5))
        for picture in pictures[5::29]:
            manifest.delete_picture(picture)
        for picture in pictures[7::31]:
            manifest.set_picture_box(picture, (100, 100, 300, 320))
        for doc, number in keys[4::23]:
            manifest.add_picture(doc, number, (500, 500, 900, 950))
        manifest.replace_suggestions([(doc, number, bool(rng.random() < 0.5), float(rng.uniform(0.5, 1)))
                                      for doc, number in keys[::2]])
    return db


def stored_and_recounted(db):
    """Every picture's stored decision, and the same evaluated afresh under the saved settings."""
    from curation.manifest import picture_decisions
    from test_picture_decisions import evaluated

    with Manifest(db) as manifest:
        assert picture_decisions.catch_up(manifest, budget_s=float("inf")) is None  # what the decide job does
        stored = dict(map(tuple, manifest.conn.execute("SELECT id, exported FROM pictures").fetchall()))
        return stored, evaluated(manifest)


def picture_metrics(at) -> tuple[int, int]:
    shown = metrics(at)
    return int(shown["Pictures kept"].replace(",", "")), int(shown["Pictures left out"].replace(",", ""))


@pytest.mark.parametrize("rule", ["sigma", "model", "picture"])
def test_a_rule_switch_on_a_large_manifest_reads_the_counted_tables_and_save_stores_what_a_full_recount_decides(
        db, monkeypatch, rule):
    from curation.views import cutoff_counts
    from curation.views import picture_views as pv

    generated(db)
    with Manifest(db) as manifest:
        cutoff_counts.count_and_store(manifest)  # as the jobs that scored and decided the pages leave them
        if rule == "picture":
            manifest.rule = "sigma"
    monkeypatch.setattr(cutoff_counts, "COUNT_IN_RUN", 0)  # a large manifest: no script run counts a table
    monkeypatch.setattr(cutoff_counts, "_parts", {})  # as the app's own process: read from the manifest
    monkeypatch.setattr(cutoff_counts, "_tables", {})
    monkeypatch.setattr(cutoff_counts, "_cells", lambda *args: pytest.fail("a script run scanned the pictures"))
    monkeypatch.setattr(pv, "scanned_counts", lambda *args, **kwargs: pytest.fail("a script run scanned"))
    at = ran(page("pages/threshold.py"))
    at.segmented_control(key="threshold_rule").set_value(rule)
    ran(at)
    at.slider(key="threshold_slider").set_value(38.5)
    ran(at)
    tried = picture_metrics(at)
    button(at, "Save").click()
    ran(at)
    monkeypatch.undo()
    stored, recounted = stored_and_recounted(db)
    assert stored == recounted  # the decisions Save leaves equal a full recount's
    with Manifest(db) as manifest:
        assert (manifest.rule, manifest.threshold) == (rule, 38.5)
        saved = pv.filter_counts(manifest, None)
        assert tried == (saved["kept"], saved["excluded"]) == tuple(
            pv.scanned_counts(manifest, None)[k] for k in ("kept", "excluded"))
        assert tried[0] == sum(1 for keep in recounted.values() if keep)


def test_without_counted_tables_a_large_manifest_launches_the_counting_job_and_the_page_says_so(db, monkeypatch):
    import time

    from curation.views import cutoff_counts
    from curation.views import picture_views as pv
    from curation.runs import jobs

    generated(db, documents=2)
    monkeypatch.setattr(cutoff_counts, "COUNT_IN_RUN", 0)
    launched = []
    real_launch = jobs.launch
    monkeypatch.setattr(jobs, "launch", lambda path, kind, *args: launched.append(kind) or real_launch(path, kind, *args))
    at = ran(page("pages/threshold.py"))
    assert launched == [cutoff_counts.COUNT_JOB]  # on load: the manifest has none
    with monkeypatch.context() as scans:
        scans.setattr(cutoff_counts, "_cells", lambda *args: pytest.fail("a script run scanned the pictures"))
        at.segmented_control(key="threshold_rule").set_value("sigma")
        ran(at)
    if metrics(at)["Pictures kept"] == "…":  # the job not done yet: the page says what it waits for
        assert "Counting the pictures each rule keeps at every cutoff" in at.get("progress")[0].proto.text
    deadline = time.monotonic() + 60
    with Manifest(db) as manifest:
        while manifest.running_job(cutoff_counts.COUNT_JOB) or not cutoff_counts.stored_current(manifest):
            assert time.monotonic() < deadline, "the counting job did not end"
            time.sleep(0.1)
    ran(at)
    assert launched == [cutoff_counts.COUNT_JOB]  # once
    with Manifest(db) as manifest:
        scanned = pv.scanned_counts(manifest, 45.0, rule="sigma")
    assert picture_metrics(at) == (scanned["kept"], scanned["excluded"])
