"""The end-to-end path of the foundation: pin, register, quote, check, drift."""

from __future__ import annotations

import json


def test_quote_then_check_at_pin_and_after_an_edit(pinned, tw):
    repo = pinned({"pkg/store.py": "import os\n\n\ndef write(k, v):\n    return k\n"})
    assert tw("quote", "demo", "SRC-1", "pkg/store.py", "--symbol", "write").exit_code == 0
    ok = tw("check", "demo", "--json")
    assert ok.exit_code == 0, ok.output
    assert {i["state"] for i in json.loads(ok.output)["items"]} == {"verified"}

    repo.write("pkg/store.py", "import os\n\n\ndef write(k, v):\n    return v\n")
    head = repo.commit("edit")
    assert tw("fetch", "toy").exit_code == 0
    drift = tw("check", "demo", "--at", head, "--json")
    assert drift.exit_code == 1
    items = {i["id"]: i for i in json.loads(drift.output)["items"]}
    assert items["Q-store-write"]["state"] == "changed"
    assert items["pkg/store.py"]["state"] == "changed"
