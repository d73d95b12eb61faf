"""Who is using the dashboard and what they may do: sign-in with Streamlit's own OpenID Connect
(st.login), and the roles the server keeps.

Sign-in is on when `.streamlit/secrets.toml` has an `[auth]` table. Then only signed-in people get
past `gate()`, and a `[curation]` table in the same file says who may curate and who may only look:

    [curation]
    curators = ["ana@example.org"]
    viewers = ["*@example.org"]   # shell-style patterns; "*" lets every signed-in person look

Someone signed in but in neither list sees a "not allowed" screen, and so does someone whose provider does
not state their address verified (`email_verified`): the person is who the provider's issuer and subject
say (`iss`, `sub`, recorded beside the address in the history), and an address is only a key to a role
once the provider vouches for it. Without `[auth]` there is no one to
tell apart: the dashboard serves the person at the server (it listens on 127.0.0.1 only), by their OS
login name, as a curator.

Roles are checked on the server in every action that changes something (`require_curator()` in the
callbacks and button branches), not only by disabling widgets: Streamlit drops a value sent for a widget
drawn disabled, but a page drawn before someone lost the curator's role still has its controls enabled.
"""

from __future__ import annotations

import fnmatch
import getpass
import ipaddress
import re
import string
from collections.abc import Mapping

import streamlit as st

from pages.components.escaping import code_span, escape_markdown

CURATOR, VIEWER = "curator", "viewer"
LOCKED_HELP = "Only curators can change this; you may look."
LOOPBACK_NAMES = ("localhost",)


# -- configuration: the server's secrets.toml, never the browser ------------------------------


def _secrets_table(name: str) -> Mapping:
    if not st.secrets.load_if_toml_exists():
        return {}
    table = st.secrets.get(name)
    return table if isinstance(table, Mapping) else {}


def sign_in_configured() -> bool:
    """Whether `[auth]` is set in the server's secrets.toml (the same test st.login makes)."""
    return bool(_secrets_table("auth"))


def _providers() -> list[str]:
    """The named providers ([auth.google], [auth.microsoft]…); empty when [auth] holds one provider itself."""
    return [name for name, value in _secrets_table("auth").items()
            if isinstance(value, Mapping) and "client_id" in value]


def _entries(key: str) -> list[str]:
    value = _secrets_table("curation").get(key, [])
    if isinstance(value, str):
        value = [value]
    return [str(entry).strip() for entry in value if str(entry).strip()]


def _patterns(key: str) -> list[str]:
    return [ascii_lower(entry) for entry in _entries(key)]


# An address is compared as it was sent: printable ASCII with no space, nothing stripped. str.lower() folds
# more than ASCII (the Kelvin sign U+212A becomes "k"), so an address holding anything else could be made
# to match a listed one.
PLAIN_ADDRESS = re.compile(r"[!-~]+")
ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


def ascii_lower(text: str) -> str:
    """`text` with A-Z made a-z and nothing else changed."""
    return text.translate(ASCII_LOWER)


def role_of(email: str | None) -> str | None:
    """CURATOR, VIEWER, or None (not allowed) for a signed-in e-mail address, by the [curation] lists.

    The address matches an entry only as the same ASCII address, compared without regard to ASCII case;
    one holding anything outside printable ASCII, or any space, matches nothing."""
    if not email or not PLAIN_ADDRESS.fullmatch(email):
        return None
    email = ascii_lower(email)
    if any(fnmatch.fnmatchcase(email, pattern) for pattern in _patterns("curators")):
        return CURATOR
    if any(fnmatch.fnmatchcase(email, pattern) for pattern in _patterns("viewers")):
        return VIEWER
    return None


def role_of_account(account: tuple[str, str] | None) -> str | None:
    """CURATOR, VIEWER or None for a person listed by their provider's issuer and subject, written
    "ISSUER SUBJECT" exactly as the provider sends them (no patterns: "*" names no account). For providers
    that send no verified address (Microsoft Entra ID sends no `email_verified`)."""
    if account is None:
        return None
    key = " ".join(account)
    return next((role for role, entries in ((CURATOR, "curators"), (VIEWER, "viewers"))
                 if key in _entries(entries)), None)


# -- the person in this session -----------------------------------------------------------------


def _user() -> dict:
    return st.user.to_dict()


def signed_in() -> bool:
    return bool(_user().get("is_logged_in"))


def account_of(user: Mapping) -> tuple[str, str] | None:
    """(issuer, subject) of a signed-in person: who the provider says they are, the one identity a
    provider never hands to another account. None when not signed in or the provider sent neither."""
    if not user.get("is_logged_in"):
        return None
    issuer, subject = user.get("iss"), user.get("sub")
    return (str(issuer), str(subject)) if issuer and subject else None


def verified_email_of(user: Mapping) -> str | None:
    """The signed-in person's e-mail address, only when the provider states it verified
    (`email_verified` true): an address anyone can type into an account at some provider names no one."""
    if account_of(user) is None or user.get("email_verified") is not True:
        return None
    email = user.get("email")
    return str(email) if email else None


def role_of_user(user: Mapping) -> str | None:
    """The role of the person `user` describes (st.user's claims, or a session's user info on the server):
    CURATOR, VIEWER, or None (not signed in, no verified address, not allowed)."""
    if not sign_in_configured():
        return CURATOR
    roles = {role_of_account(account_of(user)), role_of(verified_email_of(user))}
    return CURATOR if CURATOR in roles else VIEWER if VIEWER in roles else None


