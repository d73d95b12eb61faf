"""Where pages come from: archive PDFs on disk or behind a URL, the server folders the app may read,
and generated archives (synthetic scans, the sample archive, hostile files for the fuzz campaign)."""
