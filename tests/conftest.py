"""Shared fixtures: real tiny git repositories with fixed dates, and a workspace.

Repositories are built with plain git in temp folders (never the network); commit
dates are fixed and increase by one hour per commit, so commit ids are stable.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import pytest
from click.testing import CliRunner, Result

from tracework.cli import main
from tracework.workspace import Workspace

BASE_EPOCH = 1767225600  # 2026-01-01T00:00:00Z

#: The cache folder the user's tools had before the test session gave itself its own (uv's
#: package cache lives under it: an offline install of the wheel reads it).
USER_CACHE_HOME = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")


#: Fixtures that start kernels (a rendered report), a browser or a docs build: a test
#: using one is slow whatever its own marks say, so `make test-fast` leaves it out.
SLOW_FIXTURES = frozenset({"demo", "site", "rendered", "browser", "built_site"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


#: What only a test marked slow may start, as its command line names it (a starter's
#: arguments included): a sandbox, a browser, a kernel, JupyterLab, a kernel host.
SLOW_PROGRAMS = frozenset({"bwrap", "unshare", "setpriv", "chromium", "ipykernel_launcher"})
SLOW_PROGRAMS |= {"jupyterlab", "kernel_host import host_main"}
_running: list[str] = []  # the test running now, while `make test-fast` watches


def pytest_configure(config: pytest.Config) -> None:
    """Under ``-m "not slow"`` (``make test-fast``), a test that starts one of
    :data:`SLOW_PROGRAMS` fails, naming the mark it lacks: the split stays by test."""
    if "not slow" not in (config.option.markexpr or ""):
        return
    started = subprocess.Popen.__init__

    def watched(self: subprocess.Popen[Any], args: Any, *rest: Any, **kwargs: Any) -> None:
        words = [args] if isinstance(args, (str, bytes, os.PathLike)) else list(args)
        for word in map(os.fsdecode, words):  # a program by its name, code by its text
            name = word.rsplit("/", 1)[-1]
            found = [p for p in SLOW_PROGRAMS if name == p or (" " in p and p in word)]
            if _running and found:
                pytest.fail(f"{_running[0]} starts {found[0]}: mark it @pytest.mark.slow")
        started(self, args, *rest, **kwargs)

    subprocess.Popen.__init__ = watched  # type: ignore[method-assign]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    _running[:] = [item.nodeid]
    try:
        return (yield)
    finally:
        _running.clear()


@pytest.fixture(autouse=True)
def _backends(request: pytest.FixtureRequest) -> None:
    """A test that needs an isolation backend — a parameter naming one, or a ``backend``
    mark naming them — skips where it is missing (:func:`needs_backend`), before any
    other fixture of its own runs."""
    callspec = getattr(request.node, "callspec", None)
    params = callspec.params.values() if callspec else ()
    named = [v for v in params if isinstance(v, str) and v in BACKEND_TOOLS]
    for mark in request.node.iter_markers("backend"):
        named += mark.args
    for backend in dict.fromkeys(named):
        needs_backend(backend)


def in_ci() -> bool:
    """Whether the suite runs in CI (``CI`` set, as CI services set it: ``CI=true``)."""
    return os.environ.get("CI", "").lower() not in ("", "0", "false", "no")


def missing(message: str) -> NoReturn:
    """Skip a test for want of a program the machine lacks, saying which and how to
    install it; in CI, fail it instead: CI installs what the tests need (``.ci/run``),
    so there a missing program is a broken machine, never a reason to test less."""
    if in_ci():
        pytest.fail(f"{message} (required in CI)", pytrace=False)
    pytest.skip(message)


#: The isolation backends a capture test may force, each with what provides it.
BACKEND_TOOLS = {
    "bwrap": "bubblewrap: apt-get install -y bubblewrap",
    "unshare": "util-linux: apt-get install -y util-linux",
}


def needs_backend(backend: str) -> None:
    """Skip (in CI: fail) a test that forces isolation backend ``backend`` where its
    program is not on PATH, where tracework looks for it: a capture there is refused,
    and a machine without bubblewrap still runs every test the unshare backend can."""
    if shutil.which(backend) is None:
        missing(f"needs isolation backend `{backend}`, from {BACKEND_TOOLS[backend]}")


def sigint_default() -> None:
    """For ``preexec_fn``: Ctrl-C's default disposition in a child the test interrupts.
    A shell that ignores SIGINT (a background job, ``nohup``, some CI agents) hands the
    ignoring on through fork and exec, and a Python started so never raises
    KeyboardInterrupt; a test that sends SIGINT sets what it relies on."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def git(
    cwd: Path, *args: str, env: dict[str, str] | None = None, input: bytes | None = None
) -> str:
    """Run git in ``cwd`` with a neutral config and return stdout as text."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    full_env.update(
        {
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": "/dev/null",
            "GIT_AUTHOR_NAME": "Fixture",
            "GIT_AUTHOR_EMAIL": "fixture@example.invalid",
            "GIT_COMMITTER_NAME": "Fixture",
            "GIT_COMMITTER_EMAIL": "fixture@example.invalid",
        }
    )
    full_env.update(env or {})
    proc = subprocess.run(
        ["git", *args], cwd=cwd, env=full_env, input=input, capture_output=True, check=True
    )
    return proc.stdout.decode("utf-8", errors="surrogateescape")


@dataclass
class Repo:
    """A small git repository built step by step; ``commit`` returns the full id."""

    path: Path
    commits: list[str] = field(default_factory=list)

    def write(self, rel: str, content: bytes | str) -> Repo:
        target = self.path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
        return self

    def symlink(self, rel: str, points_to: str) -> Repo:
        target = self.path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.symlink_to(points_to)
        return self

    def remove(self, rel: str) -> Repo:
        git(self.path, "rm", "-q", "-r", "--", rel)
        return self

    def move(self, old: str, new: str) -> Repo:
        (self.path / new).parent.mkdir(parents=True, exist_ok=True)
        git(self.path, "mv", "--", old, new)
        return self

    def commit(self, message: str = "change") -> str:
        when = f"@{BASE_EPOCH + 3600 * len(self.commits)} +0000"
        git(self.path, "add", "-A")
        git(
            self.path,
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            message,
            env={"GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when},
        )
        sha = git(self.path, "rev-parse", "HEAD").strip()
        self.commits.append(sha)
        return sha

    def git(self, *args: str) -> str:
        return git(self.path, *args)


@pytest.fixture(scope="session", autouse=True)
def _user_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A cache folder of the test session's own (the register copies' sealing key lives
    there), so the tests never write to the user's home."""
    folder = tmp_path_factory.mktemp("cache")
    old = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(folder)
    yield
    if old is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = old


