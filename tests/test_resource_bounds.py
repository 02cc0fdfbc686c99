"""Bounds on what a file or a subject can make slow or crash.

- **Nesting**: every format tracework reads (register YAML and its compiled copy, rubric
  YAML, subject TOML, ``tracework.toml``, ``history.json``, ``records.json``,
  ``manifest.json``, notebooks) nested past the limit, a little or 100,000 levels, gives
  one message naming the file, exit 2, or a publish that skips and names it.
- **Numbers**: an integer ``int()`` refuses (over 4,300 digits) in a file is one message;
  in a subject's Python file it no longer hides every symbol of that file.
- **Python that does not parse**: a symbol anchor that could not be used says why.
- **Globs**: matched by RE2, in time linear in the path; the meaning is unchanged.

No test measures time: the assertions are on messages, counts and structure.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from hypothesis import example, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

import conftest
from conftest import render_store_report
from tracework import readers
from tracework.cli import main
from tracework.errors import PathNotFound
from tracework.hashing import Lines
from tracework.readers import MAX_DEPTH, TOO_DEEP, DataError, check_depth
from tracework.register import spans
from tracework.register.evidence import glob_regex, match_paths, matchable
from tracework.register.spans import NotPython, by_symbol, find_symbol
from tracework.workspace import Workspace

DEEPLY = [MAX_DEPTH + 1, 100_000]  # just past the limit (the parsers manage), and far past
HUGE = "1" * 5000  # an integer int() refuses (the default limit is 4,300 digits)


def nested(levels: int) -> str:
    """Flow lists inside each other, ``levels`` deep, closed (JSON, YAML and TOML alike)."""
    return "[" * levels + "]" * levels


# -- the readers -------------------------------------------------------------------------


def _safe(text: str) -> object:
    return readers.load_yaml(text)


def _round_trip(text: str) -> object:
    return readers.load_yaml(text, round_trip=True)


def _toml(text: str) -> object:
    return readers.load_toml(f"a = {text}")  # the table around it is one more level


LOADERS: dict[str, tuple[Callable[[str], object], int]] = {
    "json": (readers.load_json, 0),
    "yaml": (_safe, 0),
    "yaml round-trip": (_round_trip, 0),
    "toml": (_toml, 1),
}


@pytest.mark.parametrize("loader", LOADERS)
def test_every_reader_takes_the_limit_and_refuses_one_level_more(loader):
    load, around = LOADERS[loader]
    load(nested(MAX_DEPTH - around))
    for levels in (MAX_DEPTH + 1 - around, 1000, 100_000):
        with pytest.raises(DataError, match=re.escape(TOO_DEEP)):
            load(nested(levels))
    with pytest.raises(DataError, match="not valid"):
        load("[1, 2")


@pytest.mark.parametrize("loader", LOADERS)
def test_every_reader_names_an_integer_too_long_to_convert(loader):
    load = LOADERS[loader][0]
    with pytest.raises(DataError, match=r"an integer of more than 4300 digits\)$"):
        load(f"[{HUGE}]")
    assert load(f"[{'1' * 4300}]")  # at the limit, a number like any other


def test_the_yaml_scanner_stops_at_the_limit_not_at_the_end(monkeypatch):
    """ruamel's scanner looks at every open flow collection for each token it reads (20,000
    ``[`` took it 20 s): it is stopped when the limit is passed, not at the file's end."""
    from ruamel.yaml.scanner import Scanner  # the round-trip scanner's too

    opened = []
    real = Scanner.fetch_flow_collection_start
    monkeypatch.setattr(
        Scanner,
        "fetch_flow_collection_start",
        lambda self, *args: opened.append(1) or real(self, *args),
    )
    for load in (_safe, _round_trip):
        with pytest.raises(DataError, match=re.escape(TOO_DEEP)):
            load(nested(100_000))
    assert len(opened) == 2 * MAX_DEPTH


def test_a_long_dotted_toml_key_never_reaches_tomllib(monkeypatch):
    """tomllib's time and memory grow with the square of a dotted key's length (10,000
    parts: 4 s and 400 MB); the key is refused from its tokens before tomllib runs."""
    calls = []
    monkeypatch.setattr(readers.tomllib, "loads", lambda text: calls.append(text) or {})
    for text in ("a" + ".a" * 100_000 + " = 1\n", "[a" + ".a" * 100_000 + "]\n"):
        with pytest.raises(DataError, match=re.escape(TOO_DEEP)):
            readers.load_toml(text)
    assert calls == []
    fine = 'a.b.c = 1.5\n"d.e".f = 1979-05-27T07:32:00.999\ng = ["x.y.z", 1.0e3] # h.i.j\n'
    readers.load_toml(fine)
    assert calls == [fine]


