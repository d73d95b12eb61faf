"""More like this in a real browser (Chromium at 1440 x 900): a curator clicks a card's More like this and the
Pictures view is sorted by likeness to that picture, says so, and goes back to the sort before; Exclude all
like this asks first, with the count, and is undone in one step."""

import os
import re

import numpy as np
import pytest

from curation import Manifest
from curation.manifest import picture_embeddings
from server_support import CHROMIUM, go, no_exception, settle, streamlit_server
from test_e2e_pictures import chromium_page  # noqa: F401 (the fixture)
from test_e2e_walkthrough import cli

playwright = pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM),
                                reason="needs Debian's chromium (apt-get install chromium)")

# Whether picture `id`'s card has a line that reads `words`.
CARD_SAYS = r"""([id, words]) => [...document.querySelectorAll("[class*='st-key-picture-card-']")].some(card =>
    new RegExp(`st-key-picture-card-[a-z]+-${id}(\\s|$)`).test(card.className) && card.innerText.split("\n").includes(words))"""
CARD_IDS = """() => [...document.querySelectorAll("[class*='st-key-picture-card-']")].map(card =>
    Number(card.className.match(/st-key-picture-card-[a-z]+-(\\d+)/)[1]))"""


def embed_as_a_family(db) -> tuple[list[int], int, list[int]]:
    """Every picture an embedding: pictures spread along one line, so likeness to the last picture runs
    against the page order. Returns the ids in page order, the picture clicked, and the likeness order."""
    with Manifest(db) as manifest:
        for row in manifest.pages():
            if not manifest.pictures(row["doc_id"], row["page"]):
                manifest.add_picture(row["doc_id"], row["page"], (20, 40, row["width"] // 2, row["height"] // 3))
        todo = picture_embeddings.missing(manifest.conn)
        rng = np.random.default_rng(2)
        start, end = rng.gamma(1.0, 0.3, (2, picture_embeddings.DIMENSIONS))
        steps = np.linspace(0, 1, len(todo))
        vectors = [(1 - t) * start + t * end for t in steps]
        with manifest.transaction():
            picture_embeddings.store(manifest.conn, [(row["id"], (row["bx0"], row["by0"], row["bx1"], row["by1"]), v)
                                                     for row, v in zip(todo, vectors)])
        ids = [row["id"] for row in todo]
    return ids, ids[-1], ids[::-1]


def test_more_like_this_sorts_the_view_by_likeness_and_goes_back(tmp_path, archive, chromium_page):  # noqa: F811
    db = tmp_path / "data" / "manifest.sqlite"
    cli("ingest", archive, "--db", db, "--workers", 1, "-q")
    in_page_order, clicked, alike_first = embed_as_a_family(db)
    env = {"CURATION_DB": str(db), "CURATION_ROOTS": str(archive)}
    with streamlit_server(tmp_path / "streamlit.log", env) as (_, port):
        url, page = f"http://127.0.0.1:{port}", chromium_page
        go(page, url, "review?view=Pictures")
        like = page.locator(f"[class*='st-key-picture-card-'][data-id='{clicked}']").get_by_role(
            "button", name="More like this")  # the card's own button
        like.wait_for()
        assert page.evaluate(CARD_IDS) == in_page_order
        like.click()
        page.get_by_text(re.compile("Sorted like picture")).wait_for()
        settle(page)
        assert page.evaluate(CARD_IDS) == alike_first  # most alike first, the picture itself leading
        page.wait_for_function(CARD_SAYS, arg=[clicked, "this picture"])  # its card's own line
        no_exception(page)
        # Exclude all like this, down to the likeness on the slider: asked first, with the count.
        page.locator(".st-key-pictures-like-exclude button").first.click()
        dialog = page.get_by_role("dialog")
        question = dialog.get_by_text(re.compile(r"Exclude all \d+ pictures"))
        question.wait_for()
        count = int(re.search(r"Exclude all (\d+) pictures", question.inner_text()).group(1))
        assert 1 <= count < len(in_page_order)
        dialog.get_by_role("button", name=f"Exclude {count} pictures").click()
        page.get_by_text(re.compile("pictures like this")).first.wait_for()
        settle(page)
        with Manifest(db) as manifest:
            excluded = [row["id"] for row in manifest.picture_rows(where="x.keep = 0")]
            assert sorted(excluded) == sorted(alike_first[:count])
            manifest.undo()  # one step takes them all back
            assert list(manifest.picture_rows(where="x.keep IS NOT NULL")) == []
        page.get_by_role("button", name=re.compile("Back to Document and page")).click()
        page.get_by_text(re.compile("Sorted like picture")).wait_for(state="detached")
        settle(page)
        assert page.evaluate(CARD_IDS) == in_page_order
        no_exception(page)
