"""The picture stage: every picture on a page, found and checked.

The page analysis (curation.scoring.pictures) proposes candidate regions, tuned for recall: ink that
is not text, grouped by nearness, at two ink strengths, with and without ruled lines. A text detector
(`text`) says where the page's lines of type and writing are, so that a legend, a column beside a
cartoon or a line of handwriting falls out of a candidate's box. Each candidate is then scored "is
this a picture" by a small learned head (`verdict`) reading an embedding of the crop (`embedding`) and
the analysis's own measures (`candidates`), and the best-scoring boxes that do not overlap are the
page's pictures. `train` is the head's recipe: which labelled pages it learned from, and its figures,
leave one source out.
"""
