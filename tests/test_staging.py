"""One staging helper for render, capture and publish (``tracework.staging``): a folder is
built beside its final place and swapped in, or kept as ``failed-<name>``, but only in
place of a failed folder its writer made.

The helper's rules run for each writer's own files; then the writers themselves: a
capture never follows, writes through or removes a ``failed-<commit12>`` that is a
symbolic link, a file or a folder holding an analyst's file (it used to delete the file,
and a link there put "Not a directory" in place of the harness's error), and a publish
removes only its own dead staging folders.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from capture_setup import PLAIN_HARNESS, capture_workspace, one_error, snapshot
from tracework import fsio
from tracework.capture.pipeline import CAPTURE_FILES
from tracework.render.pipeline import RENDER_FILES
from tracework.site import publish as publish_module
from tracework.staging import Kept, Staging

#: Each writer: the names it writes, and a file its failed folder holds.
WRITERS = {"render": (RENDER_FILES, "report.ipynb"), "capture": (CAPTURE_FILES, "log.txt")}
NAME = "0123456789ab"


@pytest.fixture(params=sorted(WRITERS))
def writer(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Staging, str]:
    """A writer's staging of ``out/0123456789ab``, and the file its failed runs leave."""
    writes, left = WRITERS[request.param]
    return Staging(tmp_path / "out", NAME, writes), left


def _fail(stage: Staging, left: str, text: str) -> Kept:
    """A run that wrote ``left`` and failed: its folder kept."""
    with stage.hold() as folder:
        (folder / left).write_text(text)
        return stage.keep_failed()


def _staged(stage: Staging) -> list[str]:
    return sorted(p.name for p in stage.parent.glob(".*.staging"))


def test_a_failed_run_is_kept_and_replaces_only_a_failed_folder_of_its_own(writer):
    stage, left = writer
    assert _fail(stage, left, "first") == Kept(stage.failed)
    assert (stage.failed / left).read_text() == "first"
    kept = _fail(stage, left, "second")
    assert kept.kept and (stage.failed / left).read_text() == "second"
    assert not stage.final.exists() and _staged(stage) == []


@pytest.mark.parametrize("in_the_way", ["symlink", "file", "folder"])
def test_what_is_not_ours_at_the_failed_folder_is_never_followed_written_or_removed(
    writer, tmp_path, in_the_way
):
    """Ported from the render's test, for each writer's files."""
    stage, left = writer
    stage.parent.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "mine.txt").write_text("mine")
    if in_the_way == "symlink":
        stage.failed.symlink_to(elsewhere)
    elif in_the_way == "file":
        stage.failed.write_text("mine")
    else:
        stage.failed.mkdir()
        (stage.failed / "mine.txt").write_text("mine")
        (stage.failed / left).write_text("an earlier failure's")  # ours beside it
    what = {
        "symlink": f"a symbolic link (to {elsewhere})",
        "file": "a file, not a folder",
        "folder": "a folder tracework did not write (it holds mine.txt)",
    }[in_the_way]
    before = snapshot(tmp_path)
    assert _fail(stage, left, "failed") == Kept(stage.failed, what)
    assert snapshot(tmp_path) == before  # nothing followed, written through, or staged
    # a good run after it: swapped in, and the failed folder left as it is
    with stage.hold() as folder:
        (folder / left).write_text("good")
        stage.swap()
        assert not stage.drop_failed()
    after = snapshot(tmp_path, leave_out=stage.final)
    assert after.pop(f"out/.{NAME}.lock") and after == before
    assert (stage.final / left).read_text() == "good"


def test_a_good_run_drops_its_own_failed_folder(writer):
    stage, left = writer
    _fail(stage, left, "failed")
    with stage.hold() as folder:
        (folder / left).write_text("good")
        stage.swap()
        assert stage.drop_failed()
    assert sorted(p.name for p in stage.parent.iterdir()) == [f".{NAME}.lock", NAME]


def test_a_capture_s_failed_folder_of_differing_runs_is_its_own():
    """What ``--repeat`` keeps when runs differ (run-1/, run-N/) is replaced next time."""
    stage = Staging(Path("unused"), NAME, CAPTURE_FILES)
    assert {"run-1", "run-10", "error.txt", "log.txt", "transcripts"} <= stage.writes
    assert "run-11" not in stage.writes