def test_a_dotted_key_counts_each_part_as_a_level():
    key = ".".join(["a"] * MAX_DEPTH)
    readers.load_toml(f"{key} = 1\n")
    for text in (f"{key}.a = 1\n", f'{key} . "a" = 1\n', f"x = {{ {key}.a = 1 }}\n"):
        with pytest.raises(DataError, match=re.escape(TOO_DEEP)):
            readers.load_toml(text)
    # dots and brackets inside strings and comments are no keys and no nesting
    readers.load_toml(f'x = "{key}.a {nested(500)}"\ny = """\n{key}.a"""  # {nested(500)}\n')


def test_a_yaml_alias_inside_what_it_names_is_refused():
    for text in ("a: &a [*a]\n", "&r {x: [1, {y: *r}]}\n"):
        with pytest.raises(DataError, match="holds itself"):
            _safe(text)


def test_aliases_are_measured_once_however_often_they_repeat(monkeypatch):
    """Thirty anchors, each holding the one before it twice: 2**30 places to walk to, 31
    collections to measure."""
    lines = ["a0: &a0 [x]"] + [f"a{n}: &a{n} [*a{n - 1}, *a{n - 1}]" for n in range(1, 31)]
    data = _safe("\n".join(lines) + "\n")
    visited = []
    real = readers._children
    monkeypatch.setattr(readers, "_children", lambda node: visited.append(1) or real(node))
    check_depth(data)
    assert len(visited) == 32  # the top mapping and the 31 sequences, once each


def test_a_shared_collection_counts_at_its_deepest_place():
    """An anchor measured where it is shallow still counts where it is used deep down."""
    half = MAX_DEPTH // 2 + 1
    deep_list = "[" * half + "x" + "]" * half
    text = f"a: &a {deep_list}\nb: {'[' * half}*a{']' * half}\n"
    with pytest.raises(DataError, match=re.escape(TOO_DEEP)):
        _safe(text)


