"""The Pictures view's tools on embeddings, screen by screen: without embeddings they say what embeds the
pictures; Learn from my picture decisions says how its agreement changed and each card then shows the model's
suggestion; least sure first and the reprints are sorts of the view; More like this screens page on."""

import html
import re

import numpy as np
import pytest

from apptest_support import grid_cards, grid_event, ran, texts
from curation import Manifest
from curation.decisions import picture_similarity as similarity
from curation.manifest import picture_embeddings
from test_app_pictures import db, pictures_view, with_pictures  # noqa: F401 (db: the fixture)
from test_picture_learning import kind_of_picture


def embed(db, reprinted=()):
    """Every picture an embedding: engravings of one kind, stock cuts of another; or, with `reprinted`
    (ids), every picture its own, those all the first picture printed again."""
    rng = np.random.default_rng(4)
    direction = np.zeros(picture_embeddings.DIMENSIONS)
    direction[:300] = 1.5
    with Manifest(db) as manifest:
        todo = picture_embeddings.missing(manifest.conn)
        engraving = [row["number"] == 1 for row in todo]
        vectors = np.where(np.array(engraving)[:, None], kind_of_picture(direction, len(todo), rng),
                           kind_of_picture(-direction, len(todo), rng))
        if reprinted:
            vectors = rng.gamma(1.0, 0.3, (len(todo), picture_embeddings.DIMENSIONS))
        for row, vector in zip(todo, vectors):
            if row["id"] in reprinted:
                vector[:] = vectors[0] * 1.01
        with manifest.transaction():
            picture_embeddings.store(manifest.conn, [(row["id"], (row["bx0"], row["by0"], row["bx1"], row["by1"]), v)
                                                     for row, v in zip(todo, vectors)])
    similarity.KEEPER.__init__()  # a test's manifest path is reused: forget the last one's


def ids(db):
    with Manifest(db) as manifest:
        return [row["id"] for row in manifest.picture_rows(order="x.page, x.number")]


def test_without_embeddings_the_tools_say_what_embeds_the_pictures(db):
    with_pictures(db, pages=3)
    at = pictures_view()
    at.selectbox(key="pic_sort").set_value("reprints")
    ran(at)
    assert any("python -m curation embed" in str(i.value) for i in at.info)
    at.button(key="pictures-learn").click()
    ran(at)
    assert any("at least 4" in str(w.value) for w in at.warning)


def test_learning_shows_a_suggestion_on_each_card_and_least_sure_first_sorts_by_it(db):
    with_pictures(db, pages=6)
    embed(db)
    every = ids(db)
    at = pictures_view()
    assert "model:" not in texts(at) + cards_text(at)  # nothing learned yet: no suggestion shown
    with Manifest(db) as manifest:
        for picture_id in every[:4]:
            manifest.set_picture_override(picture_id, picture_id == every[0] or picture_id == every[2])
    at.button(key="pictures-learn").click()
    ran(at)
    said = " ".join(str(s.value) for s in at.success)
    assert "Learned from 4 picture decisions" in said and "Agreement with your decisions" in said
    assert cards_text(at).count("model: keep") == 6  # the engravings
    assert cards_text(at).count("model: exclude") == 6  # the stock cuts
    at.selectbox(key="pic_sort").set_value("learned")
    ran(at)
    assert not at.exception and len(grid_cards(at)) == 12


def cards_text(at) -> str:
    """What the cards show (their tooltips aside)."""
    return html.unescape(re.sub(r"<[^>]*>", " ", " ".join(grid_cards(at).values())))


def test_reprints_together_and_more_like_this_with_its_way_back(db):
    with_pictures(db, pages=30)  # 60 pictures: two screens
    every = ids(db)
    embed(db, reprinted={every[10], every[20], every[31]})
    at = pictures_view()
    at.selectbox(key="pic_sort").set_value("reprints")
    ran(at)
    shown = list(grid_cards(at))
    assert [int(i) for i in shown] == [every[0], every[10], every[20], every[31]]  # the first is their original
    assert "reprint group 1 · 4 pictures" in cards_text(at)
    grid_event(at, "like", every[10])  # its card's More like this
    assert any("Sorted like picture" in str(m.value) for m in at.markdown)
    first = list(grid_cards(at))
    assert int(first[0]) == every[10] and {int(i) for i in first[1:4]} == {every[0], every[20], every[31]}
    assert len(first) == 48
    next(b for b in at.button if b.key == "pictures-next").click()
    ran(at)
    second = list(grid_cards(at))
    assert len(second) == 12 and not set(first) & set(second)
    next(b for b in at.button if b.key == "pictures-like-back").click()
    ran(at)
    assert not any("Sorted like picture" in str(m.value) for m in at.markdown)
    assert at.selectbox(key="pic_sort").value == "reprints"


@pytest.fixture(autouse=True)
def forget_embeddings():
    yield
    similarity.KEEPER.__init__()
