"""The environment as an investigator publishes it: the subject's lock installed as
``uv sync --frozen`` installs it (default groups, and the groups and extras declared),
every distribution with the SHA-256 of the file it came from, and the harness's own
packages resolved once into a committed ``captures/NAME.lock``.

The subject ``toy`` has a ``uv.lock`` written as uv writes one: ``alpha`` (two wheels,
one for another platform), a ``dev`` group (``devtool``, and ``sdonly``, which exists
only as an sdist), a ``lint`` group and an extra ``opt``.  Its packages come from an
index served on the test's loopback; nothing here touches the network.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from importlib.metadata import version
from pathlib import Path

import pytest

from capture_setup import (
    LocalIndex,
    Setup,
    capture_workspace,
    make_sdist,
    make_wheel,
    one_error,
)
from tracework.capture.envtree import EnvironmentRefused
from tracework.capture.errors import CaptureConfigError
from tracework.capture.extralock import (
    LockedPin,
    conflict,
    read_extra_lock,
    render,
    split,
    stale,
)
from tracework.capture.lock import LockedFile, LockFiles, select
from tracework.capture.provenance import Installed, Pin, distributions, installed, wheel_tags

slow = pytest.mark.slow  # sandboxes

#: The wheel the lock names for another platform: never downloaded.
FOREIGN = "alpha-1.0-cp27-cp27mu-manylinux1_x86_64.whl"
FOREIGN_SHA = "f" * 64

HARNESS = """
import alpha, devtool, sdonly
from tracework_harness import capture

with capture.case("P-01", "Does the lock's dev group install, its sdist built?") as c:
    c.record("names", [alpha.NAME, devtool.NAME])
    c.check("sdonly was built from its sdist", holds=sdonly.BUILT is True, observed="built")
"""

EXTRA_HARNESS = """
import fakellm, helper
from tracework_harness import capture

with capture.case("X-01", "Does the harness's own package import?") as c:
    c.record("reply", fakellm.REPLY)
    c.check("it replies", holds=fakellm.REPLY == "ok", observed=fakellm.REPLY)
"""


def _wheel(index: LocalIndex, name: str, version: str = "1.0", requires=()) -> str:
    filename, data = make_wheel(
        name,
        version,
        {f"{name}/__init__.py": f"NAME = {name!r}\nREPLY = 'ok'\nVERSION = {version!r}\n"},
        requires=tuple(requires),
    )
    return index.add(name, filename, data)


def _serve(index: LocalIndex) -> dict[str, str]:
    """The packages of the toy's lock, and the harness's own, on the index: their
    files' SHA-256 by name."""
    hashes = {name: _wheel(index, name) for name in ("alpha", "devtool", "linter", "optpkg")}
    filename, data = make_sdist("sdonly", "0.1.4", {"sdonly/__init__.py": "BUILT = True\n"})
    hashes["sdonly"] = index.add("sdonly", filename, data)
    hashes["helper"] = _wheel(index, "helper")
    hashes["fakellm"] = _wheel(index, "fakellm", requires=("alpha>=1.0", "helper"))
    return hashes


PYPROJECT = """\
[project]
name = "toy"
version = "0.1.0"
requires-python = ">=3.8"
dependencies = ["alpha"]

[project.optional-dependencies]
opt = ["optpkg"]

[dependency-groups]
dev = ["devtool", "sdonly"]
lint = ["linter"]
"""