@pytest.mark.parametrize("writes", [RENDER_FILES, CAPTURE_FILES, frozenset()])
def test_a_swap_replaces_the_final_folder_whole_and_leaves_no_staging(tmp_path, writes):
    stage = Staging(tmp_path, "site", writes)
    (stage.final / "old").mkdir(parents=True)
    with stage.hold() as folder:
        (folder / "new.html").write_text("new")
        stage.swap()
    assert sorted(p.name for p in stage.final.iterdir()) == ["new.html"]
    assert _staged(stage) == [] and not (tmp_path / ".site.old").exists()


def test_a_block_that_fails_or_never_swaps_leaves_nothing(tmp_path):
    stage = Staging(tmp_path, NAME, RENDER_FILES)
    with pytest.raises(KeyError), stage.hold() as folder:
        (folder / "report.ipynb").write_text("half")
        raise KeyError
    with stage.hold():
        pass
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_swap_waits_for_the_final_s_lock_unless_the_writer_holds_it(tmp_path):
    """Render swaps under the lock it takes; capture and publish hold it throughout, and
    their swap must not wait for their own lock."""
    stage = Staging(tmp_path, NAME)
    with stage.locked(), stage.hold():
        stage.swap()  # would wait for itself (a second flock) if it took the lock again
    assert stage.final.is_dir()
    swapped = threading.Event()
    other = Staging(tmp_path, NAME)

    def swap() -> None:
        with other.hold():
            other.swap()
            swapped.set()

    with fsio.locked(stage.final):  # another writer's
        thread = threading.Thread(target=swap)
        thread.start()
        assert not swapped.wait(0.5)
    thread.join(10)
    assert swapped.is_set()


HOLD = """
import fcntl, os, sys, time

fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(600)
"""


def _held_elsewhere(folder: Path) -> subprocess.Popen[str]:
    """A process that holds ``folder``'s flock, as a live writer does."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(folder)], stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    return holder


def _aged(folder: Path) -> Path:
    an_hour_ago = time.time() - 3600
    os.utime(folder, (an_hour_ago, an_hour_ago))
    return folder


def test_a_sweep_by_name_removes_only_that_name_s_dead_staging_folders(tmp_path):
    dead = _aged(fsio.staging_dir(tmp_path, "site"))
    others = [
        _aged(fsio.staging_dir(tmp_path, "site.x")),  # another --out's
        _aged(fsio.staging_dir(tmp_path, "notes")),
    ]
    (tmp_path / ".site.staging").mkdir()  # not a name staging_dir gives
    others.append(_aged(tmp_path / ".site.staging"))
    live = _aged(fsio.staging_dir(tmp_path, "site"))
    holder = _held_elsewhere(live)
    try:
        assert Staging(tmp_path, "site").sweep(every_name=False) == [dead]
        assert live.is_dir() and all(p.is_dir() for p in others)
    finally:
        holder.kill()
        holder.wait()
    assert sorted(Staging(tmp_path, "site").sweep()) == sorted([*others, live])


# -- publish -----------------------------------------------------------------------------


def test_a_publish_removes_no_other_writer_s_live_staging_folder(tw, tmp_path):
    """Beside --out, only the site's own dead staging folders are removed: another
    --out's (``site.x``) in the same folder may be a publish at work."""
    parent = tmp_path / "elsewhere"
    parent.mkdir()
    dead = _aged(fsio.staging_dir(parent, "site"))
    live = _aged(fsio.staging_dir(parent, "site.x"))
    holder = _held_elsewhere(live)
    try:
        assert tw("publish", "--out", str(parent / "site")).exit_code == 0
        assert live.is_dir() and not dead.exists()
    finally:
        holder.kill()
        holder.wait()
    assert sorted(p.name for p in parent.iterdir()) == [".site.lock", live.name, "site"]


def test_a_publish_holds_its_staging_folder_while_it_builds(tw, workspace, monkeypatch):
    """The flock that tells a sweep a folder is in use, as a render's does."""
    real = publish_module.write_site
    seen = []

    def write_and_try(site, root):
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
        seen.append(root)
        return real(site, root)

    monkeypatch.setattr(publish_module, "write_site", write_and_try)
    assert tw("publish").exit_code == 0
    assert seen and not seen[0].exists()
    assert not list(workspace.reports.glob(".*.staging"))


