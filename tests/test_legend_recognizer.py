"""Legends Tesseract cannot read are read by the recognizer (PP-OCRv6, from the rapidocr wheel): a line of
Japanese under a picture, a title in outline capitals Tesseract sees no letters in; a page without a
legend still gets none. Pages are
generated as in test_legends (an engraving of random hatching, body text beside and under it)."""

import numpy as np
import pymupdf
import pytest
from test_legends import PICTURE, accuracy, as_scan, centred_line, legend_page, needs_engine, reference_box

from curation.captions import legend as legends
from curation.captions import recognizer
from curation.captions.legend import read_legends

needs_recognizer = pytest.mark.skipif(not recognizer.available(),
                                      reason="the recognizer comes with the rapidocr package, not installed here")
JAPANESE = "第4·2圖 青ウミガメ"


def japanese_page(scan: bool) -> pymupdf.Document:
    doc = legend_page([])
    centred_line(doc[0], JAPANESE, PICTURE[3] + 14, pymupdf.Font("japan"), 10)
    return as_scan(doc, dpi=200) if scan else doc


@needs_recognizer
def test_the_character_list_is_the_models_own():
    symbols = recognizer.characters()
    assert symbols[0] == "" and symbols[-1] == " "  # CTC's blank first, a space last, as PaddleOCR decodes
    assert {"A", "z", "7", "圖", "ウ", "の", "·"} <= set(symbols)
    blank = np.full((recognizer.HEIGHT, recognizer.MIN_WIDTH), 255, np.uint8)
    assert recognizer._probabilities(blank).shape[1] == len(symbols)  # a symbol for each of the network's outputs


@needs_recognizer
def test_lines_of_every_width_read_the_same_with_the_memory_given_back_after_each():
    """The recogniser runs without the runtime's arena and without its packed copy of the weights: the
    probabilities ONNX Runtime's defaults give (to about 1e-6: unpacked weights are summed in another order),
    whatever the order of widths."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    defaults = onnxruntime.InferenceSession(recognizer.model_path(), options, providers=["CPUExecutionProvider"])
    given_back = recognizer._network()
    rng = np.random.default_rng(0)
    for width in (960, 320, 640, 320):  # the widest first: a kept arena would serve the others from its memory
        line = rng.uniform(-1, 1, (1, 3, recognizer.HEIGHT, width)).astype(np.float32)
        np.testing.assert_allclose(given_back(line), defaults.run(None, {given_back.input: line})[0], atol=1e-5)


@needs_recognizer
def test_ctc_is_decoded_greedily_dropping_repeats_and_blanks():
    symbols = recognizer.characters()
    a, b = symbols.index("A"), symbols.index("B")
    steps = [a, a, 0, a, b, b, 0, 0]  # "A" held over two steps, a blank, "A" again, then "B"
    probabilities = np.full((len(steps), len(symbols)), 0.1 / len(symbols), np.float32)
    probabilities[np.arange(len(steps)), steps] = 0.9
    text, confidence = recognizer.decode(probabilities)
    assert text == "AAB"
    assert confidence == pytest.approx(0.9, abs=0.01)
    assert recognizer.decode(np.eye(len(symbols), dtype=np.float32)[[0, 0, 0]]) == ("", 0.0)


@needs_recognizer
def test_a_space_is_put_where_japanese_characters_stand_apart_by_an_empty_square():
    """The network writes no space in Japanese; a legend sets one between the figure's number and its name,
    an empty square: characters two pitches apart. Latin letters keep the network's own spaces."""
    symbols = recognizer.characters()

    def steps(text: str, at: list[int]) -> np.ndarray:
        probabilities = np.zeros((max(at) + 2, len(symbols)), np.float32)
        probabilities[:, 0] = 1  # blank, except where a symbol is read
        for ch, step in zip(text, at):
            probabilities[step] = 0
            probabilities[step, symbols.index(ch)] = 1
        return probabilities

    assert recognizer.decode(steps("第1圖スツポン", [0, 4, 8, 16, 20, 24, 28]))[0] == "第1圖 スツポン"
    assert recognizer.decode(steps("第1圖スツポン", [0, 4, 8, 12, 16, 20, 24]))[0] == "第1圖スツポン"
    assert recognizer.decode(steps("MILLRACE", [0, 4, 8, 12, 24, 28, 32, 36]))[0] == "MILLRACE"


def typeset_line(text: str) -> np.ndarray:
    """A line of type, cropped close: dark on light, as a legend's line is given to the recognizer."""
    import cv2

    line = np.full((60, 3000), 250, np.uint8)
    cv2.putText(line, text, (10, 45), cv2.FONT_HERSHEY_SIMPLEX, 1.0, 20, 2, cv2.LINE_AA)
    rows, columns = np.flatnonzero(line.min(axis=1) < 128), np.flatnonzero(line.min(axis=0) < 128)
    return line[rows[0] - 2:rows[-1] + 3, columns[0] - 4:columns[-1] + 5]


