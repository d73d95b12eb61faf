"""What is learned from the curators' decisions, above the manifest they are kept in: the page model learned
from overrides (`learn`), the picture model learned from picture decisions (`picture_model`), how alike
pictures are (`picture_similarity`: More like this, reprints), near-duplicate plates (`duplicates`), and
the keys a curator reviews a grid with (`keyboard`)."""
