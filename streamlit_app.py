"""The dashboard's server: `streamlit run streamlit_app.py` serves dashboard.py through this st.App.

It adds checks to Streamlit's own, on every request before Streamlit answers it (pages/components/server.py):
every response forbids framing; every request, HTTP and WebSocket alike, must name an allowed host
(`server.allowedHosts` in .streamlit/config.toml; Streamlit checks it on its WebSocket only, so a web page
whose domain was rebound to this server's address, DNS rebinding, would get the rest); a WebSocket must
come from a page of the dashboard's own origin, and may not empty the caches every session shares; the upload
route takes files only for a curator's session, within the server's limits, and a closed session's uploads are
freed at once. What the pages import is imported once the server is up, in the background
(pages/components/warm_up.py), not on a curator's first click.
"""

import streamlit as st
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware

from pages.components import warm_up
from pages.components.server import NoFraming, RefusedBackMessages, SameOriginWebSocket, UploadGate

ALLOWED_HOSTS = st.get_option("server.allowedHosts") or ["*"]  # empty: Streamlit's own default, any host

app = st.App("dashboard.py", middleware=[  # outermost first: a refused request's answer is not framable either
    Middleware(NoFraming),
    Middleware(TrustedHostMiddleware, allowed_hosts=ALLOWED_HOSTS),
    Middleware(SameOriginWebSocket),
    Middleware(RefusedBackMessages),
    Middleware(UploadGate),
])
warm_up.start()  # what the pages import, imported before the first click (pages/components/warm_up.py)