def _signed_in_email() -> str | None:
    return verified_email_of(_user())


def current_user() -> str:
    """The signed-in person's verified e-mail address, else their subject; without sign-in, the server's OS
    login name."""
    if not sign_in_configured():
        return _os_login()
    account = account_of(_user())
    return _signed_in_email() or (account[1] if account else "")


def current_account() -> tuple[str, str] | None:
    """(issuer, subject) of the signed-in person, recorded beside their address; None without sign-in."""
    return account_of(_user()) if sign_in_configured() else None


def _os_login() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a bare container)
        return "local user"


def role() -> str | None:
    """This session's role: CURATOR, VIEWER, or None (not signed in, or not allowed)."""
    return role_of_user(_user())


def can_curate() -> bool:
    return role() == CURATOR


def require_curator() -> bool:
    """For an action that changes something: True for a curator; else a message, and False."""
    if can_curate():
        return True
    st.toast(f"Not changed: {LOCKED_HELP}", icon=":material/block:")
    return False


def locked() -> bool:
    """Whether widgets that change things are shown disabled in this session."""
    return not can_curate()


def help_for(help_text: str | None = None) -> str | None:
    """A changing widget's help: why it is disabled for a viewer, else its own."""
    return LOCKED_HELP if locked() else help_text


# -- the gate -----------------------------------------------------------------------------------


def gate() -> bool:
    """Run before any page: True when this session may use the dashboard.

    Otherwise it has drawn the sign-in or the not-allowed screen as the only page (so no URL reaches
    another), and the caller stops.
    """
    if not sign_in_configured():
        with st.sidebar:
            st.caption(f":material/person: {_shown(_os_login())} · sign-in is off")
        return True
    if not signed_in():
        st.navigation([st.Page(sign_in_screen, title="Sign in", icon=":material/login:")], position="hidden").run()
        return False
    if role() is None:
        st.navigation([st.Page(not_allowed_screen, title="Not allowed", icon=":material/block:")],
                      position="hidden").run()
        return False
    with st.sidebar:
        st.caption(f":material/person: {_shown(current_user())} · {role()}")
        st.button("Sign out", icon=":material/logout:", key="sign-out", on_click=st.logout, type="tertiary")
    return True


def _shown(text: str) -> str:
    """A name from the sign-in provider or the OS, as literal text in Markdown."""
    return escape_markdown(text)


def sign_in_screen() -> None:
    st.title("Curation dashboard")
    st.markdown("Sign in to use the dashboard.")
    providers = _providers()
    if not providers:
        st.button("Sign in", type="primary", icon=":material/login:", key="sign-in", on_click=st.login)
    for provider in providers:
        st.button(f"Sign in with {provider.title()}", type="primary", icon=":material/login:",
                  key=f"sign-in-{provider}", on_click=st.login, args=(provider,))


def not_allowed_screen() -> None:
    st.title("Not allowed")
    who = _signed_in_email()
    if who:
        st.error(f"You are signed in as {_shown(who)}, but the dashboard's administrator has not given this "
                 "address a role. Ask them to add it to the curators or viewers.", icon=":material/block:")
    else:
        st.error(f"You are signed in, but your sign-in provider {_unverified_reason(_user())}. The dashboard "
                 "gives roles by verified addresses only: anyone can put someone else's address on an account "
                 "that does not check it. Verify the address with your provider, or ask the dashboard's "
                 "administrator which provider to use.", icon=":material/block:")
    st.button("Sign out", icon=":material/logout:", key="sign-out", on_click=st.logout)


def _unverified_reason(user: Mapping) -> str:
    email = user.get("email")
    if account_of(user) is None:
        return "did not say who you are (no issuer and subject)"
    if not email:
        return "sent no e-mail address"
    return f"did not state that your address {_shown(str(email))} is verified"


# -- what Home says about it ----------------------------------------------------------------------


def listens_on_loopback_only() -> bool:
    """Whether the server is bound to this machine alone (`server.address`)."""
    address = (st.get_option("server.address") or "").strip().strip("[]")
    if address in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:  # empty (every interface) or a host name
        return False


def access_notice() -> None:
    """On Home: who can reach this dashboard, said plainly when sign-in is off."""
    if sign_in_configured():
        return
    if listens_on_loopback_only():
        st.info(f"**Sign-in is off.** The server listens on {st.get_option('server.address')} only, so only "
                f"people on this machine can open the dashboard; they act as **{_shown(_os_login())}**, a curator. "
                "To serve a team, turn on sign-in (an `[auth]` table in `.streamlit/secrets.toml`) or put a "
                "reverse proxy with its own authentication in front: see the README, *Serving a team*.",
                icon=":material/lock:")
    else:
        st.warning("**Sign-in is off, and the server listens beyond this machine** (`server.address` is "
                   f"{code_span(st.get_option('server.address') or 'every interface')}): anyone who reaches it can "
                   "change and export everything. Turn on sign-in or bind it to 127.0.0.1 behind a reverse "
                   "proxy with its own authentication: see the README, *Serving a team*.",
                   icon=":material/lock_open:")