# -- capture -----------------------------------------------------------------------------

FAILING = "from tracework_harness import capture\n\nraise RuntimeError('no')\n"
RAISED = "capture cap: the harness raised RuntimeError: no (captures/cap.py, line 3)"


@pytest.fixture
def setup(pinned, tw):
    return capture_workspace(pinned, tw)


def _error_and_hint(result) -> tuple[str, str]:
    assert result.exit_code == 1, result.output
    one_error(result)
    error, hint = result.stderr.splitlines()
    return error, hint


@pytest.mark.slow
@pytest.mark.parametrize("in_the_way", ["symlink", "file", "folder"])
def test_a_capture_never_writes_through_a_failed_folder_that_is_not_ours(
    setup, tmp_path, in_the_way
):
    """The harness's error stays the message and the hint says what is in the way; after
    a failing capture and a good one, the analyst's things are as they were."""
    failed = setup.failed("cap")
    failed.parent.mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "mine.txt").write_text("mine")
    if in_the_way == "symlink":
        failed.symlink_to(elsewhere)
    elif in_the_way == "file":
        failed.write_text("mine")
    else:
        failed.mkdir()
        (failed / "mine.txt").write_text("mine")
        (failed / "log.txt").write_text("an earlier failure's log")
    what = {
        "symlink": f"a symbolic link (to {elsewhere})",
        "file": "a file, not a folder",
        "folder": "a folder tracework did not write (it holds mine.txt)",
    }[in_the_way]
    shown = f"captures/cap/failed-{setup.commit[:12]}"

    def theirs() -> tuple[dict[str, str], str]:
        if in_the_way == "symlink":
            at_failed = f"link to {failed.readlink()}"
        elif in_the_way == "file":
            at_failed = failed.read_text()
        else:
            at_failed = repr(snapshot(failed))
        return snapshot(elsewhere), at_failed

    before = theirs()
    not_kept = (
        f"  hint: its log could not be kept: {shown} is {what}; move it away to keep the "
        "next failure's log; "
    )

    setup.write("cap", PLAIN_HARNESS)
    assert setup.capture("cap").exit_code == 0  # it used to remove the analyst's folder
    assert theirs() == before
    good = snapshot(setup.folder("cap"))

    setup.write("cap", FAILING)
    result = setup.capture("cap")
    assert theirs() == before
    assert _error_and_hint(result) == (  # it used to be "Not a directory"
        f"tracework: error: {RAISED}",
        not_kept + "the previous capture is untouched",
    )
    assert snapshot(setup.folder("cap")) == good
    assert not list(failed.parent.glob(".*.staging"))

    setup.write("cap", PLAIN_HARNESS)
    assert setup.capture("cap").exit_code == 0
    assert theirs() == before


@pytest.mark.slow
def test_a_failed_folder_a_capture_kept_is_replaced_by_the_next_failure(setup):
    """Runs that differ keep run-1/ and run-2/; a later failure replaces that folder,
    and a good capture removes it."""
    failed = setup.failed("cap")
    setup.write(
        "cap",
        "import random\nfrom tracework_harness import capture\n\n"
        "with capture.case('T-01', 'q?') as c:\n"
        "    c.record('token', random.random())\n"
        "    c.check('x', holds=True, observed='y')\n",
    )
    error, hint = _error_and_hint(setup.capture("cap", "--repeat", "2"))
    assert "run 2 differs from run 1" in error
    assert hint.endswith(
        f"; its log is in captures/cap/failed-{setup.commit[:12]}/; nothing written"
    )
    assert sorted(p.name for p in failed.iterdir()) == ["error.txt", "log.txt", "run-1", "run-2"]

    setup.write("cap", FAILING)
    assert _error_and_hint(setup.capture("cap")) == (
        f"tracework: error: {RAISED}",
        f"  hint: its log is in captures/cap/failed-{setup.commit[:12]}/; nothing written",
    )
    assert sorted(p.name for p in failed.iterdir()) == ["error.txt", "log.txt"]
    assert (failed / "error.txt").read_text() == RAISED + "\n"

    setup.write("cap", PLAIN_HARNESS)
    assert setup.capture("cap").exit_code == 0
    assert not os.path.lexists(failed)
