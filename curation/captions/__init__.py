"""Captions of pictures: the printed legend, the captioning model's and the curator's, which one a picture
shows, and editing the curator's in bulk (find and replace, legends as captions)."""