def init_repo(path: Path) -> Repo:
    """An empty repository at ``path`` (made if need be), on branch ``main``; for
    fixtures that outlive one test and so cannot use ``make_repo``."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    return Repo(path)


@pytest.fixture
def make_repo(tmp_path: Path) -> Callable[[str], Repo]:
    """Factory: ``make_repo("subject")`` creates an empty repository under tmp_path."""

    def factory(name: str = "subject") -> Repo:
        path = tmp_path / name
        path.mkdir()
        return init_repo(path)

    return factory


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    """A fresh workspace, made the current directory."""
    ws = Workspace.init(tmp_path / "ws")
    monkeypatch.chdir(ws.root)
    return ws


def invoke(*args: str) -> Result:
    """Run the ``tracework`` CLI in-process in the current directory, exceptions raised."""
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture
def tw(workspace: Workspace) -> Callable[..., Result]:
    """Run the ``tracework`` CLI in-process inside the workspace: ``tw("check", "demo")``."""
    return invoke


def pin_subject(
    run: Callable[..., Result],
    repo: Repo,
    commit: str,
    *,
    name: str = "toy",
    track: str | None = None,
    reports: Sequence[str] = (),
) -> None:
    """Add ``repo`` as subject ``name`` (following ``track``, else its default branch),
    fetch it, and pin ``commit`` as SRC-1 of register ``demo``, or, given ``reports``, of
    each report ``tracework new`` scaffolds (its register and its notebook).

    The one copy of the sequence an analyst types, so a suite that needs a pinned subject
    says so in one line and a change to the commands is met in one place. ``run`` is the
    CLI in the workspace: ``tw``, or :func:`invoke` where a fixture outlives one test."""
    steps: list[tuple[str, ...]] = [
        ("subject", "add", name, str(repo.path), *(("--track", track) if track else ())),
        ("fetch", name),
    ]
    if reports:
        steps += [("new", report, "--subject", name, "--commit", commit) for report in reports]
    else:
        steps += [
            ("register", "new", "demo"),
            ("register", "add-source", "demo", "SRC-1", "--subject", name, "--commit", commit),
        ]
    for args in steps:
        result = run(*args)
        assert result.exit_code == 0, (args, result.output)


@pytest.fixture
def pinned(make_repo: Callable[[str], Repo], tw: Callable[..., Result]) -> Callable[..., Repo]:
    """Factory: a subject pinned by :func:`pin_subject`; returns its Repo (more commits can
    follow; re-fetch with tw).

    ``pinned(files)`` builds repository ``name`` holding ``files`` in one commit and pins
    it; ``pinned(repo=built)`` pins a repository a test built itself (links, submodules,
    hand-made trees) at its newest commit, or at ``commit`` when git made that one
    outside :meth:`Repo.commit`. ``name``, ``track`` and ``reports`` are
    :func:`pin_subject`'s."""

    def factory(
        files: Mapping[str, bytes | str] | None = None,
        name: str = "toy",
        *,
        repo: Repo | None = None,
        commit: str | None = None,
        track: str | None = None,
        reports: Sequence[str] = (),
    ) -> Repo:
        if repo is None:
            assert files is not None, "give the subject's files, or a repo the test built"
            repo = make_repo(name)
            for rel, content in files.items():
                repo.write(rel, content)
            repo.commit("first")
        else:
            assert files is None, "files go into the repo the test built, before pinning"
        pin = commit or repo.commits[-1]
        pin_subject(tw, repo, pin, name=name, track=track, reports=reports)
        return repo

    return factory


CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def needs_chromium() -> None:
    """Skip without Debian's chromium, with the command that installs it; in CI a
    missing browser fails the test instead (:func:`missing`)."""
    if not Path(CHROMIUM).is_file():
        missing("browser tests need Debian's chromium: apt-get install -y chromium")


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """Headless chromium driven by Playwright, with background networking off."""
    needs_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chrome = pw.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--no-first-run",
                "--disable-sync",
            ],
        )
        yield chrome
        chrome.close()


def shown_html(view: Any) -> str:
    """What a display shows, without the stylesheet every display carries in front (its
    class names, "present", "broken", "holds", would match any word a test looks for)."""
    html: str = view._repr_html_()
    if not html.startswith("<style>"):
        return html
    return html.partition("</style>")[2]


def refused(result: Result, *words: str) -> None:
    """Bad input, as every command must meet it: exit 2, exactly one ``tracework: error:``
    line on stderr (a hint may follow it), no traceback, and ``words`` in what it says."""
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("tracework: error:")]
    assert len(errors) == 1, result.stderr
    for word in words:
        assert word in result.output, (word, result.output)


def page_fits(browser: Any, url: str, width: int) -> dict[str, Any]:
    """Open ``url`` ``width`` pixels wide; what a reader would see of its width: the
    page's scroll width, the words and boxes past the right edge that no box of their
    own scrolls, console errors and requests."""
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    requests: list[str] = []
    errors: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(url)
    page.wait_for_load_state("load")
    found = page.evaluate(
        """() => {
        const width = document.documentElement.clientWidth;
        const past = [];
        const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
        for (let n = walker.nextNode(); n; n = walker.nextNode()) {
            const range = document.createRange();
            range.selectNodeContents(n);
            const box = range.getBoundingClientRect();
            if (box.width && box.right > width + 1) {
                let scrolled = false;
                for (let a = n.parentElement; a && !scrolled; a = a.parentElement)
                    scrolled = ['auto', 'scroll', 'hidden'].includes(getComputedStyle(a).overflowX);
                if (!scrolled) past.push(n.textContent.slice(0, 60));
            }
        }
        return {scroll: document.documentElement.scrollWidth, width, past: past.slice(0, 5)};
    }"""
    )
    context.close()
    return {**found, "errors": errors, "requests": requests}


