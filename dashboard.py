"""The dashboard's script, served by streamlit_app.py (`streamlit run streamlit_app.py`).

It lets in only who may use the dashboard (pages/components/auth.py: the sign-in screen when sign-in is on),
registers the pages, lists them in the sidebar and shows there which manifest is open ($CURATION_DB, default
data/manifest.sqlite).
"""

import streamlit as st

from pages.components import auth, common

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

st.set_page_config(page_title="Curation dashboard", page_icon=common.app_icon(), layout="wide")
page_list = st.sidebar.container()  # first in the sidebar, filled once the person is let in
if not auth.gate():  # the sign-in or not-allowed screen is all this session gets
    st.stop()
# The page list is drawn here, not by Streamlit: Streamlit's own (hidden by client.showSidebarNavigation in
# .streamlit/config.toml) would first list the files of pages/ until this script has run.
registered = {
    section: [st.Page(path, title=title, icon=icon, default=path == "pages/home.py") for path, title, icon in pages]
    for section, pages in SECTIONS.items()
}
page = st.navigation(registered, position="hidden")
with page_list:
    for section, pages in registered.items():
        st.caption(section)
        for entry in pages:
            st.page_link(entry)
common.sidebar()
page.run()
