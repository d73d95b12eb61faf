"""The dashboard's entry point: `streamlit run streamlit_app.py`.

It registers the pages and shows in the sidebar which manifest is open ($CURATION_DB, default
data/manifest.sqlite).
"""

import streamlit as st

from pages import _common as common

SECTIONS = {
    "Curation": [
        ("pages/home.py", "Home", ":material/home:"),
        ("pages/ingest.py", "Ingest", ":material/upload_file:"),
        ("pages/threshold.py", "Threshold", ":material/tune:"),
        ("pages/review.py", "Review", ":material/grid_view:"),
        ("pages/export.py", "Export", ":material/archive:"),
    ],
    "Veterinary": [
        ("pages/vet_scanner.py", "Vet scanner", ":material/pets:"),
    ],
}

st.set_page_config(page_title="Curation dashboard", page_icon=":material/auto_stories:", layout="wide")
page = st.navigation({
    section: [st.Page(path, title=title, icon=icon, default=path == "pages/home.py") for path, title, icon in pages]
    for section, pages in SECTIONS.items()
})
common.sidebar()
page.run()
