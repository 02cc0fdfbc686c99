"""``tracework capture``: bad declarations are one message and exit 2; the register's
files must hash as registered before anything runs; the case table and ``--json``."""

from __future__ import annotations

import json

import pytest

from capture_setup import PLAIN_HARNESS, STORE, capture_workspace, one_error, snapshot
from tracework.capture.store import load_capture


@pytest.fixture
def setup(pinned, tw):
    return capture_workspace(pinned, tw)


@pytest.mark.parametrize(
    ("keys", "toml", "words"),
    [
        ({"timout": 5}, "", "timout: unknown key"),
        ({"lock": "uv"}, "", 'give exactly one of lock = "uv"'),
        ({"requirements": ["iniconfig==2.0.0"]}, "", "pin exactly, with a hash"),
        ({"requirements": ["iniconfig>=2 --hash=sha256:" + "0" * 64]}, "", "pin exactly"),
        ({"commit": "HEAD"}, "", "commit: give the full 40-hex commit id"),
        ({"python": "latest"}, "", "python: give a version such as '3.11'"),
        ({"paths": ["../outside"]}, "", "must be a folder inside the tree"),
        ({"timeout": 0}, "", "timeout: Input should be greater than or equal to 1"),
        ({}, "[limits]\nmemory_mib = 1\n", "limits.memory_mib"),
        ({"register": None}, "", "register: Field required"),
        ({"subject": "../toy"}, "", "'../toy' is not a valid subject name"),
        ({}, "this is = = not toml", "not valid TOML"),
    ],
)
def test_a_bad_declaration_is_one_message(setup, keys, toml, words):
    setup.write("cap", PLAIN_HARNESS, toml=toml, **keys)
    result = setup.tw("capture", "cap")
    assert result.exit_code == 2
    message = one_error(result)
    assert "captures/cap.toml" in message and words in message, message


def test_missing_files_and_reserved_names(setup):
    result = setup.tw("capture", "nothing")
    assert result.exit_code == 2
    assert "no capture nothing: captures/nothing.toml does not exist" in one_error(result)
    setup.write("cap", PLAIN_HARNESS)
    (setup.ws.root / "captures" / "cap.py").unlink()
    result = setup.tw("capture", "cap")
    assert "captures/cap.py does not exist" in one_error(result)
    result = setup.tw("capture", "run", "env")
    assert result.exit_code == 2
    assert "'env' cannot name a capture" in one_error(result)
    assert setup.tw("capture", "run", "../x").exit_code == 2


@pytest.mark.slow
def test_a_file_that_does_not_hash_as_registered_at_the_pin_stops_the_capture(setup):
    setup.write("cap", PLAIN_HARNESS)
    register = setup.ws.register_file("demo")
    text = register.read_text()
    digest = text.split("toy/store.py: {sha256: ", 1)[1][:64]
    register.write_text(text.replace(digest, "ab" * 32))  # a register edited by hand
    assert setup.tw("capture", "env", "cap").exit_code == 0
    setup.tw("check", "demo")  # the register's compiled copy, made once for the edited YAML
    before = snapshot(setup.ws.root)
    result = setup.tw("capture", "cap")
    assert result.exit_code == 2
    message = one_error(result)
    assert "registers/demo.yaml: 1 registered file of toy differ at" in message
    assert "so the harness does not run: toy/store.py (SRC-1: registered abababababab" in message
    assert snapshot(setup.ws.root) == before  # nothing ran, nothing kept


@pytest.mark.slow
def test_at_a_newer_commit_the_capture_runs_and_records_what_differs(setup):
    """Observing the same cases again at a newer commit (rerender --capture): the code
    has moved on from the register's pin, which the manifest and the report say."""
    setup.write("cap", PLAIN_HARNESS)
    setup.repo.write("toy/store.py", STORE.replace("A toy store", "A toy store, documented"))
    second = setup.repo.commit("the store changes")
    assert setup.tw("fetch", "toy").exit_code == 0
    assert setup.tw("capture", "env", "cap", "--commit", second).exit_code == 0
    result = setup.tw("capture", "cap", "--commit", second[:10])
    assert result.exit_code == 0, result.output
    cap = load_capture(setup.ws, "cap", second)
    assert cap.manifest.changed_since_pin == ("toy/store.py",)


@pytest.mark.slow
def test_a_register_without_files_of_the_subject_is_refused(setup):
    setup.write("cap", PLAIN_HARNESS, register="empty")
    assert setup.tw("register", "new", "empty").exit_code == 0
    assert setup.tw("capture", "env", "cap").exit_code == 0
    result = setup.tw("capture", "cap")
    assert result.exit_code == 2
    assert "registers/empty.yaml registers no file of subject toy" in one_error(result)


@pytest.mark.slow
def test_the_case_table_shows_subject_text_safely(setup):
    setup.write(
        "cap",
        """
        from tracework_harness import capture

        with capture.case("T-01", "Does \\x1b[31mred\\x1b[0m text stay text?") as c:
            c.check("escapes are shown", holds=False, observed="\\u202egnp.exe")
        """,
    )
    result = setup.capture("cap")
    assert result.exit_code == 0, result.output
    assert "\x1b[31m" not in result.output and "\u202e" not in result.output
    assert "<U+001B>[31mred" in result.output and "<U+202E>gnp.exe" in result.output
    assert "1 scripted cases: 0 PASS, 1 FAIL, 0 UNKNOWN" in result.output
    assert f"written to captures/cap/{setup.commit[:12]}/" in result.output


@pytest.mark.slow
def test_json_output(setup):
    setup.write("cap", PLAIN_HARNESS)
    env = setup.tw("capture", "env", "cap", "--json")
    assert env.exit_code == 0
    built = json.loads(env.output)
    assert set(built) == {
        "ok",
        "capture",
        "commit",
        "built",
        "isolation",
        "key",
        "python",
        "python_path",
        "python_sha256",
        "packages",
        "environment_sha256",
        "extra_lock",
        "provenance",
    }
    result = setup.tw("capture", "run", "cap", "--json", "--repeat", "2")
    out = json.loads(result.output)
    assert out["ok"] and out["runs"] == 2 and out["commit"] == setup.commit
    assert out["cases"] == [
        {
            "id": "T-01",
            "arm": "scripted",
            "status": "PASS",
            "question": "What does the store keep?",
            "transcript": "transcripts/T-01.json",
        }
    ]
    manifest = json.loads((setup.folder("cap") / "manifest.json").read_text())
    assert out["files"] == {f["path"]: f["sha256"] for f in manifest["files"]}
    setup.write("cap", "raise SystemExit(4)\n")
    failed = setup.tw("capture", "cap", "--json")
    assert failed.exit_code == 1
    assert json.loads(failed.output)["error"] == "capture cap: the harness exited with status 4"
