"""Captions of pictures: the printed legend, the captioning model's and the curator's, which one a picture
shows, and editing the curator's in bulk (find and replace, legends as captions).

`legend` reads each picture's printed legend by OCR (Tesseract through tesserocr) in the ingest workers;
it is kept beside the picture's box with the OCR's confidence."""
