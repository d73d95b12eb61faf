"""A picture model learned from the curator's picture decisions: it starts from the shipped verdict, follows
the decisions (include, exclude, delete, add) to the pictures like the ones decided, says how its agreement
with the curator changed, orders least sure first, and says plainly what it needs while it cannot learn."""

import numpy as np
import pytest

from curation import Manifest
from curation.decisions import picture_model
from curation.decisions import picture_similarity as similarity
from curation.manifest import history, picture_embeddings
from curation.pictures.prior import shipped_prior
from curation.views import review_orders
from test_picture_similarity import pictured_document, scored

BOX = (40, 30, 400, 330, 5.2, None, None, 0.9)  # the learned verdict found it, score 0.9


def kind_of_picture(direction: np.ndarray, count: int, rng) -> np.ndarray:
    """Embeddings of one kind of picture, as the shipped prior measures them: its average embedding moved along
    `direction` (in its standard deviations), a little apart from each other."""
    prior = shipped_prior()
    z = direction + rng.normal(0, 0.3, (count, len(direction)))
    return np.maximum(prior.mean + z * prior.scale, 0)


@pytest.fixture
def manifest(tmp_path, monkeypatch):
    """Forty pictures of two kinds that the shipped verdict keeps alike (the same score), twenty each:
    pages 0-19 one kind (mastheads, say), 20-39 the other."""
    monkeypatch.setenv(history.USER_VARIABLE, "ana")
    with Manifest(tmp_path / "m.sqlite", user="ana") as m:
        pictured_document(m, 40, BOX)
        rng = np.random.default_rng(5)
        direction = np.zeros(picture_embeddings.DIMENSIONS)
        direction[rng.choice(len(direction), 200, replace=False)] = rng.choice([-1.5, 1.5], 200)
        vectors = np.vstack([kind_of_picture(direction, 20, rng), kind_of_picture(-direction, 20, rng)])
        todo = picture_embeddings.missing(m.conn)
        with m.transaction():
            picture_embeddings.store(m.conn, [(row["id"], (row["bx0"], row["by0"], row["bx1"], row["by1"]), v)
                                              for row, v in zip(todo, vectors)])
        yield m


def ids_by_page(manifest):
    return {row["page"]: row["id"] for row in manifest.conn.execute("SELECT id, page FROM pictures")}


def suggested(manifest, pages):
    ids = ids_by_page(manifest)
    found = picture_model.suggestions(manifest, picture_model.stored(manifest), [ids[p] for p in pages])
    return [found[ids[p]].keep for p in pages]


def test_learning_from_picture_decisions_changes_the_suggestions(manifest):
    undecided = [*range(6, 20), *range(26, 40)]
    before = suggested(manifest, undecided)
    assert all(before)  # the shipped verdict, score 0.9: keep every one
    ids = ids_by_page(manifest)
    for page in range(3):
        manifest.set_picture_override(ids[page], False)  # excluded
    for page in range(3, 6):
        manifest.delete_picture(ids[page], True)  # deleted: not a picture
    for page in range(20, 26):
        manifest.set_picture_override(ids[page], True)
    outcome = picture_model.learn(manifest, similarity.embeddings(manifest))
    assert outcome.learned
    after = suggested(manifest, undecided)
    assert after == [False] * 14 + [True] * 14  # the first kind is excluded now, the other still kept
    # Learn says how its agreement with the curator changed: the shipped verdict agreed with 6 of 12.
    assert "the shipped verdict 6 of 12 (50%)" in outcome.message
    assert "the learned model 12 of 12 (100%)" in outcome.message
    assert "14 suggestion(s) changed" in outcome.message
    confidence = picture_model.suggestions(manifest, picture_model.stored(manifest), [ids[10]])[ids[10]].confidence
    assert 0.5 < confidence <= 1.0


def test_learning_again_says_how_the_agreement_changed_since_last_time(manifest):
    ids = ids_by_page(manifest)
    for page in (0, 1, 20, 21):
        manifest.set_picture_override(ids[page], page >= 20)
    first = picture_model.learn(manifest)
    for page in (2, 3, 22, 23):
        manifest.set_picture_override(ids[page], page >= 20)
    second = picture_model.learn(manifest)
    assert first.learned and second.learned and "last time" in second.message
    assert picture_model.stored(manifest).decisions == 8


def test_least_sure_first_puts_the_pictures_the_model_doubts_first(manifest):
    ids = ids_by_page(manifest)
    for page in range(5):
        manifest.set_picture_override(ids[page], False)
        manifest.set_picture_override(ids[page + 20], True)
    picture_model.learn(manifest)
    found = similarity.embeddings(manifest)
    logits = picture_model.logits_of_all(manifest, picture_model.stored(manifest), found)
    order = picture_model.least_sure_first(logits, found.ids)
    doubt = np.abs(logits[np.searchsorted(found.ids, order)])
    assert np.all(np.diff(doubt) >= 0)
    shown = review_orders.learned_order(similarity.EmbeddingKeeper(), manifest, 40)
    assert list(shown.ids) == list(order) and shown.note is None


def test_too_few_decisions_or_no_embeddings_say_what_is_needed(tmp_path, manifest):
    outcome = picture_model.learn(manifest)
    assert not outcome.learned and "at least 4" in outcome.message
    assert picture_model.stored(manifest) is None
    with Manifest(tmp_path / "bare.sqlite") as bare:
        doc_id = bare.register_document(sha256="b" * 64, path="/archive/b.pdf", size=1)["id"]
        scored(bare, doc_id, 0, [BOX])
        bare.set_document(doc_id, status="ok", pages=1)
        order = review_orders.learned_order(similarity.EmbeddingKeeper(), bare, 1)
        assert not len(order.ids) and "python -m curation embed" in order.note
        picture = bare.conn.execute("SELECT id FROM pictures").fetchone()[0]
        like = review_orders.like_order(similarity.EmbeddingKeeper(), bare, picture, 1)
        assert not len(like.ids) and "No picture of this manifest is embedded yet" in like.note
        for _ in range(4):
            bare.set_picture_override(picture, True)
        assert "not embedded yet" in picture_model.learn(bare).message


def test_decisions_and_the_model_survive_a_rescore(manifest):
    ids = ids_by_page(manifest)
    for page in range(4):
        manifest.set_picture_override(ids[page], False)
        manifest.set_picture_override(ids[page + 20], True)
    picture_model.learn(manifest)
    before = suggested(manifest, range(40))
    doc_id = manifest.documents()[0]["id"]
    for page in range(40):
        scored(manifest, doc_id, page, [BOX])  # scored again: the same boxes
    assert picture_model.decisions(manifest).labels.tolist() == [False] * 4 + [True] * 4
    assert suggested(manifest, range(40)) == before
