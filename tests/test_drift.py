"""Drift: ``tracework check --at COMMIT --json`` relocates every quote and file.

Each test pins ``kettle.py`` (and friends) at a first commit, quotes spans from it,
makes one more commit that moves, renames, edits or deletes code, and asserts the
exact JSON items the check reports.  ``map_range`` is tested on hand-written hunks.
"""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tracework.drift.relocate import Target, _elsewhere, map_range
from tracework.git.mirror import Changes, Mirror
from tracework.hashing import Lines

CONTRACT = (
    "kind",
    "id",
    "source",
    "path",
    "state",
    "lines",
    "new_lines",
    "new_path",
    "candidates",
)

KETTLE_LINES = [
    '"""Helpers for a small tea kettle."""\n',  # 1
    "\n",  # 2
    "STEEP_SECONDS = 240\n",  # 3
    "\n",  # 4
    "\n",  # 5
    "def boil(water):\n",  # 6
    "    water.heat(100)\n",  # 7
    "    return water\n",  # 8
    "\n",  # 9
    "\n",  # 10
    "class Kettle:\n",  # 11
    "    def pour(self, cup):\n",  # 12
    "        cup.fill(self.volume)\n",  # 13
    "        return cup\n",  # 14
    "\n",  # 15
    "    def whistle(self):\n",  # 16
    '        return "tweet"\n',  # 17
]
KETTLE = "".join(KETTLE_LINES)
WHISTLE = KETTLE_LINES[15] + KETTLE_LINES[16]
BOIL = "".join(KETTLE_LINES[5:8])


def text(lines: list[str]) -> str:
    return "".join(lines)


def item(
    kind,
    qid,
    state,
    *,
    path="kettle.py",
    lines=None,
    new_lines=None,
    new_path=None,
    candidates=None,
):
    """An expected item, restricted to the keys of the JSON contract."""
    return {
        "kind": kind,
        "id": qid,
        "source": "SRC-1",
        "path": path,
        "state": state,
        "lines": lines,
        "new_lines": new_lines,
        "new_path": new_path,
        "candidates": candidates,
    }


def contract(data: dict) -> dict[str, dict]:
    """Items by id, each cut down to the contract's keys (after checking the shape)."""
    # the contract's keys plus two extensions: each source (a git source's pin and checked
    # commit, a document's location and hash) and the document URLs left unchecked
    assert set(data) == {"ok", "register", "commit", "items", "sources", "assertions", "unchecked"}
    assert data["unchecked"] == []
    assert re.fullmatch(r"[0-9a-f]{40}", data["commit"])
    out = {}
    for entry in data["items"]:
        assert set(entry) == {
            *CONTRACT,
            *("diff", "detail", "format_only", "candidate_paths", "sha256", "sha256_at_commit"),
            "hint",  # the fix, when one command is it (a capture source's files)
        }
        assert entry["hint"] is None  # a git source's item: drift is the analyst's to judge
        # hashes in full, never cut: the registered one, and the one at the commit
        assert re.fullmatch(r"[0-9a-f]{64}", entry["sha256"])
        at_commit = entry["sha256_at_commit"]
        assert at_commit is None or re.fullmatch(r"[0-9a-f]{64}", at_commit)
        if entry["kind"] == "quote":
            assert (at_commit == entry["sha256"]) == (entry["state"] in ("verified", "moved"))
            assert (at_commit is None) == (entry["state"] in ("missing", "ambiguous"))
        assert not re.search(r"[0-9a-f]{12}…", entry["detail"])
        if entry["candidates"] is None:
            assert entry["candidate_paths"] is None
        else:  # the file of each candidate, in the same order
            assert len(entry["candidate_paths"]) == len(entry["candidates"])
        out[entry["id"]] = {k: entry[k] for k in CONTRACT}
    return out


@pytest.fixture
def kettle(pinned, tw):
    """kettle.py pinned as SRC-1 of ``demo``, with four quotes:

    Q-boil (symbol boil, 6-8), Q-steep (match, line 3), Q-pour (lines 12-14, no
    anchor) and Q-whistle (lines 16-17, no anchor).
    """
    repo = pinned({"kettle.py": KETTLE, "notes.txt": "brew slowly\n"})
    for args in (
        ("kettle.py", "--symbol", "boil", "--id", "Q-boil"),
        ("kettle.py", "--match", "STEEP_SECONDS =", "--id", "Q-steep"),
        ("kettle.py", "--lines", "12-14", "--id", "Q-pour"),
        ("kettle.py", "--lines", "16-17", "--id", "Q-whistle"),
    ):
        result = tw("quote", "demo", "SRC-1", *args)
        assert result.exit_code == 0, result.output
    return repo


def drift(tw, repo, commit: str) -> tuple[int, dict, dict[str, dict]]:
    assert tw("fetch", repo.path.name).exit_code == 0
    result = tw("check", "demo", "--at", commit, "--json")
    assert "Traceback" not in result.output
    data = json.loads(result.output)
    assert data["register"] == "demo"
    assert data["commit"] == commit
    assert data["ok"] is (result.exit_code == 0)
    return result.exit_code, data, contract(data)


def raw_items(data: dict) -> dict[str, dict]:
    return {entry["id"]: entry for entry in data["items"]}


# -- at the pin -----------------------------------------------------------------------