def _lock(index: LocalIndex, hashes: dict[str, str]) -> str:
    """uv.lock as uv writes it for :data:`PYPROJECT` against ``index``."""
    source = f'source = {{ registry = "{index.url}/simple" }}'

    def wheel(name: str, digest: str, filename: str | None = None) -> str:
        filename = filename or f"{name}-1.0-py3-none-any.whl"
        return f'    {{ url = "{index.url}/files/{filename}", hash = "sha256:{digest}" }},\n'

    packages = [
        f'[[package]]\nname = "alpha"\nversion = "1.0"\n{source}\nwheels = [\n'
        + wheel("alpha", FOREIGN_SHA, FOREIGN)
        + wheel("alpha", hashes["alpha"])
        + "]\n",
        *(
            f'[[package]]\nname = "{n}"\nversion = "1.0"\n{source}\nwheels = [\n'
            + wheel(n, hashes[n])
            + "]\n"
            for n in ("devtool", "linter", "optpkg")
        ),
        f'[[package]]\nname = "sdonly"\nversion = "0.1.4"\n{source}\n'
        f'sdist = {{ url = "{index.url}/files/sdonly-0.1.4.tar.gz", '
        f'hash = "sha256:{hashes["sdonly"]}" }}\n',
        """\
[[package]]
name = "toy"
version = "0.1.0"
source = { virtual = "." }
dependencies = [
    { name = "alpha" },
]

[package.optional-dependencies]
opt = [
    { name = "optpkg" },
]

[package.dev-dependencies]
dev = [
    { name = "devtool" },
    { name = "sdonly" },
]
lint = [
    { name = "linter" },
]

[package.metadata]
requires-dist = [
    { name = "alpha" },
    { name = "optpkg", marker = "extra == 'opt'" },
]
provides-extras = ["opt"]

[package.metadata.requires-dev]
dev = [
    { name = "devtool" },
    { name = "sdonly" },
]
lint = [{ name = "linter" }]
""",
    ]
    return 'version = 1\nrevision = 3\nrequires-python = ">=3.8"\n\n' + "\n".join(packages)


@pytest.fixture
def index(tmp_path):
    served = LocalIndex(tmp_path / "index")
    try:
        yield served, _serve(served)
    finally:
        served.close()


@pytest.fixture
def locked(pinned, tw, index) -> tuple[Setup, dict[str, str]]:
    served, hashes = index
    setup = capture_workspace(
        pinned, tw, {"pyproject.toml": PYPROJECT, "uv.lock": _lock(served, hashes)}
    )
    setup.isolation("bwrap")  # (rewrites [capture]: first)
    served.use_in(setup.ws)
    return setup, hashes


def _env(setup: Setup, name: str) -> dict:
    built = setup.tw("capture", "env", name, "--json")
    assert built.exit_code == 0, built.output
    return json.loads(built.output)


def _by_name(provenance: dict) -> dict[str, dict]:
    return {d["name"]: d for d in provenance["distributions"]}