def pids_in(folder: Path) -> list[int]:
    """Processes (other than this one) whose working directory is ``folder`` (Linux): what
    a test that kills or interrupts tracework checks is gone, and kills if it is not."""
    pids = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit() and int(proc.name) != os.getpid():
            try:
                if Path(os.readlink(proc / "cwd")) == folder:
                    pids.append(int(proc.name))
            except OSError:
                continue  # gone meanwhile, or not ours to read
    return pids


#: Seconds a tracework run in a subprocess may take before the test calls it hung: only
#: a run stuck for good comes near it.
HANG_GUARD = 300


def run_tracework(folder: Path, *args: str, prelude: str = "") -> subprocess.CompletedProcess[str]:
    """``tracework ARGS`` in ``folder``, in a subprocess and a session of its own (its
    kernels are not this test's children), after ``prelude`` (Python run first: a
    setting patched); killed whole, with whatever else runs in ``folder``, if it hangs,
    so a regression fails the test instead of hanging the suite."""
    code = f"{prelude}\nfrom tracework.cli import main\nmain({list(args)!r})"
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        cwd=folder,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=HANG_GUARD)
    except subprocess.TimeoutExpired:
        with suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
        for pid in pids_in(folder):  # a kernel that outlived it would hold its pipes open
            with suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"`tracework {' '.join(args)}` hung")
    return subprocess.CompletedProcess(args, proc.returncode, out, err)


def running_in(folder: Path, *marks: str) -> dict[int, str]:
    """Processes still running in ``folder`` (zombies aside) whose command line holds
    one of ``marks`` (``ipykernel``: kernels), with their command lines."""
    found = {}
    for pid in pids_in(folder):
        with suppress(OSError):
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1]
            if not state.startswith("Z") and any(mark in cmdline for mark in marks):
                found[pid] = cmdline
    return found


STORE = "class Store:\n    def put(self, key, value):\n        self.items[key] = value\n"


def render_store_report(
    root: Path,
    cells: list[Any],
    files: dict[str, str] | None = None,
    quotes: Sequence[tuple[str, dict[str, Any]]] = (),
) -> Path:
    """A subject holding ``pkg/store.py`` (class ``Store``) and ``files``, a workspace
    under ``root`` with report ``demo`` pinned at its one commit, ``cells`` (code as text,
    or nbformat cells) inserted after the notebook's set-up, ``Store.put`` and ``quotes``
    (each a path and ``src.quote``'s keywords) quoted, rendered; returns the render's
    folder."""
    import json

    import nbformat

    toy = init_repo(root / "toy").write("pkg/store.py", STORE)
    for path, text in (files or {}).items():
        toy.write(path, text)
    first = toy.commit("first")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        assert invoke("init", "ws").exit_code == 0
        patch.chdir(root / "ws")
        pin_subject(invoke, toy, first, reports=["demo"])
        path = root / "ws" / "notebooks" / "demo.ipynb"
        nb = nbformat.read(path, as_version=4)
        for i, cell in enumerate(cells):
            nb.cells.insert(
                4 + i, nbformat.v4.new_code_cell(cell) if isinstance(cell, str) else cell
            )
        nbformat.write(nb, path)
        import tracework

        src = tracework.open("demo").source("SRC-1")
        src.quote("pkg/store.py", symbol="Store.put")
        for path, where in quotes:
            src.quote(path, **where)
        result = invoke("render", "demo", "--json")
        assert result.exit_code == 0, result.output
        return root / "ws" / json.loads(result.output)["directory"]


@dataclass
class RouteStub:
    """What diagram generation reads of a route record."""

    id: str
    label: str
    passes_through: tuple[str, ...]


@dataclass
class PathStub:
    """What diagram generation reads of a behavioural-authority path record."""

    id: str
    source_material: str
    consumer: str
    channel: str


def markdown_headings(nb: Any) -> list[str]:
    """The ``## `` headings of a notebook's markdown cells, in order."""
    return [
        line[3:]
        for cell in nb.cells
        if cell.cell_type == "markdown"
        for line in cell.source.splitlines()
        if line.startswith("## ")
    ]
