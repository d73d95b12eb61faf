"""Regular expressions a person wrote, bounded before any engine compiles them.

A time limit bounds matching only. Compiling can cost without limit too: the `regex` engine (which runs
find and replace, for its time limit) writes a counted repeat out in full, so `(?:(?:(?:a{100}){100}){100}){6}`
(36 characters) becomes six million nodes, 1.8 GB that stay in the server; `(?:x{65535}){65535}` asks for
more memory than the machine has. So a pattern is measured here first, on the parse tree of Python's own
`re` (which compiles a repeat as a count and never writes it out): its size written out, every counted
repeat multiplied through the repeats it sits in, must stay within MAX_EXPANDED. Nothing is compiled by
an engine before that.

The `regex` engine also reads a few things that `re` takes as plain text; the one that matters is a brace
after a group, `(?:foo){e<=3}`, which `regex` runs as fuzzy matching (costly, and not what Python's
documentation says the pattern means). So a brace that is not a counted repeat must be escaped (`\\{`).
Escapes `re` does not know (`\\p{..}`, `\\L<name>`, `\\G`) and inline flags it does not know (`(?V1)`,
`(?r)`) are refused by `re` itself. Standard library only (see guards/__init__).
"""

from __future__ import annotations

import re

try:  # Python 3.11+
    from re import _constants as sre_constants, _parser as sre_parse
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants  # type: ignore[no-redef]
    import sre_parse  # type: ignore[no-redef]

MAX_PATTERN_CHARS = 1_000  # longer than any caption a person would search for a part of
MAX_EXPANDED = 10_000  # nodes once written out: about 3 MB in `regex`, compiled in milliseconds
_REPEATS = {sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT, getattr(sre_constants, "POSSESSIVE_REPEAT", None)}
_COUNTED_BRACE = re.compile(r"\{(\d+(,\d*)?|,\d+)\}")  # {3} {2,5} {1,} {,4}: not {} or {,}, read apart by the engines


class PatternRefused(ValueError):
    """A pattern that is not run; the message says why, for a person."""


def checked(pattern: str, flags: int = 0) -> re.Pattern:
    """`pattern` compiled by Python's `re`, once it is known to be bounded: not longer than MAX_PATTERN_CHARS,
    MAX_EXPANDED nodes at most once its counted repeats are written out, no brace that the `regex` engine
    would read as fuzzy matching. PatternRefused otherwise (and when it is not a regular expression)."""
    if len(pattern) > MAX_PATTERN_CHARS:
        raise PatternRefused(f"the pattern is {len(pattern):,} characters long, over the limit of "
                             f"{MAX_PATTERN_CHARS:,}; search for a shorter part of the text")
    _refuse_loose_braces(pattern)
    try:
        size = expanded_size(sre_parse.parse(pattern, flags))
        if size > MAX_EXPANDED:
            raise PatternRefused(f"the pattern's repeats ask for more than {MAX_EXPANDED:,} characters or groups "
                                 "once written out; a caption is far shorter: use smaller counts, or + and * "
                                 "instead of {n}")
        return re.compile(pattern, flags)  # re compiles a repeat as a count: bounded by the pattern's length
    except re.error as exc:
        raise PatternRefused(f"{_shown(pattern)} is not a regular expression: {error_message(exc)}; search for "
                             "plain text instead, or escape the character with a backslash") from None
    except RecursionError:
        raise PatternRefused("the pattern nests its groups too deeply to be read") from None


def expanded_size(tree) -> int:
    """How many nodes a parsed pattern (`sre_parse.parse`'s SubPattern, or its items) holds once every
    counted repeat is written out: a repeat counts its body times its upper count (its lower one when it has
    none), nested repeats multiply. Stops counting past MAX_EXPANDED, so a huge figure costs no time."""
    total = 0
    for op, av in tree:
        if op in _REPEATS:
            low, high, body = av
            count = high if high != sre_constants.MAXREPEAT else max(low, 1)
            inner = expanded_size(body)
            total += inner * count if inner else count
        elif op is sre_constants.SUBPATTERN:
            total += expanded_size(av[-1])
        elif op in (sre_constants.ASSERT, sre_constants.ASSERT_NOT):
            total += expanded_size(av[1])
        elif op is sre_constants.BRANCH:
            total += sum(expanded_size(branch) for branch in av[1])
        elif op is getattr(sre_constants, "ATOMIC_GROUP", None):
            total += expanded_size(av)
        elif op is sre_constants.GROUPREF_EXISTS:
            total += 1 + sum(expanded_size(branch) for branch in av[1:] if branch is not None)
        else:
            total += 1
        if total > MAX_EXPANDED:
            return total
    return total


def _refuse_loose_braces(pattern: str) -> None:
    """PatternRefused for a `{` outside a character set that is neither escaped nor a counted repeat
    (`{3}`, `{2,5}`, `{,4}`, `{1,}`): `re` takes it as text, the `regex` engine may read a fuzzy match."""
    i, set_start = 0, None  # where the character set open at i began (its first "]" is a character)
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            if pattern[i + 1:i + 2] == "N" and pattern[i + 2:i + 3] == "{":  # \N{EM DASH}: a named character
                end = pattern.find("}", i)
                i = end + 1 if end > 0 else len(pattern)
            else:
                i += 2
            continue
        if set_start is not None:
            if char == "]" and i > set_start + 1 and pattern[set_start + 1:i] != "^":
                set_start = None
        elif char == "[":
            set_start = i
        elif char == "{" and not _COUNTED_BRACE.match(pattern, i):
            raise PatternRefused(f"the brace at character {i + 1} is not a count such as {{3}} or {{2,5}}; "
                                 "write \\{ to find a brace (fuzzy matching such as {e<=1} is not offered)")
        i += 1


def _shown(pattern: str) -> str:
    return repr(pattern) if len(pattern) <= 60 else repr(pattern[:60]) + "…"


def error_message(exc: Exception) -> str:
    """An engine's error (`re`'s or `regex`'s) in words, with the character it points at counted from 1."""
    message = getattr(exc, "msg", None) or str(exc)
    position = getattr(exc, "pos", None)
    return f"{message} (at character {position + 1})" if position is not None else message