@slow
def test_the_lock_installs_as_uv_sync_frozen_does_its_default_groups_and_an_sdist(locked):
    setup, hashes = locked
    setup.write("cap", HARNESS, requirements=None, lock="uv")
    out = _env(setup, "cap")
    assert out["packages"] == ["alpha==1.0", "devtool==1.0", "sdonly==0.1.4"]
    lock = out["provenance"]["lock"]
    assert lock["groups"] == ["dev"] and lock["default_groups"] == ["dev"]
    assert lock["extras"] == [] and lock["no_default_groups"] is False
    dists = _by_name(out["provenance"])
    # the wheel uv chose among the lock's two, told by the installed WHEEL file's tags
    assert dists["alpha"]["file"] == "alpha-1.0-py3-none-any.whl"
    assert dists["alpha"]["sha256"] == hashes["alpha"]
    assert dists["alpha"]["hashes"] == sorted([hashes["alpha"], FOREIGN_SHA])
    assert dists["alpha"]["built_from_source"] is False
    # the dev group's sdist-only package: built in the build's isolation, from the sdist
    assert dists["sdonly"]["built_from_source"] is True
    assert dists["sdonly"]["file"] == "sdonly-0.1.4.tar.gz"
    assert dists["sdonly"]["sha256"] == hashes["sdonly"]
    assert {d["installed_by"] for d in dists.values()} == {"lock"}
    result = setup.tw("capture", "cap", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["counts"]["PASS"] == 1


@slow
def test_the_manifest_carries_the_environment_s_provenance(locked):
    setup, hashes = locked
    setup.write("cap", HARNESS, requirements=None, lock="uv")
    assert setup.capture("cap").exit_code == 0
    folder = setup.folder("cap")
    manifest = json.loads((folder / "manifest.json").read_text())
    env = manifest["environment"]
    made = env["provenance"]
    assert made["uv"] == version("uv")
    python = made["python"]
    assert python["version"] == env["python"]
    assert not python["path"].startswith(str(Path.home()) + "/")  # never the user's home
    real = Path(os.path.realpath(os.path.expanduser(python["path"])))
    assert python["sha256"] == hashlib.sha256(real.read_bytes()).hexdigest()
    if python["library"] is not None:  # a shared build: its libpython holds the code
        library = Path(os.path.realpath(os.path.expanduser(python["library"])))
        assert python["library_sha256"] == hashlib.sha256(library.read_bytes()).hexdigest()
        assert library.name.startswith("libpython") and library.name.encode() in real.read_bytes()
    subject = setup.repo.path
    assert made["lock"]["sha256"] == hashlib.sha256((subject / "uv.lock").read_bytes()).hexdigest()
    assert (
        made["lock"]["project_sha256"]
        == hashlib.sha256((subject / "pyproject.toml").read_bytes()).hexdigest()
    )
    assert "uv sync --frozen" in made["lock"]["command"]
    assert made["extra_lock"] is None
    # the hashed freeze: readable, a requirements file uv takes with --require-hashes
    freeze = (folder / "environment.txt").read_text()
    assert freeze.splitlines() == [
        f"# python {env['python']}",
        f"alpha==1.0 --hash=sha256:{hashes['alpha']}",
        f"devtool==1.0 --hash=sha256:{hashes['devtool']}",
        f"sdonly==0.1.4 --hash=sha256:{hashes['sdonly']}",
    ]
    assert env["sha256"] == hashlib.sha256(freeze.encode()).hexdigest()
    assert [d["name"] for d in made["distributions"]] == ["alpha", "devtool", "sdonly"]


@slow
def test_groups_and_extras_are_declared_keyed_and_recorded(locked):
    setup, _hashes = locked
    setup.write("plain", HARNESS, requirements=None, lock="uv")
    setup.write(
        "chosen",
        HARNESS,
        requirements=None,
        lock="uv",
        groups=["lint"],
        extras=["opt"],
        no_default_groups=True,
    )
    setup.write("every", HARNESS, requirements=None, lock="uv", all_groups=True)
    plain, chosen, every = (_env(setup, n) for n in ("plain", "chosen", "every"))
    assert len({plain["key"], chosen["key"], every["key"]}) == 3
    assert chosen["packages"] == ["alpha==1.0", "linter==1.0", "optpkg==1.0"]
    lock = chosen["provenance"]["lock"]
    assert lock["groups"] == ["lint"] and lock["extras"] == ["opt"]
    assert lock["no_default_groups"] is True and lock["default_groups"] == ["dev"]
    assert "--no-default-groups --group lint --extra opt" in lock["command"]
    assert every["packages"] == ["alpha==1.0", "devtool==1.0", "linter==1.0", "sdonly==0.1.4"]
    assert every["provenance"]["lock"]["groups"] == ["dev", "lint"]
    shown = setup.tw("capture", "env", "chosen")
    assert "groups: lint; extras: opt; the default groups left out" in shown.output


@slow
def test_a_group_or_extra_the_project_lacks_is_refused_with_those_it_has(locked):
    setup, _hashes = locked
    setup.write(
        "cap", HARNESS, requirements=None, lock="uv", groups=["tests", "lint"], extras=["nope"]
    )
    result = setup.tw("capture", "env", "cap")
    assert result.exit_code == 2
    message = one_error(result)
    assert "no dependency group tests (its groups: dev, lint)" in message
    assert "no extra nope (its extras: opt)" in message


@slow
def test_extra_without_hashes_is_resolved_into_a_committed_lock(locked):
    setup, hashes = locked
    setup.write("cap", EXTRA_HARNESS, requirements=None, lock="uv", extra=["fakellm==1.0"])
    written = setup.ws.root / "captures" / "cap.lock"
    early = setup.tw("capture", "cap")  # no network: it never resolves
    assert early.exit_code == 2
    assert "captures/cap.lock does not hold what extra asks (it does not exist yet)" in (
        one_error(early)
    )
    assert "run `tracework capture env cap`" in early.output
    out = _env(setup, "cap")
    assert out["extra_lock"] == "captures/cap.lock resolved now (it does not exist yet) and written"
    assert "fakellm==1.0" in out["packages"] and "helper==1.0" in out["packages"]
    lock = written.read_text()
    assert "# resolved-from: fakellm==1.0\n" in lock
    assert "# already-installed: alpha==1.0\n" in lock  # the lock's: needs nothing
    assert f"fakellm==1.0 \\\n    --hash=sha256:{hashes['fakellm']}\n" in lock
    assert f"helper==1.0 \\\n    --hash=sha256:{hashes['helper']}\n" in lock
    assert f"    # file: helper-1.0-py3-none-any.whl sha256:{hashes['helper']}\n" in lock
    assert "\nalpha==" not in lock
    # evidence: tracework init's .gitignore keeps it (it ignores only writers' .NAME.lock)
    subprocess.run(["git", "init", "-q"], cwd=setup.ws.root, check=True)
    ignored = subprocess.run(["git", "check-ignore", "-q", "captures/cap.lock"], cwd=setup.ws.root)
    assert ignored.returncode == 1
    result = setup.tw("capture", "cap", "--json")
    assert result.exit_code == 0, result.output
    folder = setup.folder("cap")
    assert (folder / "extra.lock").read_bytes() == written.read_bytes()
    manifest = json.loads((folder / "manifest.json").read_text())
    digest = hashlib.sha256(written.read_bytes()).hexdigest()
    assert {"path": "extra.lock", "sha256": digest, "size": len(lock)} in manifest["files"]
    made = manifest["environment"]["provenance"]
    assert made["extra_lock"] == {
        "path": "captures/cap.lock",
        "sha256": digest,
        "resolved_from": ["fakellm==1.0"],
    }
    fakellm = _by_name(made)["fakellm"]
    assert fakellm["installed_by"] == "extra" and fakellm["sha256"] == hashes["fakellm"]
    assert fakellm["file"] == "fakellm-1.0-py3-none-any.whl"
    # the same declaration again: the lock as written, nothing resolved or built
    again = _env(setup, "cap")
    assert again["built"] is False and again["extra_lock"] is None
    assert written.read_text() == lock
    # extra changed: capture refuses, capture env resolves again and says why
    setup.write(
        "cap", EXTRA_HARNESS, requirements=None, lock="uv", extra=["fakellm==1.0", "optpkg==1.0"]
    )
    refused = setup.tw("capture", "cap")
    assert refused.exit_code == 2
    assert "extra changed: now also optpkg==1.0" in one_error(refused)
    redone = _env(setup, "cap")
    assert redone["extra_lock"] == (
        "captures/cap.lock resolved now (extra changed: now also optpkg==1.0) and written"
    )
    assert "optpkg==1.0 \\\n" in written.read_text()
    assert setup.tw("capture", "cap").exit_code == 0


@slow
def test_later_builds_install_the_extra_lock_as_written(locked, index):
    setup, hashes = locked
    served, _ = index
    setup.write("cap", EXTRA_HARNESS, requirements=None, lock="uv", extra=["fakellm==1.0"])
    _env(setup, "cap")
    _wheel(served, "helper", "1.1")  # the registry moves on; the lock does not
    rebuilt = setup.tw("capture", "env", "cap", "--rebuild", "--json")
    assert rebuilt.exit_code == 0, rebuilt.output
    assert "helper==1.0" in json.loads(rebuilt.output)["packages"]
    assert json.loads(rebuilt.output)["extra_lock"] is None
    written = setup.ws.root / "captures" / "cap.lock"
    tampered = written.read_text().replace(hashes["helper"], "0" * 64)
    written.write_text(tampered)
    broken = setup.tw("capture", "env", "cap", "--rebuild")
    assert broken.exit_code == 2
    assert "uv pip install of the extra lock failed" in one_error(broken)
    assert f"sha256:{'0' * 64}" in broken.output  # uv's words: the hash expected, and computed


def test_extra_pins_are_all_hashed_or_none(pinned, tw):
    setup = capture_workspace(pinned, tw)
    pin = "tinypkg==1.0 --hash=sha256:" + "a" * 64
    setup.write("mixed", "", extra=[pin, "other==2.0"])
    result = setup.tw("capture", "env", "mixed")
    assert result.exit_code == 2
    assert "give every entry with its hashes, or none" in one_error(result)
    setup.write("bare", "", extra=["other"])
    result = setup.tw("capture", "env", "bare")
    assert result.exit_code == 2
    assert "give an exact version, 'name==1.2.3'" in one_error(result)
    setup.write("groups", "", groups=["dev"])
    result = setup.tw("capture", "env", "groups")
    assert result.exit_code == 2
    assert 'groups chooses what a lock installs: it needs lock = "uv"' in one_error(result)


# -- fast: the parts, without a sandbox -------------------------------------------------


def _files(project: str, root: str = "") -> LockFiles:
    lock = (
        'version = 1\nrevision = 3\n\n[[package]]\nname = "app"\nversion = "0.1.0"\n'
        f'source = {{ virtual = "." }}\n{root}'
    )
    return LockFiles(lock.encode(), ('[project]\nname = "app"\n' + project).encode())


def test_the_default_groups_are_uv_s():
    groups = '[dependency-groups]\ndev = ["a"]\nlint = ["b"]\ndocs = ["c"]\n'
    assert select(_files(groups), (), ()).groups == ("dev",)
    chosen = select(_files(groups + '[tool.uv]\ndefault-groups = ["lint", "docs"]\n'), (), ())
    assert chosen.groups == ("docs", "lint") and chosen.flags == ()
    every = select(_files(groups + '[tool.uv]\ndefault-groups = "all"\n'), (), ())
    assert every.default_groups == ("dev", "docs", "lint")
    assert select(_files('[dependency-groups]\nlint = ["b"]\n'), (), ()).groups == ()
    legacy = select(_files('[tool.uv]\ndev-dependencies = ["a"]\n'), ("Dev",), ())
    assert legacy.groups == ("dev",) and legacy.flags == ("--group", "dev")
    # an extra the lock records for the project counts, though the project file's are dynamic
    recorded = "\n[package.metadata]\nprovides-extras = ['Fast_Path']\n"
    assert select(_files("", recorded), (), ("fast.path",)).extras == ("fast-path",)
    with pytest.raises(CaptureConfigError) as refused:
        select(_files(groups), ("nope",), ("x",))
    assert refused.value.message == (
        "the subject's project at this commit has no dependency group nope (its groups: dev, "
        "docs, lint); and no extra x (its extras: none)"
    )


def test_a_wheel_is_told_apart_by_its_tags_and_build():
    assert wheel_tags("a-1.0-py2.py3-none-any.whl") == (
        frozenset({"py2-none-any", "py3-none-any"}),
        None,
    )
    tags, build = wheel_tags("a-1.0-2-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl")
    assert build == "2" and "cp311-cp311-manylinux2014_x86_64" in tags and len(tags) == 2
    assert wheel_tags("a-1.0.tar.gz") is None
    lock = {
        ("a", "1.0"): (
            LockedFile("a-1.0-py3-none-any.whl", "1" * 64, "wheel"),
            LockedFile("a-1.0-1-py3-none-any.whl", "2" * 64, "wheel"),
            LockedFile("a-1.0.tar.gz", "3" * 64, "sdist"),
        )
    }
    wheel = Installed("a", "1.0", frozenset({"py3-none-any"}), None, False)
    numbered = Installed("a", "1.0", frozenset({"py3-none-any"}), "1", False)
    built = Installed("a", "1.0", frozenset({"py3-none-any"}), None, True)
    for dist, digest in ((wheel, "1"), (numbered, "2"), (built, "3")):
        (found,) = distributions([dist], lock, {})
        assert found.sha256 == digest * 64 and found.installed_by == "lock"
        assert found.hashes == ("1" * 64, "2" * 64, "3" * 64)
    pins = {"b": Pin("2.0", ("4" * 64, "5" * 64), "extra"), "c": Pin("1.0", ("6" * 64,), "extra")}
    several, one, other = distributions(
        [
            Installed("b", "2.0", frozenset(), None, False),
            Installed("c", "1.0", frozenset(), None, False),
            Installed("d", "1.0", frozenset(), None, False),
        ],
        lock,
        pins,
    )
    assert several.sha256 is None and several.hashes == ("4" * 64, "5" * 64)
    assert one.sha256 == "6" * 64 and one.installed_by == "extra"
    assert other.installed_by is None and other.hashes == ()


def test_an_extra_lock_reads_back_as_written_and_says_when_it_is_stale():
    from tracework.capture.config import CaptureConfig

    def config(*extra: str) -> CaptureConfig:
        return CaptureConfig.model_validate(
            {
                "subject": "toy",
                "commit": "a" * 40,
                "register": "demo",
                "python": "3.11",
                "lock": "uv",
                "extra": list(extra),
            }
        )

    made = render(
        "cap",
        ("fakellm==1.0",),
        "3.11.7",
        "the environment of subject toy's uv.lock",
        "0.13.9",
        (("alpha", "1.0"),),
        (
            LockedPin("fakellm", "1.0", ("1" * 64,)),
            LockedPin(
                "helper",
                "1.0",
                ("2" * 64, "3" * 64),
                (
                    LockedFile("helper-1.0-py3-none-any.whl", "2" * 64, "wheel"),
                    LockedFile("helper-1.0.tar.gz", "3" * 64, "sdist"),
                ),
            ),
        ),
    )
    read = read_extra_lock(made.data, "cap")
    assert read == made
    assert stale(read, config("FakeLLM==1.0"), "3.11.7") is None
    assert stale(None, config("fakellm==1.0"), "3.11.7") == "it does not exist yet"
    assert stale(read, config("fakellm==1.1"), "3.11.7") == (
        "extra changed: now also fakellm==1.1; no longer fakellm==1.0"
    )
    assert "resolved for Python 3.11.7" in (stale(read, config("fakellm==1.0"), "3.11.9") or "")
    assert conflict(read, {"alpha": "1.0"}) is None
    assert conflict(read, {"alpha": "2.0"}) == (
        "alpha is 2.0 in the environment, the lock relies on 1.0"
    )
    assert conflict(read, {"alpha": "1.0", "helper": "0.9"}) == (
        "helper is 0.9 in the environment, the lock adds 1.0"
    )
    held, added = split(read.packages, {"helper": "1.0"})
    assert held == (("helper", "1.0"),) and [p.name for p in added] == ["fakellm"]
    for broken, said in (
        (made.text.replace("# tracework extra lock, format 1\n", ""), "not written by"),
        (made.text + "import os\n", "line"),
        (made.text.replace("--hash=sha256:" + "1" * 64, "--hash=md5:00"), "line"),
    ):
        with pytest.raises(CaptureConfigError, match=said):
            read_extra_lock(broken.encode(), "cap")


def test_the_installed_distributions_are_read_from_their_dist_info(tmp_path):
    site = tmp_path / "lib" / "python3.11" / "site-packages"
    for name, wheel, built in (
        # maturin writes a compressed tag set into WHEEL, as a file name does
        ("jiter", "Tag: cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64\nBuild: 7\n", False),
        ("forbiddenfruit", "Tag: py3-none-any\n", True),
    ):
        info = site / f"{name}-1.0.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
        (info / "WHEEL").write_text(f"Wheel-Version: 1.0\n{wheel}")
        if built:
            (info / "uv_build.json").write_text("{}")
    (site / "linked-1.0.dist-info").symlink_to(site / "jiter-1.0.dist-info")  # never followed
    fruit, jiter = installed(tmp_path)
    assert fruit == Installed("forbiddenfruit", "1.0", frozenset({"py3-none-any"}), None, True)
    assert jiter.tags == {
        "cp311-cp311-manylinux_2_17_x86_64",
        "cp311-cp311-manylinux2014_x86_64",
    }
    assert jiter.build == "7" and not jiter.built
    (site / "odd-1.0.dist-info").mkdir()
    (site / "odd-1.0.dist-info" / "METADATA").write_text("Name: odd\x1b[31m\nVersion: 1.0\n")
    with pytest.raises(EnvironmentRefused, match="names a distribution as no installer"):
        installed(tmp_path)


def _counting_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files the provenance module opens from now on, by path."""
    import builtins

    from tracework.capture import provenance

    opened: list[str] = []

    def counted(file, *args, **kwargs):
        opened.append(os.fspath(file))
        return builtins.open(file, *args, **kwargs)

    monkeypatch.setattr(provenance, "open", counted, raising=False)
    return opened


def _as_a_new_process() -> None:
    from tracework.capture import provenance

    provenance._file_sha256.cache_clear()
    provenance._library_named.cache_clear()


def test_an_interpreter_is_read_once_while_its_whole_stat_is_unchanged(tmp_path, monkeypatch):
    """Every capture names its interpreter's SHA-256 and its libpython's: kept in the
    cache with the file's device, inode, size, mtime and ctime, and read again once any
    of them changes (here a rewrite to the same size with the old mtime put back), or
    when the record is not one tracework wrote."""
    from tracework.capture.provenance import interpreter_library, interpreter_sha256

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    prefix = tmp_path.resolve() / "python"  # as the interpreter's real path names it
    (prefix / "bin").mkdir(parents=True)
    (prefix / "lib").mkdir()
    exe = prefix / "bin" / "python3.11"
    exe.write_bytes(b"\x7fELF libpython3.11.so.1.0 one")
    library = prefix / "lib" / "libpython3.11.so.1.0"
    library.write_bytes(b"the interpreter's code")
    exe_sha = hashlib.sha256(exe.read_bytes()).hexdigest()
    library_sha = hashlib.sha256(library.read_bytes()).hexdigest()
    opened = _counting_reads(monkeypatch)

    def ask() -> tuple[str, tuple[str, str] | None]:
        return interpreter_sha256(str(exe)), interpreter_library(str(exe), str(prefix))

    assert ask() == (exe_sha, (str(library), library_sha))
    assert sorted(opened) == sorted([str(exe), str(exe), str(library)])
    _as_a_new_process()
    assert ask() == (exe_sha, (str(library), library_sha))
    assert len(opened) == 3  # nothing read again: the records held
    records = sorted((tmp_path / "cache" / "tracework" / "captures" / "files").iterdir())
    values = sorted(json.loads(r.read_text())["value"] for r in records)
    assert values == sorted([exe_sha, library_sha, "libpython3.11.so.1.0"])

    before = os.stat(exe)
    while os.stat(exe).st_ctime_ns == before.st_ctime_ns:  # until the kernel's clock moves
        exe.write_bytes(b"\x7fELF libpython3.11.so.1.0 two")  # the same size
        os.utime(exe, ns=(before.st_atime_ns, before.st_mtime_ns))  # the same mtime
    after = os.stat(exe)
    same = ("st_dev", "st_ino", "st_size", "st_mtime_ns")
    assert [getattr(after, k) for k in same] == [getattr(before, k) for k in same]
    _as_a_new_process()
    del opened[:]
    assert ask() == (hashlib.sha256(exe.read_bytes()).hexdigest(), (str(library), library_sha))
    assert sorted(opened) == [str(exe), str(exe)]  # the library is unchanged: not read

    for junk in ("not json", "[]", '{"kind": "sha256"}', "{}"):
        for record in records:
            if json.loads(record.read_text()).get("path") == str(library):
                record.write_text(junk)
        _as_a_new_process()
        del opened[:]
        assert ask()[1] == (str(library), library_sha)
        assert opened == [str(library)]
    for record in records:  # a record naming the file with a value not a SHA-256
        kept = json.loads(record.read_text())
        if kept.get("path") == str(library):
            record.write_text(json.dumps(kept | {"value": "0" * 63}))
    _as_a_new_process()
    del opened[:]
    assert ask()[1] == (str(library), library_sha) and opened == [str(library)]