@pytest.mark.slow
def test_at_the_pin_everything_is_verified(kettle, tw):
    result = tw("check", "demo", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["ok"] is True and data["commit"] == kettle.commits[0]
    assert contract(data) == {
        "kettle.py": item("file", "kettle.py", "verified"),
        "Q-boil": item("quote", "Q-boil", "verified", lines=[6, 8]),
        "Q-steep": item("quote", "Q-steep", "verified", lines=[3, 3]),
        "Q-pour": item("quote", "Q-pour", "verified", lines=[12, 14]),
        "Q-whistle": item("quote", "Q-whistle", "verified", lines=[16, 17]),
    }
    # --at the pin itself is the same answer
    code, _, items = drift(tw, kettle, kettle.commits[0])
    assert code == 0
    assert {i["state"] for i in items.values()} == {"verified"}


@pytest.mark.slow
def test_an_unrelated_change_leaves_everything_verified(kettle, tw):
    head = kettle.write("notes.txt", "brew slowly, then wait\n").commit("notes")
    code, data, items = drift(tw, kettle, head)
    assert code == 0
    assert items["Q-pour"] == item("quote", "Q-pour", "verified", lines=[12, 14])
    assert items["kettle.py"] == item("file", "kettle.py", "verified")
    assert all(entry["diff"] is None for entry in data["items"])


# -- moved ---------------------------------------------------------------------------


@pytest.mark.slow
def test_lines_shifted_by_an_insertion_above_are_moved(kettle, tw):
    lines = [*KETTLE_LINES[:2], "import sys\n", "import time\n", *KETTLE_LINES[2:]]
    head = kettle.write("kettle.py", text(lines)).commit("imports")
    code, _, items = drift(tw, kettle, head)
    assert code == 1  # the file itself changed
    assert items == {
        "kettle.py": item("file", "kettle.py", "changed"),
        "Q-boil": item("quote", "Q-boil", "moved", lines=[6, 8], new_lines=[8, 10]),
        "Q-steep": item("quote", "Q-steep", "moved", lines=[3, 3], new_lines=[5, 5]),
        "Q-pour": item("quote", "Q-pour", "moved", lines=[12, 14], new_lines=[14, 16]),
        "Q-whistle": item("quote", "Q-whistle", "moved", lines=[16, 17], new_lines=[18, 19]),
    }


@pytest.mark.slow
def test_a_pure_rename_moves_everything_and_exits_0(kettle, tw):
    kettle.move("kettle.py", "brew/kettle.py")
    head = kettle.commit("rename")
    code, data, items = drift(tw, kettle, head)
    assert code == 0 and data["ok"] is True
    new = "brew/kettle.py"
    assert items == {
        "kettle.py": item("file", "kettle.py", "moved", new_path=new),
        "Q-boil": item("quote", "Q-boil", "moved", lines=[6, 8], new_lines=[6, 8], new_path=new),
        "Q-steep": item("quote", "Q-steep", "moved", lines=[3, 3], new_lines=[3, 3], new_path=new),
        "Q-pour": item(
            "quote", "Q-pour", "moved", lines=[12, 14], new_lines=[12, 14], new_path=new
        ),
        "Q-whistle": item(
            "quote", "Q-whistle", "moved", lines=[16, 17], new_lines=[16, 17], new_path=new
        ),
    }


@pytest.mark.slow
def test_renamed_file_with_a_small_edit_elsewhere(kettle, tw):
    kettle.move("kettle.py", "brew/kettle.py")
    lines = [*KETTLE_LINES]
    lines[16] = '        return "toot"\n'  # the whistle changes; the rest is only renamed
    head = kettle.write("brew/kettle.py", text(lines)).commit("rename and retune")
    code, data, items = drift(tw, kettle, head)
    assert code == 1
    new = "brew/kettle.py"
    assert items == {
        "kettle.py": item("file", "kettle.py", "changed", new_path=new),
        "Q-boil": item("quote", "Q-boil", "moved", lines=[6, 8], new_lines=[6, 8], new_path=new),
        "Q-steep": item("quote", "Q-steep", "moved", lines=[3, 3], new_lines=[3, 3], new_path=new),
        "Q-pour": item(
            "quote", "Q-pour", "moved", lines=[12, 14], new_lines=[12, 14], new_path=new
        ),
        # no anchor: git's line mapping across the rename carries it over
        "Q-whistle": item(
            "quote", "Q-whistle", "changed", lines=[16, 17], new_lines=[16, 17], new_path=new
        ),
    }
    whistle = raw_items(data)["Q-whistle"]
    assert '-        return "tweet"\n' in whistle["diff"]
    assert '+        return "toot"\n' in whistle["diff"]
    assert f"+++ brew/kettle.py:16-17 @ {head[:12]}" in whistle["diff"]


@pytest.mark.slow
def test_code_moved_into_another_file(kettle, tw):
    without_boil = [*KETTLE_LINES[:5], *KETTLE_LINES[10:]]  # lines 6-10 removed
    kettle.write("kettle.py", text(without_boil))
    kettle.write("stove.py", '"""The stove."""\n\n\n' + BOIL)
    head = kettle.commit("boil moves to the stove")
    code, data, items = drift(tw, kettle, head)
    assert code == 1
    assert items["Q-boil"] == item(
        "quote", "Q-boil", "moved", lines=[6, 8], new_lines=[4, 6], new_path="stove.py"
    )
    assert raw_items(data)["Q-boil"]["detail"] == "same bytes in another file"
    assert items["Q-pour"] == item("quote", "Q-pour", "moved", lines=[12, 14], new_lines=[7, 9])
    assert items["Q-steep"] == item("quote", "Q-steep", "verified", lines=[3, 3])


@pytest.mark.slow
def test_unanchored_quote_moved_into_another_file_while_the_old_file_is_deleted(kettle, tw):
    kettle.remove("kettle.py")
    kettle.write("horn.py", "class Horn:\n" + WHISTLE)
    head = kettle.commit("only the whistle survives")
    code, _, items = drift(tw, kettle, head)
    assert code == 1
    assert items["Q-whistle"] == item(
        "quote", "Q-whistle", "moved", lines=[16, 17], new_lines=[2, 3], new_path="horn.py"
    )
    assert items["Q-boil"] == item("quote", "Q-boil", "missing", lines=[6, 8])
    assert items["kettle.py"] == item("file", "kettle.py", "missing")


# -- changed -------------------------------------------------------------------------


@pytest.mark.slow
def test_changed_found_by_its_symbol_anchor_with_a_unified_diff(kettle, tw):
    lines = [*KETTLE_LINES[:6], "    water.heat(97)\n", "    water.stir()\n", *KETTLE_LINES[7:]]
    head = kettle.write("kettle.py", text(lines)).commit("gentler boil")
    code, data, items = drift(tw, kettle, head)
    assert code == 1
    assert items == {
        "kettle.py": item("file", "kettle.py", "changed"),
        "Q-boil": item("quote", "Q-boil", "changed", lines=[6, 8], new_lines=[6, 9]),
        "Q-steep": item("quote", "Q-steep", "verified", lines=[3, 3]),
        "Q-pour": item("quote", "Q-pour", "moved", lines=[12, 14], new_lines=[13, 15]),
        "Q-whistle": item("quote", "Q-whistle", "moved", lines=[16, 17], new_lines=[17, 18]),
    }
    boil = raw_items(data)["Q-boil"]
    assert boil["detail"] == "anchor"
    pin = kettle.commits[0]
    assert boil["diff"] == (
        f"--- kettle.py:6-8 @ {pin[:12]}\n"
        f"+++ kettle.py:6-9 @ {head[:12]}\n"
        "@@ -1,3 +1,4 @@\n"
        " def boil(water):\n"
        "-    water.heat(100)\n"
        "+    water.heat(97)\n"
        "+    water.stir()\n"
        "     return water\n"
    )


@pytest.mark.slow
def test_changed_found_by_its_match_anchor(kettle, tw):
    lines = [*KETTLE_LINES]
    lines[2] = "STEEP_SECONDS = 300  # a stronger cup\n"
    head = kettle.write("kettle.py", text(lines)).commit("stronger")
    code, data, items = drift(tw, kettle, head)
    assert code == 1
    assert items["Q-steep"] == item("quote", "Q-steep", "changed", lines=[3, 3], new_lines=[3, 3])
    steep = raw_items(data)["Q-steep"]
    assert steep["detail"] == "anchor"
    assert "-STEEP_SECONDS = 240\n" in steep["diff"]
    assert "+STEEP_SECONDS = 300  # a stronger cup\n" in steep["diff"]
    assert items["Q-boil"]["state"] == "verified"


@pytest.mark.slow
def test_match_anchor_follows_the_line_when_it_moves_and_changes(kettle, tw):
    lines = [
        *KETTLE_LINES[:2],
        "# tuned by taste\n",
        "STEEP_SECONDS = 180\n",
        *KETTLE_LINES[3:],
    ]
    head = kettle.write("kettle.py", text(lines)).commit("retune")
    _, _, items = drift(tw, kettle, head)
    assert items["Q-steep"] == item("quote", "Q-steep", "changed", lines=[3, 3], new_lines=[4, 4])


@pytest.mark.slow
def test_changed_through_git_diff_line_mapping_for_an_unanchored_quote(kettle, tw):
    lines = [*KETTLE_LINES]
    lines[12] = "        cup.fill(self.volume // 2)\n"
    lines.insert(1, "# a second comment line\n")
    head = kettle.write("kettle.py", text(lines)).commit("half cups")
    code, data, items = drift(tw, kettle, head)
    assert code == 1
    assert items["Q-pour"] == item("quote", "Q-pour", "changed", lines=[12, 14], new_lines=[13, 15])
    pour = raw_items(data)["Q-pour"]
    assert pour["detail"] == "diff mapping"
    assert "-        cup.fill(self.volume)\n" in pour["diff"]
    assert "+        cup.fill(self.volume // 2)\n" in pour["diff"]
    assert "     def pour(self, cup):\n" in pour["diff"]  # unchanged line as context
    assert items["Q-whistle"] == item(
        "quote", "Q-whistle", "moved", lines=[16, 17], new_lines=[17, 18]
    )


@pytest.mark.slow
def test_diff_mapping_shrinks_a_partly_deleted_range(kettle, tw):
    lines = [*KETTLE_LINES[:12], *KETTLE_LINES[14:]]  # lines 13-14 of pour deleted
    head = kettle.write("kettle.py", text(lines)).commit("pour does nothing")
    _, _, items = drift(tw, kettle, head)
    assert items["Q-pour"] == item("quote", "Q-pour", "changed", lines=[12, 14], new_lines=[12, 12])


# -- ambiguous -----------------------------------------------------------------------


@pytest.mark.slow
def test_ambiguous_when_the_bytes_are_duplicated_in_the_same_file(kettle, tw):
    lines = [
        *KETTLE_LINES[:14],  # up to the end of pour
        "\n",
        "\n",
        "class Teapot:\n",  # 17
        *WHISTLE.splitlines(keepends=True),  # 18-19
        "\n",
        "\n",
        "class Samovar:\n",  # 22
        *WHISTLE.splitlines(keepends=True),  # 23-24
    ]
    head = kettle.write("kettle.py", text(lines)).commit("two whistles")
    code, data, items = drift(tw, kettle, head)
    assert code == 1
    assert items["Q-whistle"] == item(
        "quote", "Q-whistle", "ambiguous", lines=[16, 17], candidates=[[18, 19], [23, 24]]
    )
    assert raw_items(data)["Q-whistle"]["detail"] == "same bytes at several places"
    assert raw_items(data)["Q-whistle"]["candidate_paths"] == ["kettle.py", "kettle.py"]
    assert items["Q-pour"]["state"] == "verified"


@pytest.mark.slow
def test_ambiguous_when_the_bytes_are_duplicated_in_another_file(kettle, tw):
    kettle.write("kettle.py", text(KETTLE_LINES[:14]))
    kettle.write("chimes.py", "class High:\n" + WHISTLE + "\n\nclass Low:\n" + WHISTLE)
    head = kettle.commit("whistles become chimes")
    code, _, items = drift(tw, kettle, head)
    assert code == 1
    assert items["Q-whistle"] == item(
        "quote",
        "Q-whistle",
        "ambiguous",
        lines=[16, 17],
        new_path="chimes.py",
        candidates=[[2, 3], [7, 8]],
    )


@pytest.mark.slow
def test_ambiguous_when_the_bytes_land_in_two_other_files(kettle, tw):
    kettle.write("kettle.py", text(KETTLE_LINES[:14]))
    kettle.write("horn.py", "class Horn:\n" + WHISTLE)
    kettle.write("siren.py", '"""Loud."""\n\n\nclass Siren:\n' + WHISTLE)
    head = kettle.commit("whistle copied twice")
    code, data, items = drift(tw, kettle, head)
    assert code == 1  # never "moved" to whichever file sorts first
    assert items["Q-whistle"] == item(  # every place listed, each with its file
        "quote", "Q-whistle", "ambiguous", lines=[16, 17], candidates=[[2, 3], [5, 6]]
    )
    assert raw_items(data)["Q-whistle"]["candidate_paths"] == ["horn.py", "siren.py"]
    detail = raw_items(data)["Q-whistle"]["detail"]
    assert "horn.py:2-3" in detail and "siren.py:5-6" in detail
    human = tw("check", "demo", "--at", head)
    assert "horn.py:2-3;" in human.output  # "where now" lists both places, ";"-separated


# -- missing -------------------------------------------------------------------------


@pytest.mark.slow
def test_missing_when_the_file_is_deleted(kettle, tw):
    kettle.remove("kettle.py")
    head = kettle.commit("no more kettle")
    code, data, items = drift(tw, kettle, head)
    assert code == 1 and data["ok"] is False
    assert items == {
        "kettle.py": item("file", "kettle.py", "missing"),
        "Q-boil": item("quote", "Q-boil", "missing", lines=[6, 8]),
        "Q-steep": item("quote", "Q-steep", "missing", lines=[3, 3]),
        "Q-pour": item("quote", "Q-pour", "missing", lines=[12, 14]),
        "Q-whistle": item("quote", "Q-whistle", "missing", lines=[16, 17]),
    }
    assert raw_items(data)["Q-boil"]["detail"] == "file deleted"


@pytest.mark.slow
def test_missing_when_the_symbol_anchor_is_gone(kettle, tw):
    lines = [*KETTLE_LINES[:5], *KETTLE_LINES[10:]]
    head = kettle.write("kettle.py", text(lines)).commit("no boiling")
    code, data, items = drift(tw, kettle, head)
    assert code == 1
    assert items["Q-boil"] == item("quote", "Q-boil", "missing", lines=[6, 8])
    assert raw_items(data)["Q-boil"]["detail"] == "anchor gone"
    assert items["Q-pour"] == item("quote", "Q-pour", "moved", lines=[12, 14], new_lines=[7, 9])


@pytest.mark.slow
def test_missing_when_the_match_anchor_is_gone(kettle, tw):
    lines = [*KETTLE_LINES]
    lines[2] = "BREW_TIME = 240\n"
    head = kettle.write("kettle.py", text(lines)).commit("renamed constant")
    _, data, items = drift(tw, kettle, head)
    assert items["Q-steep"] == item("quote", "Q-steep", "missing", lines=[3, 3])
    assert raw_items(data)["Q-steep"]["detail"] == "anchor gone"


@pytest.mark.slow
def test_missing_when_the_lines_are_deleted(kettle, tw):
    lines = [*KETTLE_LINES[:11], *KETTLE_LINES[15:]]  # pour (12-14) and its blank line
    head = kettle.write("kettle.py", text(lines)).commit("no pouring")
    code, data, items = drift(tw, kettle, head)
    assert code == 1
    assert items["Q-pour"] == item("quote", "Q-pour", "missing", lines=[12, 14])
    assert raw_items(data)["Q-pour"]["detail"] == "lines deleted"
    assert items["Q-whistle"] == item(
        "quote", "Q-whistle", "moved", lines=[16, 17], new_lines=[12, 13]
    )


@pytest.mark.slow
def test_missing_when_the_file_becomes_binary(kettle, tw):
    head = kettle.write("kettle.py", b"\x00\x01 not text any more\n").commit("binary")
    _, data, items = drift(tw, kettle, head)
    assert items["Q-pour"] == item("quote", "Q-pour", "missing", lines=[12, 14])
    assert raw_items(data)["Q-pour"]["detail"] == "file no longer readable as text"
    assert items["kettle.py"]["state"] == "changed"


# -- files ----------------------------------------------------------------------------


def test_file_states_verified_changed_missing_moved(pinned, tw):
    repo = pinned(
        {
            "same.txt": "unchanged\n",
            "edited.txt": "before\n",
            "gone.txt": "soon deleted\n",
            "old/name.txt": "renamed as is\n",
        }
    )
    result = tw("register", "add-file", "demo", "SRC-1", "*.txt", "old")
    assert result.exit_code == 0, result.output
    repo.write("edited.txt", "after\n").remove("gone.txt").move("old/name.txt", "new/name.txt")
    head = repo.commit("mixed")
    code, _, items = drift(tw, repo, head)
    assert code == 1
    assert items == {
        "edited.txt": item("file", "edited.txt", "changed", path="edited.txt"),
        "gone.txt": item("file", "gone.txt", "missing", path="gone.txt"),
        "old/name.txt": item(
            "file", "old/name.txt", "moved", path="old/name.txt", new_path="new/name.txt"
        ),
        "same.txt": item("file", "same.txt", "verified", path="same.txt"),
    }


@pytest.mark.slow
def test_only_verified_and_moved_files_exit_0_with_at(pinned, tw):
    repo = pinned({"same.txt": "unchanged\n", "old/name.txt": "renamed as is\n"})
    assert tw("register", "add-file", "demo", "SRC-1", "same.txt", "old/name.txt").exit_code == 0
    repo.move("old/name.txt", "new/name.txt")
    head = repo.commit("rename")
    code, data, items = drift(tw, repo, head)
    assert code == 0 and data["ok"] is True
    assert items["old/name.txt"]["state"] == "moved"
    # the same report at the pin is plain verified
    assert tw("check", "demo").exit_code == 0


def test_an_expected_sha256_that_differs_is_a_finding_not_a_changed_file(pinned, tw):
    pinned({"dossier.txt": "as delivered\n", "other.txt": "x\n"})
    wrong = "0" * 64
    result = tw("register", "add-file", "demo", "SRC-1", "dossier.txt", "--expect-sha256", wrong)
    assert result.exit_code == 0, result.output
    check = tw("check", "demo", "--json")
    assert check.exit_code == 0
    data = json.loads(check.output)
    assert raw_items(data)["dossier.txt"]["state"] == "verified"
    assert [(a["path"], a["state"], a["sha256"]) for a in data["assertions"]] == [
        ("dossier.txt", "differs", wrong)
    ]


# -- bad input -----------------------------------------------------------------------


@pytest.mark.slow
def test_unknown_register_and_unknown_commit_exit_2(kettle, tw):
    unknown = tw("check", "nosuch", "--json")
    assert unknown.exit_code == 2 and "no register at" in unknown.output
    absent = "0123456789abcdef0123456789abcdef01234567"
    result = tw("check", "demo", "--at", absent, "--json")
    assert result.exit_code == 2 and f"no commit {absent}" in result.output
    for bad in ("HEAD~1", "main", ":/kettle", "-x"):
        result = tw("check", "demo", f"--at={bad}")
        assert result.exit_code == 2, (bad, result.output)
        assert "is not a commit id" in result.output
    for result in (unknown,):
        assert "Traceback" not in result.output


def test_unknown_source_for_check(kettle, tw):
    result = tw("check", "demo", "--source", "SRC-9")
    assert result.exit_code == 2
    assert "no git source SRC-9" in result.output


# -- map_range on hand-written hunks ----------------------------------------------------
# A hunk is git diff -U0's (old_start, old_len, new_start, new_len).  For a pure
# insertion old_start is the line after which lines were inserted (0: at the top);
# for a pure deletion new_start is the new line before the gap.


@pytest.mark.parametrize(
    ("first", "last", "hunks", "expected"),
    [
        # no change at all
        (5, 8, [], (5, 8)),
        # insertions
        (5, 8, [(0, 0, 1, 3)], (8, 11)),  # 3 lines at the very top
        (5, 8, [(2, 0, 3, 2)], (7, 10)),  # 2 lines after line 2
        (5, 8, [(4, 0, 5, 2)], (7, 10)),  # right before the range
        (5, 8, [(5, 0, 6, 2)], (5, 10)),  # inside: after the first line
        (5, 8, [(7, 0, 8, 1)], (5, 9)),  # inside: before the last line
        (5, 8, [(8, 0, 9, 4)], (5, 8)),  # right after the range
        (5, 8, [(20, 0, 21, 4)], (5, 8)),  # far below
        # deletions
        (5, 8, [(1, 2, 0, 0)], (3, 6)),  # lines 1-2 deleted
        (5, 8, [(3, 2, 2, 0)], (3, 6)),  # lines 3-4, just above
        (5, 8, [(6, 2, 5, 0)], (5, 6)),  # lines 6-7, inside
        (5, 8, [(4, 2, 3, 0)], (4, 6)),  # lines 4-5: the first line goes
        (5, 8, [(8, 3, 7, 0)], (5, 7)),  # lines 8-10: the last line goes
        (5, 8, [(9, 3, 8, 0)], (5, 8)),  # just below
        # replacements
        (5, 8, [(2, 1, 2, 3)], (7, 10)),  # above, grows by 2
        (5, 8, [(2, 3, 2, 1)], (3, 6)),  # above, shrinks by 2
        (5, 8, [(6, 2, 6, 5)], (5, 11)),  # inside, grows by 3
        (5, 8, [(6, 2, 6, 1)], (5, 7)),  # inside, shrinks by 1
        (5, 8, [(4, 2, 4, 4)], (4, 10)),  # overlapping the start
        (5, 8, [(8, 2, 8, 1)], (5, 8)),  # overlapping the end
        (5, 8, [(9, 4, 9, 1)], (5, 8)),  # below
        # several hunks, in git's order
        (5, 8, [(1, 0, 2, 2), (6, 1, 8, 3), (12, 2, 15, 0)], (7, 12)),
        (10, 12, [(2, 2, 1, 0), (5, 0, 4, 5), (11, 1, 14, 2)], (13, 16)),
    ],
)
def test_map_range(first, last, hunks, expected):
    assert map_range(first, last, hunks) == expected


@pytest.mark.parametrize(
    ("first", "last", "hunks"),
    [
        (5, 8, [(5, 4, 4, 0)]),  # exactly the range deleted
        (5, 8, [(3, 9, 2, 0)]),  # a larger block around it deleted
        (1, 1, [(1, 1, 0, 0)]),  # the first line of the file
        (5, 8, [(1, 0, 2, 3), (5, 4, 7, 0)]),  # after an insertion above
    ],
)
def test_map_range_wholly_deleted_is_none(first, last, hunks):
    assert map_range(first, last, hunks) is None


def test_hand_written_hunk_shapes_match_what_git_produces(make_repo):
    repo = make_repo("shapes")
    base = [f"row {n}\n" for n in range(1, 13)]
    repo.write("rows.txt", "".join(base)).commit()
    new = [*base]
    new[6:8] = []  # delete rows 7-8
    new[2:2] = ["added a\n", "added b\n"]  # insert after row 2
    new[10] = "row eleven\n"  # replace row 11 (index 10 after edits: 12 - 2 + 2 -> row 11)
    repo.write("rows.txt", "".join(new)).commit()
    mirror = Mirror(repo.path / ".git")
    old_blob, new_blob = (repo.git("rev-parse", f"{c}:rows.txt").strip() for c in repo.commits)
    hunks = mirror.line_hunks(old_blob, new_blob)
    assert hunks == [(2, 0, 3, 2), (7, 2, 8, 0), (11, 1, 11, 1)]
    assert map_range(3, 6, hunks) == (5, 8)
    assert map_range(7, 8, hunks) is None
    assert map_range(9, 12, hunks) == (9, 12)
    assert new[8:12] == [base[8], base[9], "row eleven\n", base[11]]  # new lines 9-12


def test_expected_sha256_checked_after_a_rename_keeps_the_new_path(pinned, tw):
    repo = pinned({"dossier.txt": "as delivered\n"})
    wrong = "f" * 64
    result = tw("register", "add-file", "demo", "SRC-1", "dossier.txt", "--expect-sha256", wrong)
    assert result.exit_code == 0, result.output
    repo.move("dossier.txt", "archive/dossier.txt")
    head = repo.commit("archive")
    code, data, items = drift(tw, repo, head)
    assert code == 0
    assert items["dossier.txt"] == item(
        "file", "dossier.txt", "moved", path="dossier.txt", new_path="archive/dossier.txt"
    )
    [asserted] = data["assertions"]  # followed to the new name, as the file is
    assert asserted["state"] == "differs" and asserted["sha256_at_commit"] is not None


# -- alignment inside replaced blocks --------------------------------------------------------

OLD_KEEP = (
    b"def keep(self, text):\n"
    b'    """File a note; long notes are refused."""\n'
    b"    if len(text) > LIMIT:\n"
    b"        raise ValueError(text)\n"
    b"    return self.add(text)\n"
)
NEW_KEEP = b'def keep(self, text, owner):\n    """File a note."""\n    return self.add(text)\n'


def test_lines_deleted_inside_a_larger_edit_map_to_nothing():
    hunks = [(1, 4, 1, 2)]  # what git diff -U0 reports: four lines replaced by two
    old, new = Lines(OLD_KEEP), Lines(NEW_KEEP)
    assert map_range(3, 4, hunks) == (1, 2)  # block level: carried onto the replacement
    assert map_range(3, 4, hunks, old, new) is None  # aligned: the guard was deleted
    assert map_range(1, 2, hunks, old, new) == (1, 2)  # signature and docstring edited
    assert map_range(1, 5, hunks, old, new) == (1, 3)  # the whole function, edited


def test_a_block_replaced_line_for_line_maps_each_line():
    old, new = Lines(b"x = 1\ny = 2\n"), Lines(b"total = compute()\ny = 3\n")
    assert map_range(1, 1, [(1, 2, 1, 2)], old, new) == (1, 1)
    assert map_range(2, 2, [(1, 2, 1, 2)], old, new) == (2, 2)


def test_one_git_diff_serves_many_files_including_awkward_names(make_repo):
    repo = make_repo("awkward")
    repo.write("a b.txt", "one\ntwo\n").write("plain.txt", "1\n").write("q.txt", "k\n")
    first = repo.commit("first")
    # an added line that looks like a file header must not be taken for one
    repo.write("a b.txt", "one\n++ b/plain.txt\nthree\n").write("plain.txt", "2\n")
    second = repo.commit("second")
    mirror = Mirror(repo.path / ".git")
    hunks = mirror.line_hunks_many(first, second, ["a b.txt", "plain.txt", "q.txt"])
    assert hunks == {"a b.txt": [(2, 1, 2, 2)], "plain.txt": [(1, 1, 1, 1)]}
    old, new = (mirror.tree(c)["a b.txt"].oid for c in (first, second))
    assert mirror.line_hunks(old, new) == hunks["a b.txt"]


# -- same bytes in another touched file: the line index finds what a search of each would ---

LINE = st.sampled_from([b"a\n", b"b\n", b"\n", b"a", b"a\r\n", b"  a\n", b"b"])
FILE = st.lists(LINE, max_size=6).map(b"".join)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(files=st.lists(FILE, min_size=1, max_size=4), needle=st.lists(LINE, max_size=3))
@example(files=[b"x\na", b"a\n"], needle=[b"a"])  # a last line without its newline
@example(files=[b"\n\nb\n", b"b\n\n"], needle=[b"\n", b"b\n"])  # a blank first line
def test_quotes_are_looked_for_in_every_touched_file_that_can_hold_them(files, needle):
    data = {f"f{i}.txt": content for i, content in enumerate(files)}
    lines = {path: Lines(content) for path, content in data.items()}
    target = Target(
        "c" * 40,
        {},
        Changes({}, frozenset(data)),
        lines.get,
        lambda _old, _new: [],
    )
    span = b"".join(needle)
    found = _elsewhere(span, "f0.txt", None, target)
    searched = [(p, lines[p].find_span(span)) for p in sorted(data) if p != "f0.txt"]
    assert found == [(path, hits) for path, hits in searched if hits]


# -- a relocated span keeps its whole statement (a linter re-wraps calls) -------------------

AGENT = """def answer(question, memory):
    reply = client.complete(
        model=MODEL, system=PROMPT,
        messages=[question],
        max_tokens=512,
        stop=None,
    )
    if reply.ok:
        memory.keep(reply.text)
        return reply.text
    return None
"""
#: what a linter makes of it: one argument per line, so the call grows by a line
LINTED = AGENT.replace(
    "        model=MODEL, system=PROMPT,\n", "        model=MODEL,\n        system=PROMPT,\n"
)


@pytest.fixture
def agent(pinned, tw):
    """agent.py pinned, with Q-call (anchored on the call's first line: lines 1-7, the
    signature and the whole call) and Q-if (lines 8-10, an if block, no anchor)."""
    repo = pinned({"agent.py": AGENT})
    for args in (
        ("--match", "reply = client.complete(", "--context", "5", "--id", "Q-call"),
        ("--lines", "8-10", "--id", "Q-if"),
    ):
        assert tw("quote", "demo", "SRC-1", "agent.py", *args).exit_code == 0
    return repo


def test_a_rewrapped_call_is_format_only_and_keeps_its_closing_parenthesis(agent, tw):
    head = agent.write("agent.py", "import os\n\n" + LINTED).commit("lint")
    _, data, items = drift(tw, agent, head)
    call = raw_items(data)["Q-call"]
    assert (call["lines"], call["state"], call["format_only"]) == ([1, 7], "changed", True)
    assert call["new_lines"] == [3, 10]  # a line longer, the closing parenthesis included
    assert items["Q-if"]["state"] == "moved"


@pytest.mark.slow
def test_a_rewrapped_and_edited_call_is_relocated_whole(agent, tw):
    head = agent.write("agent.py", LINTED.replace("=512", "=1024")).commit("lint, edit")
    _, data, _ = drift(tw, agent, head)
    call = raw_items(data)["Q-call"]
    assert call["state"] == "changed" and call["format_only"] is False
    assert call["new_lines"] == [1, 8]  # the whole statement, not cut before its ")"
    assert call["diff"].rstrip().endswith(")")


@pytest.mark.slow
def test_a_quoted_block_that_grows_is_relocated_to_its_end(agent, tw):
    grown = AGENT.replace(
        "        memory.keep(reply.text)\n",
        "        memory.keep(reply.text, owner=question.user)\n        memory.flush()\n",
    )
    head = agent.write("agent.py", grown).commit("flush")
    _, data, _ = drift(tw, agent, head)
    block = raw_items(data)["Q-if"]
    assert block["state"] == "changed" and block["format_only"] is False
    assert block["new_lines"] == [8, 11]  # header to the end of the block it opens


# -- found in review: each once made tracework hang, crash or lie --------------


@pytest.mark.slow
def test_a_large_rewrite_maps_quickly_and_sensibly(pinned, tw):
    old = "".join(f"value_{n} = {n}\n" for n in range(3000))
    repo = pinned({"big.py": old})
    assert tw("quote", "demo", "SRC-1", "big.py", "--lines", "1500-1500").exit_code == 0
    repo.write("big.py", "".join(f"other_{n} = {n * 7}\n" for n in range(2001)))
    head = repo.commit("rewrite")
    assert tw("fetch", "toy").exit_code == 0
    result = tw("check", "demo", "--at", head, "--json")
    item = next(i for i in json.loads(result.output)["items"] if i["kind"] == "quote")
    assert item["state"] == "changed"  # mapped onto the replacement as a whole


# -- a span that starts inside a docstring (found on A-mem: a match= quote) --------------

MEMORY = '''class Memory:
    def search(self, query, k=5):
        """Find the notes closest to the query.

        Returns at most k notes, nearest first.
        """
        hits = self.index.query(query, top_k=k, include_metadata=True)
        return [h.note for h in hits]
'''
#: a formatter's work: the call inside the quote one argument per line, trailing comma
WRAPPED = MEMORY.replace(
    "self.index.query(query, top_k=k, include_metadata=True)",
    "self.index.query(\n            query,\n            top_k=k,\n"
    "            include_metadata=True,\n        )",
)


def test_a_span_starting_on_a_docstrings_closing_quotes_is_format_only(pinned, tw, workspace):
    """``--match`` with ``--context 1`` starts the quote on the ``\"\"\"`` that closes a
    docstring opened lines earlier; a re-wrap of the call inside it is layout only: the
    check says format only, the first-change search finds no content change, and the
    quote's content is found in its own file at the pin."""
    from tracework.drift.content import Content, holds_in
    from tracework.drift.first_change import first_changes

    repo = pinned({"memory.py": MEMORY})
    quoted = tw(
        "quote", "demo", "SRC-1", "memory.py", "--match", "hits = self.index.query(",
        "--context", "1", "--id", "Q-search",
    )  # fmt: skip
    assert quoted.exit_code == 0, quoted.output
    pin = repo.commits[0]
    repo.write("memory.py", "import os\n\n" + MEMORY).commit("imports")  # the bytes hold
    head = repo.write("memory.py", "import os\n\n" + WRAPPED).commit("format")
    _, data, _ = drift(tw, repo, head)
    search = raw_items(data)["Q-search"]
    assert search["lines"] == [6, 8]
    assert (search["state"], search["format_only"]) == ("changed", True)
    assert search["new_lines"] == [8, 14]

    pinned_file = Content(MEMORY, "memory.py")
    assert holds_in(pinned_file, 6, 8, pinned_file)
    assert holds_in(pinned_file, 6, 8, Content(WRAPPED, "memory.py"))
    quote_bytes = "".join(MEMORY.splitlines(True)[5:8]).encode()
    found = first_changes(
        Mirror(workspace.mirror_dir("toy")),
        pin,
        head,
        {"Q-search": ("memory.py", None, quote_bytes, (6, 8))},
    )
    # the bytes changed with the formatter's commit; the content never did (it was once
    # said to change with the commit before, where the quote's bytes were still there)
    assert found == {"Q-search": (head, None)}


PROMPT_FILE = '''SYSTEM = """You are a careful assistant.
  Answer in  two sentences.
Cite the notes you used.
"""


def ask(question):
    return client.complete(system=SYSTEM, prompt=question)
'''


def test_lines_inside_a_prompt_string_change_with_their_text(pinned, tw, workspace):
    """A quote of lines inside a prompt string once had no content at all: the check
    called an edit of them a change, the first-change search found no content change."""
    from tracework.drift.first_change import first_changes

    repo = pinned({"prompts.py": PROMPT_FILE})
    assert (
        tw("quote", "demo", "SRC-1", "prompts.py", "--lines", "2-3", "--id", "Q-p").exit_code == 0
    )
    pin = repo.commits[0]
    wrapped = PROMPT_FILE.replace(
        "client.complete(system=SYSTEM, prompt=question)",
        "client.complete(\n        system=SYSTEM,\n        prompt=question,\n    )",
    )
    repo.write("prompts.py", "import client\n\n" + wrapped).commit("format")  # moved only
    edit = repo.write("prompts.py", "import client\n\n" + wrapped.replace("in  two", "in two"))
    head = edit.commit("one space")
    _, data, _ = drift(tw, repo, head)
    quote = raw_items(data)["Q-p"]
    assert (quote["state"], quote["format_only"]) == ("changed", False)
    quote_bytes = "".join(PROMPT_FILE.splitlines(True)[1:3]).encode()
    found = first_changes(
        Mirror(workspace.mirror_dir("toy")),
        pin,
        head,
        {"Q-p": ("prompts.py", None, quote_bytes, (2, 3))},
    )
    assert found == {"Q-p": (head, head)}  # the bytes and the content changed together


def test_a_pin_moved_by_hand_still_gives_the_quote_its_own_content(make_repo):
    """A register re-pinned by hand, its quote not recorded again: the new pin does not
    hold the quote at its lines, so its content is its own text, never the pin's lines
    there (which would hide the later change of the quoted code)."""
    from tracework.drift.first_change import first_changes

    repo = make_repo("moved-pin")
    quoted = "def f():\n    return 1\n"
    repo.write("m.py", quoted)
    repo.commit("first")
    repo.write("m.py", "import os\n" + quoted)
    pin = repo.commit("an import above: the quote is at lines 2-3 now")
    repo.write("m.py", "import os\ndef f():\n    return 2\n")
    edit = repo.commit("the quoted code changes")
    mirror = Mirror(repo.path / ".git")
    found = first_changes(mirror, pin, edit, {"Q-f": ("m.py", None, quoted.encode(), (1, 2))})
    assert found["Q-f"][1] == edit
