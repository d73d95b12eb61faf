"""A regular expression a person wrote is bounded when compiled, not only when matched: a pattern whose
counted repeats would be written out past the limit is refused at once, in a process whose memory is capped,
before any engine builds it; a brace the `regex` engine would read as fuzzy matching is refused; sane
patterns still run. Every compile of a person's pattern goes through guards.patterns."""

import ast
import pathlib
import subprocess
import sys
import textwrap

import pytest

from curation.captions import edit
from curation.captions.edit import CaptionEditError
from guards import patterns
from guards.patterns import PatternRefused

from conftest import ROOT

# Each of these took the server past gigabytes in the `regex` engine, or made it ask for more than the machine has.
EXPLOSIVE = [
    "(?:(?:(?:a{100}){100}){100}){6}",
    "(?:(?:(?:a{1000}){1000}){1000}){1000}",
    "(?:x{65535}){65535}",
    "(a{100}){200}",  # a capturing group repeated
    "(?:a{1000}){1000,}",  # no upper count: its lower one is written out
    "(?:a{1000}){,1000}",
    "(?:a{100}){200}?",  # lazy
    "(?:a{100}){200}+",  # possessive
    "(?>(?:a{100}){200})",  # atomic
    "(?<=(?:a{100}){200})b",  # inside a lookbehind
    "(?!(?:a{100}){200})b",
    "(?:x|(?:a{100}){200})",  # in one branch
    "(?:a{2}b{2}c{2}){5000}",  # many small ones
    "a{100000}",
    "(?:[a-z]{1,500}){500}",
]
NOT_OFFERED = [
    "(?:foo){e<=3}",  # fuzzy matching in `regex`, literal text in `re`
    "(?:foo){i<=1,d<=1}",
    "a{ 1}",
    "a{}",
    "a{,}",
    r"\p{L}+",  # `regex` only: `re` has no such escape
    r"\L<names>",
    r"(?V1)[[a-z]--[aeiou]]",
    "(?r)abc",
    "a{1000}{1000}",  # a repeat of a repeat
    "(" * 600 + "a" + ")" * 600,  # nests past what is read
    "a" * 1001,
]


@pytest.mark.parametrize("pattern", EXPLOSIVE)
def test_a_pattern_whose_repeats_write_out_past_the_limit_is_refused(pattern):
    with pytest.raises(PatternRefused, match=r"repeats ask for more than 10,000"):
        patterns.checked(pattern)
    with pytest.raises(CaptionEditError, match=r"repeats ask for more than 10,000"):
        edit.replacer(pattern, "x", regex=True)


@pytest.mark.parametrize("pattern", NOT_OFFERED)
def test_what_the_regex_engine_alone_reads_is_refused_with_a_reason(pattern):
    with pytest.raises(CaptionEditError) as error:
        edit.replacer(pattern, "x", regex=True)
    assert str(error.value) and "Traceback" not in str(error.value)


def test_the_explosive_patterns_are_refused_fast_in_a_process_capped_at_one_gigabyte():
    """The compile itself, through the guard, in a child whose address space is capped: before the guard
    the first of them took the server from 438 MB to 2.29 GB and the last asked for more than the machine
    has; a MemoryError or a kill here is the failure."""
    script = textwrap.dedent(f"""
        import resource, sys, time
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
        sys.path.insert(0, {str(ROOT)!r})
        from curation.captions import edit
        started = time.perf_counter()
        for pattern in {EXPLOSIVE + NOT_OFFERED!r}:
            try:
                edit.replacer(pattern, "x", regex=True)("a" * 500)
            except edit.CaptionEditError:
                continue
            raise SystemExit("not refused: " + pattern)
        print(f"{{time.perf_counter() - started:.3f}}")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:] + done.stdout
    assert float(done.stdout.strip()) < 2.0


@pytest.mark.parametrize("pattern, text, expected", [
    (r"\d{4}", "a lady, 1890", "a lady, x"),
    (r"(?:ab){2,3}", "ababab!", "x!"),
    (r"a{,3}b", "aaab", "x"),
    (r"\N{EM DASH}", "a—b", "axb"),
    (r"[{}]", "a{b}", "axbx"),  # braces in a set are characters
    (r"\{e<=1\}", "foo{e<=1}", "foox"),  # an escaped brace is found as text
    (r"(?:[a-z]{1,10}\s){3}", "one two three four", "xfour"),
    (r"(?>a+)b", "aab", "x"),
])
def test_sane_patterns_still_run(pattern, text, expected):
    assert edit.replacer(pattern, "x", regex=True)(text) == expected


def test_the_size_counts_nested_repeats_multiplied_and_branches_added():
    from re import _parser

    def size(pattern):
        return patterns.expanded_size(_parser.parse(pattern))

    assert size("abc") == 3
    assert size("a{10}") == 10
    assert size("(?:a{10}){10}") == 100
    assert size("(?:ab{3}|c){4}") == 20
    assert size("(?=a{5})b") == 6
    assert size("a*") == 1 and size("a{3,}") == 3


def test_every_compile_of_a_persons_pattern_goes_through_the_guard():
    """The `regex` engine is compiled in one place only, after guards.patterns.checked."""
    compiled_in = []
    for path in [*ROOT.glob("curation/**/*.py"), *ROOT.glob("pages/**/*.py"), *ROOT.glob("inference/**/*.py"),
                 ROOT / "dashboard.py", ROOT / "streamlit_app.py"]:
        tree = ast.parse(pathlib.Path(path).read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [alias.name for alias in node.names] + [getattr(node, "module", None) or ""]
                if "regex" in names:
                    compiled_in.append(str(pathlib.Path(path).relative_to(ROOT)))
    assert compiled_in == ["curation/captions/edit.py"]
    source = (ROOT / "curation/captions/edit.py").read_text()
    assert source.count("regex.compile(") == 1 and source.index("patterns.checked(") < source.index("regex.compile(")
