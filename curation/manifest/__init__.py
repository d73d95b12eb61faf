"""The manifest: the SQLite file every stage writes to and reads from, and where thumbnails are kept. It holds
the data only (schema, store, rows, history, settings, thumbnails): what the screens ask of it is
curation.views, above it."""