# -- every format, through the CLI and through publish -----------------------------------


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workspace whose report ``demo`` was rendered once (history, records, manifest)."""
    cell = (
        'q = src.quote("pkg/store.py", symbol="Store.put")\n'
        'wb.component("RT-CMP-store", label="Store", identity="The store.", evidence=[q])'
    )
    return render_store_report(tmp_path_factory.mktemp("bounds"), [cell]).parents[2]


@pytest.fixture
def ws(rendered: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Workspace]:
    """A copy of the rendered workspace to break, made the current directory."""
    root = tmp_path / "ws"
    shutil.copytree(rendered, root, symlinks=True)
    monkeypatch.chdir(root)
    yield Workspace(root)


def cli(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def refused(result: Result, where: str, *words: str) -> None:
    """The one error line (a hint may follow) names the file and says ``words``."""
    conftest.refused(result, where, *words)
    lines = result.stderr.strip().splitlines()
    assert lines[0].startswith("tracework: error: ") and where in lines[0], lines
    assert len(lines) <= 2 and all(w in lines[0] for w in words), lines


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def render_folder(ws: Workspace) -> Path:
    (folder,) = (p for p in (ws.reports / "demo").iterdir() if p.is_dir())
    return folder


def published(*args: str) -> dict:
    result = cli("publish", "--json", *args)  # to reports/site, the one place in a workspace
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


# Each file tracework reads: where it lives, what to write there to nest it ``n`` deep
# (or to hold ``number``), and the command that reads it first.
FILES: dict[str, tuple[str, Callable[[str], str], tuple[str, ...]]] = {
    "register": (
        "registers/demo.yaml",
        lambda value: f"version: 1\nname: demo\nsources: {value}\n",
        ("check", "demo"),
    ),
    "rubric": (
        "registers/rubrics/deep.yaml",
        lambda value: f"title: {value}\n",
        ("render", "demo"),
    ),
    "subject": (
        "sources/toy.toml",
        lambda value: f'url = "x"\ntrack = {value}\n',
        ("check", "demo"),
    ),
    "tracework.toml": ("tracework.toml", lambda value: f"[site]\ntitle = {value}\n", ("publish",)),
    "history": ("reports/demo/history.json", lambda value: value, ("render", "demo")),
}


@pytest.mark.slow
@pytest.mark.parametrize("levels", DEEPLY)
@pytest.mark.parametrize("kind", FILES)
def test_a_file_nested_too_deeply_is_one_message_naming_it(ws, kind, levels):
    where, content, command = FILES[kind]
    write(ws.root / where, content(nested(levels)))
    refused(cli(*command), where, TOO_DEEP)


@pytest.mark.parametrize("kind", FILES)
def test_an_integer_too_long_to_convert_is_one_message_naming_it(ws, kind):
    where, content, command = FILES[kind]
    value = f'[{{"commit": "{"a" * 40}", "commits_since_pin": {HUGE}}}]'
    write(ws.root / where, value if kind == "history" else content(HUGE))
    refused(cli(*command), where, "an integer of more than 4300 digits")


@pytest.mark.parametrize("parts", [MAX_DEPTH + 1, 100_000])
@pytest.mark.parametrize("kind", ["subject", "tracework.toml"])
def test_a_dotted_toml_key_too_long_is_one_message_naming_the_file(ws, kind, parts):
    where, _content, command = FILES[kind]
    write(ws.root / where, "a" + ".a" * (parts - 1) + " = 1\n")
    refused(cli(*command), where, TOO_DEEP)


@pytest.mark.parametrize("levels", DEEPLY)
def test_a_register_edit_reads_the_file_within_bounds_too(ws, levels):
    """Adding a source loads the register only to edit it, with the round-trip loader
    (so comments survive), not the safe one that ``check`` uses."""
    commit = json.loads((render_folder(ws) / "records.json").read_text())["commit"]
    (ws.registers / "demo.yaml").write_text(FILES["register"][1](nested(levels)))
    result = cli("register", "add-source", "demo", "SRC-2", "--subject", "toy", "--commit", commit)
    refused(result, "registers/demo.yaml", TOO_DEEP)


def test_a_notebook_nested_too_deeply_is_one_message_naming_it(ws):
    (ws.notebooks / "demo.ipynb").write_text('{"cells": ' + "[" * 100_000)
    refused(cli("render", "demo"), "notebooks/demo.ipynb", "not a readable notebook", TOO_DEEP)


@pytest.mark.parametrize("levels", DEEPLY)
@pytest.mark.parametrize("name", ["records.json", "manifest.json"])
def test_publish_skips_a_render_whose_json_is_nested_too_deeply(ws, name, levels):
    folder = render_folder(ws)
    (folder / name).write_text(nested(levels))
    out = published()
    assert out["renders"] == 0
    assert out["skipped"] == [f"reports/demo/{folder.name}: {name}: {TOO_DEEP}"]


@pytest.mark.parametrize("levels", DEEPLY)
def test_publish_skips_a_history_nested_too_deeply(ws, levels):
    (ws.reports / "demo" / "history.json").write_text(nested(levels))
    out = published()
    assert out["renders"] == 1
    assert out["skipped"] == [f"reports/demo/history.json is not a render history ({TOO_DEEP})"]


@pytest.mark.parametrize("levels", DEEPLY)
def test_publish_skips_a_register_or_rubric_nested_too_deeply(ws, levels):
    (ws.registers / "demo.yaml").write_text(FILES["register"][1](nested(levels)))
    write(ws.registers / "rubrics" / "deep.yaml", FILES["rubric"][1](nested(levels)))
    out = published()
    assert out["renders"] == 1 and out["rubrics"] == []
    rubric, register = out["skipped"]
    assert rubric == f"rubric deep: registers/rubrics/deep.yaml: {TOO_DEEP}"
    assert register.startswith("registers/demo.yaml: ")
    assert register.endswith(f"/registers/demo.yaml: {TOO_DEEP}")


def test_publish_skips_json_holding_an_integer_too_long_to_convert(ws):
    folder = render_folder(ws)
    (folder / "manifest.json").write_text(f'{{"tracework": {HUGE}}}')
    out = published()
    assert out["skipped"] == [
        f"reports/demo/{folder.name}: manifest.json: not valid JSON "
        "(an integer of more than 4300 digits)"
    ]


@pytest.mark.parametrize("name", ["records.json", "manifest.json"])
def test_rerender_renders_again_over_json_nested_too_deeply(ws, name):
    """A render whose files cannot be read is no good render: the batch renders the
    report again (it decides before any kernel starts, by reading these files)."""
    from tracework.batch.rerender import up_to_date

    folder = render_folder(ws)
    records = json.loads((folder / "records.json").read_text())
    (folder / name).write_text("[" * 100_000)
    assert up_to_date(ws, "demo", records["commit"]) is False


def test_a_compiled_register_copy_nested_too_deeply_is_only_stale(ws):
    """The copy is a cache: one that cannot be read is rebuilt from the YAML."""
    compiled = ws.registers / ".demo.yaml.compiled.json"
    assert compiled.is_file()
    compiled.write_text("[" * 1000 + "\n[]\n")  # a header line of the size it may have
    result = cli("check", "demo")
    assert result.exit_code == 0, result.output
    assert json.loads(compiled.read_bytes().partition(b"\n")[0])["format"]


# -- huge integers and unparsable Python in a subject's files ------------------------------

STORE = "class Store:\n    def put(self, key, value):\n        self.items[key] = value\n"
BIG = f"LIMIT = {HUGE}\n"


def test_a_symbol_is_found_in_a_file_holding_an_integer_too_long_to_convert():
    data = Lines((BIG + STORE + f"TABLE = [{HUGE}, 1_{'0_' * 3000}0, {HUGE}.5]\n").encode())
    span = by_symbol(data, "Store.put", "store.py")
    assert (span.first, span.last) == (3, 4)
    assert [(s.first, s.last) for s in find_symbol(data, "TABLE", "store.py")] == [(5, 5)]


def test_a_file_is_parsed_once_for_every_symbol_looked_up_in_it(monkeypatch):
    """A check relocating many quotes anchored in one large file parses it once, whether
    it parses or not (a 4 MiB file takes ast tens of seconds)."""
    calls = []
    real = spans.parse_python
    monkeypatch.setattr(
        spans, "parse_python", lambda data, path: calls.append(path) or real(data, path)
    )
    spans._symbols.cache_clear()
    for source in (BIG + STORE, STORE + "def broken(:\n"):
        for name in ("Store", "Store.put", "LIMIT", "nothing"):
            with contextlib.suppress(NotPython):
                find_symbol(Lines(source.encode()), name, "store.py")
    assert calls == ["store.py", "store.py"]


def test_a_symbol_anchor_holds_when_a_huge_integer_is_added_beside_it(pinned, tw):
    repo = pinned({"store.py": STORE})
    assert tw("quote", "demo", "SRC-1", "store.py", "--symbol", "Store.put").exit_code == 0
    edited = STORE.replace("self.items[key] = value", "self.items[key] = [value]")
    head = repo.write("store.py", BIG + edited).commit("a huge number")
    (item,) = drifted(tw, repo, head)
    assert (item["state"], item["new_lines"], item["detail"]) == ("changed", [3, 4], "anchor")


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        ("def broken(:\n", "not valid Python (line 4: invalid syntax)"),
        ("x = 1\n" * 2000 + "y = '\0'\n", "not valid Python (a NUL byte on line 2004)"),
        ("x = " + "-" * 100_000 + "1\n", "nested too deeply for Python's parser"),
        ("x = a" + ".b" * 100_000 + "\n", "nested too deeply for Python's parser"),
        ("x = " + "(" * 300 + ")" * 300 + "\n", "too many nested parentheses"),
    ],
)
@pytest.mark.slow
def test_a_symbol_anchor_in_a_file_that_no_longer_parses_says_why(pinned, tw, source, problem):
    repo = pinned({"store.py": STORE})
    assert tw("quote", "demo", "SRC-1", "store.py", "--symbol", "Store.put").exit_code == 0
    edited = STORE.replace("self.items[key] = value", "self.items[key] = [value]")
    head = repo.write("store.py", edited + source).commit("does not parse")
    (item,) = drifted(tw, repo, head)
    assert item["state"] == "missing"
    assert item["detail"].startswith("symbol anchor Store.put could not be used: store.py: ")
    assert problem in item["detail"]
    with pytest.raises(NotPython, match=re.escape(problem)):
        find_symbol(Lines((edited + source).encode()), "Store.put", "store.py")


def drifted(tw: Callable[..., Result], repo, head: str) -> list[dict]:
    """The quote items of ``check --at head`` (after fetching ``head``)."""
    assert tw("fetch", repo.path.name).exit_code == 0
    result = tw("check", "demo", "--at", head, "--json")
    assert "Traceback" not in result.output
    return [i for i in json.loads(result.stdout)["items"] if i["kind"] == "quote"]


def test_quoting_a_symbol_in_a_file_that_does_not_parse_says_why(pinned, tw):
    pinned({"store.py": STORE + "x = " + "-" * 100_000 + "1\n"})
    result = tw("quote", "demo", "SRC-1", "store.py", "--symbol", "Store.put")
    refused(
        result,
        "store.py",
        "nested too deeply for Python's parser, so Store.put cannot be found by name",
    )


# -- globs ---------------------------------------------------------------------------------


def test_globs_are_matched_by_re2_in_time_linear_in_the_path():
    """Each ``**/`` adds the same few instructions to the RE2 program, which runs once
    along the path; Python's backtracking engine took 37 s to find that these eight do
    not match one path 40 folders deep."""
    eight = glob_regex("**/" * 8 + "x.py")
    assert type(eight).__module__ == "re2"
    sizes = [glob_regex("**/" * n + "x.py").programsize for n in (8, 16, 32)]
    assert sizes[2] - sizes[1] == 2 * (sizes[1] - sizes[0])  # linear in the pattern
    deep = "/".join(["d"] * 40)
    assert eight.fullmatch(matchable(f"{deep}/file.txt")) is None
    assert eight.fullmatch(matchable(f"{deep}/x.py")) is not None


def test_eight_double_stars_against_a_path_forty_folders_deep(pinned, tw):
    deep = "/".join(["d"] * 40)
    pinned({f"{deep}/file.txt": "deep\n", "top.txt": "top\n"})
    miss = tw("register", "add-file", "demo", "SRC-1", "**/" * 8 + "x.py")
    refused(miss, "matches nothing")
    assert tw("register", "add-file", "demo", "SRC-1", "**/" * 8 + "*.txt").exit_code == 0
    files = YAML(typ="safe").load(Path("registers/demo.yaml"))["sources"]["SRC-1"]["files"]
    assert set(files) == {f"{deep}/file.txt", "top.txt"}


def test_a_backwards_range_is_a_clear_error():
    with pytest.raises(PathNotFound, match=r"the range z-a runs backwards"):
        glob_regex("x[z-a]")


def test_names_that_are_not_utf8_match_as_before():
    """A name that is not UTF-8 holds lone surrogates (``surrogateescape``): ``?``, ``*``
    and sets still take each as one character."""
    tree = dict.fromkeys(["caf\udce9.py", "cafe.py", "caf\udce9/x.py", "caf\u00e9.py"])
    assert match_paths(tree, "caf?.py") == sorted(["caf\udce9.py", "cafe.py", "caf\u00e9.py"])
    assert match_paths(tree, "caf[\udc80-\udcff].py") == ["caf\udce9.py"]
    assert match_paths(tree, "caf[!e].py") == sorted(["caf\udce9.py", "caf\u00e9.py"])
    assert match_paths(tree, "**/*.py") == sorted(tree)


def backtracking_glob(pattern: str) -> re.Pattern[str]:
    """The glob compiler as it was before RE2, for Python's engine: the reference the new
    one must agree with (on paths short enough for backtracking to finish)."""
    out, i = [], 0
    while i < len(pattern):
        ch = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[":
            start = i + 2 if pattern.startswith(("[!", "[^"), i) else i + 1
            end = pattern.find("]", start + 1 if pattern.startswith("]", start) else start)
            if end == -1:
                out.append(re.escape(ch))
            else:
                body = pattern[start:end]
                chars = []
                for k, c in enumerate(body):
                    ranged = (
                        c == "-" and 0 < k < len(body) - 1 and "-" not in (body[k - 1], body[k + 1])
                    )
                    chars.append(c if ranged else re.escape(c))
                out.append(f"[{'^' if start == i + 2 else ''}{''.join(chars)}]")
                i = end
        else:
            out.append(re.escape(ch))
        i += 1
    return re.compile("".join(out), re.S)


GLOB_CHARS = st.sampled_from(
    ["a", "b", "/", "*", "**", "**/", "?", "[", "]", "!", "^", "-", ".", "é", "\udce9"]
)
NAME_CHARS = st.sampled_from(["a", "b", "/", "-", ".", "[", "]", "!", "^", "\n", "é", "\udce9"])


@settings(max_examples=1500, deadline=None, database=None)
@given(
    pattern=st.lists(GLOB_CHARS, max_size=8).map("".join),
    path=st.lists(NAME_CHARS, max_size=8).map("".join),
)
@pytest.mark.slow
@example(pattern="[a-b-]", path="-")
@example(pattern="[!-a]", path="/")
@example(pattern="[é-\udcff]", path="\udce9")
@example(pattern="[é-\udcff]", path="\ue000")
@example(pattern="**/a", path="b\n/a")
def test_re2_globs_mean_what_the_backtracking_ones_meant(pattern, path):
    try:
        reference = backtracking_glob(pattern)
    except re.error:
        with pytest.raises(PathNotFound):
            glob_regex(pattern)
        return
    new = glob_regex(pattern)
    assert (new.fullmatch(matchable(path)) is not None) == bool(reference.fullmatch(path))
