"""The dashboard's server: `streamlit run streamlit_app.py` serves dashboard.py through this st.App.

It adds one check to Streamlit's own: every request, HTTP and WebSocket alike, must name an allowed host
(`server.allowedHosts` in .streamlit/config.toml). Streamlit checks it on its WebSocket only; checking
every route as well means a web page whose domain was rebound to this server's address (DNS rebinding)
gets nothing from it.
"""

import streamlit as st
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware

ALLOWED_HOSTS = st.get_option("server.allowedHosts") or ["*"]  # empty: Streamlit's own default, any host

app = st.App("dashboard.py", middleware=[Middleware(TrustedHostMiddleware, allowed_hosts=ALLOWED_HOSTS)])