@needs_recognizer
def test_a_long_line_is_read_in_pieces_cut_between_its_words(monkeypatch):
    """A line many times as wide as it is tall is read in pieces, so the network's memory stays that of a short
    line; the pieces are cut in the paper between words, and read together they give the whole line."""
    import cv2

    text = "Fig. 12. Section of the engine house, shewing the boiler, the cylinder and the beam"
    gray = typeset_line(text)
    line = cv2.resize(gray, (round(recognizer.HEIGHT * gray.shape[1] / gray.shape[0]), recognizer.HEIGHT))
    pieces = recognizer._pieces(line)
    assert len(pieces) >= 2 and pieces[0][0] == 0 and pieces[-1][1] == line.shape[1]
    assert all(end - start <= recognizer.PIECE_WIDTH for start, end, _ in pieces)
    assert all(a[1] == b[0] for a, b in zip(pieces, pieces[1:]))
    dark = (int(line.min()) + int(line.max())) / 2
    assert all(line[:, start].min() > dark for start, _, _ in pieces[1:]), "no stroke is cut"
    assert all(space for _, _, space in pieces[1:]), "each cut lies between two words"
    read, confidence = recognizer.read_line(gray)
    assert read == text and confidence > 0.9
    monkeypatch.setattr(recognizer, "PIECE_WIDTH", 10_000)
    assert recognizer.read_line(gray)[0] == read, "read whole, the line reads the same"
    assert recognizer._pieces(line) == [(0, line.shape[1], False)]


@needs_engine
@needs_recognizer
@pytest.mark.parametrize("scan", [False, True])
def test_a_japanese_legend_under_a_picture_is_read(scan):
    [found] = read_legends(japanese_page(scan), 0, [reference_box()])
    assert found is not None
    assert accuracy(found.text, JAPANESE) >= 0.8, found.text
    assert found.text.startswith("第4·2圖 "), found.text  # the space after the figure's number, put back
    assert legends.MIN_CONFIDENCE <= found.confidence <= 1


@needs_engine
def test_without_the_recognizer_a_japanese_legend_is_not_read_and_nothing_fails(monkeypatch):
    monkeypatch.setattr(recognizer, "model_path", lambda: None)
    assert read_legends(japanese_page(False), 0, [reference_box()]) == [None]


def hollow_title_page(title: str) -> pymupdf.Document:
    """A picture with `title` under it in outline letters (stroked, not filled), scanned."""
    doc = legend_page([], under=False)
    width = pymupdf.Font("tibo").text_length(title, fontsize=18)
    doc[0].insert_text(((PICTURE[0] + PICTURE[2] - width) / 2, PICTURE[3] + 24), title, fontname="tibo",
                       fontsize=18, render_mode=1, border_width=0.03)
    return as_scan(doc, dpi=200)


@needs_engine
@needs_recognizer
def test_a_title_in_outline_capitals_tesseract_sees_no_letters_in_is_read(monkeypatch):
    """Outline capitals on an engraved plate: Tesseract sees shapes, no letters, where the recognizer reads
    the title. (Outlines Tesseract reads as other letters, unsurely, are not read.)"""
    title = "THE OLD MILL."
    doc = hollow_title_page(title)
    monkeypatch.setattr(legends, "read_text", lambda gray, languages, dpi: ("", 0.0, 0))
    [found] = read_legends(doc, 0, [reference_box()])
    assert found is not None and accuracy(found.text, title) >= 0.9, found
    assert legends.RECOGNIZER_MIN_CONFIDENCE <= found.confidence <= 1
    monkeypatch.setattr(legends, "READER", "tesseract")
    assert read_legends(doc, 0, [reference_box()]) == [None]


@needs_engine
@needs_recognizer
def test_lower_case_tesseract_sees_no_letters_in_is_not_taken_for_a_legend(monkeypatch):
    """Where Tesseract sees no letters, only capitals are taken from the recognizer: a hand's label on a
    manuscript's drawing, which it reads as surely as print, is lower case. The "fallback" reader takes it."""
    doc = hollow_title_page("the old mill")
    monkeypatch.setattr(legends, "read_text", lambda gray, languages, dpi: ("", 0.0, 0))
    assert read_legends(doc, 0, [reference_box()]) == [None]
    monkeypatch.setattr(legends, "READER", "fallback")
    [found] = read_legends(doc, 0, [reference_box()])
    assert found is not None and accuracy(found.text, "the old mill") >= 0.9, found


def test_the_recognizer_reads_only_what_tesseract_cannot():
    """Where Tesseract reads letters of its own languages, unsurely, the recognizer's read is not taken:
    it reads a hand or an ornament as surely as print. A script Tesseract has no data for is taken."""
    assert legends._foreign(JAPANESE, "eng+deu+fra")
    assert not legends._foreign(JAPANESE, "eng+jpn")
    assert not legends._foreign("Noeud de tisserand", "eng+deu+fra")


@needs_engine
@needs_recognizer
@pytest.mark.parametrize("scan", [False, True])
def test_a_picture_without_a_legend_gets_none_from_either_reader(scan):
    doc = legend_page([])
    assert read_legends(as_scan(doc) if scan else doc, 0, [reference_box()]) == [None]


@needs_engine
@needs_recognizer
def test_the_column_resuming_close_under_a_legend_ends_it():
    """A book sets the text under a legend as closely as its own lines: the legend is the centred line, not
    the paragraph after it."""
    doc = legend_page([], under=False, beside=False)
    page = doc[0]
    centred_line(page, "Fig. 12. The old mill.", PICTURE[3] + 12, pymupdf.Font("tiro"), 7.5)
    writer = pymupdf.TextWriter(page.rect)
    text = "The mill stood on the river for two hundred years before the flood of the spring carried it off. " * 3
    writer.fill_textbox(pymupdf.Rect(PICTURE[0] - 30, PICTURE[3] + 15, PICTURE[2] + 30, 400), text,
                        font=pymupdf.Font("tiro"), fontsize=12, lineheight=1.25)
    writer.write_text(page)
    [found] = read_legends(doc, 0, [reference_box()])
    assert found is not None and accuracy(found.text, "Fig. 12. The old mill.") >= 0.9, found
