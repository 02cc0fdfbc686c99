"""A capture as its report shows it: a chat assistant's requests as conversations, an
excerpt compared with the template it was built from (the sentence computed, recorded
and recomputed where the template or the capture moves on), tables with a caption apart
from their notes, and the capture part and the asserted hashes in view at a phone's
width and a desktop's."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import nbformat
import pytest

import tracework
from capture_setup import Setup, capture_workspace
from conftest import shown_html
from tracework.capture.compare import Reference, compare, quoted_text
from tracework.errors import TraceworkError
from tracework.register import store as reg

pytestmark = pytest.mark.slow  # kernels, browsers, sandboxes: not in `make test-fast`

HOSTILE = "</details><script>alert(1)</script>"

PROMPTS = '''"""The assistant's instructions."""

SYSTEM_PROMPT = """You are a careful assistant.
Answer in one paragraph.

Say when you are unsure."""
'''

CHAT = '''"""One turn of a chat assistant that remembers what the user said."""

from toy.prompts import SYSTEM_PROMPT


class Chat:
    def __init__(self, model):
        self.model = model
        self.memories = []

    def turn(self, message):
        lines = SYSTEM_PROMPT.split("\\n")
        block = ["<memories>", *self.memories, "</memories>"] if self.memories else []
        request = {
            "model": "stand-in",
            "messages": [
                {"role": "system", "content": "\\n".join(lines[:2] + block + lines[2:])},
                {"role": "user", "content": message},
            ],
        }
        self.memories.append(message)
        return self.model.complete(request)
'''

HARNESS = f"""\
from toy.chat import Chat
from tracework_harness import capture

HOSTILE = {HOSTILE!r}


class Scripted:
    def __init__(self):
        self.requests = []

    def complete(self, request):
        self.requests.append(request)
        return "noted"


with capture.case("C-01", "Where does a remembered message enter the next request?") as c:
    model = Scripted()
    chat = Chat(model)
    chat.turn("I work nights " + HOSTILE)
    chat.turn("When should you call me?")
    c.record("model requests", model.requests)
    c.record("odd roles", [{{"role": "<b>", "content": [{{"type": "text", "text": HOSTILE}}]}}])
    system = model.requests[1]["messages"][0]["content"]
    c.check("the first message reaches the second request's system prompt",
            holds=HOSTILE in system, observed=f"{{len(system.splitlines())}} lines")
    capture.table("requests per turn", ["turn", "messages"], [[1, 2], [2, 2]],
                  notes="one request a turn; the model is scripted")

with capture.case("M-01", "What does a model see of a memory?", arm="model-driven") as c:
    c.record("requests", model.requests[1:])
    c.observe("the second request, kept as sent")
capture.table("replies by condition", ["condition", "replies"], [["a memory", 1]],
              notes="replies kept, never graded", arm="model-driven")
"""

#: The excerpt the report compares with the template, and the sentence it must get.
SYSTEM = "model requests[1].messages[0].content"
SENTENCE = "equals the string Q-prompt quotes with only lines 3–5 inserted"

CELL = f"""cap = wb.capture("chat")
q_prompt = src.quote("toy/prompts.py", lines=(3, 6), id="Q-prompt")
q_chat = src.quote("toy/chat.py", symbol="Chat.turn", id="Q-turn")
system = cap.transcript("C-01", {SYSTEM!r}).against(q_prompt)
wb.component("RT-CMP-chat", label="Chat", identity="`Chat`", evidence=[q_chat])
wb.route("RT-RTE-recall", label="Remembered messages return", progression="turn to turn",
         passes_through=["RT-CMP-chat"], implementation="wired", operation="observed",
         evidence=[q_prompt, q_chat, cap.case("C-01"), system])
cap"""


@pytest.fixture
def chat(pinned, tw) -> Setup:
    """The chat toy pinned and captured at its pin."""
    setup = capture_workspace(pinned, tw, {"toy/chat.py": CHAT, "toy/prompts.py": PROMPTS})
    setup.write("chat", HARNESS)
    result = setup.capture("chat")
    assert result.exit_code == 0, result.output
    return setup


def write_notebook(ws_root: Path, cell: str) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "tracework", "display_name": "tracework",
                                 "language": "python"}  # fmt: skip
    params = nbformat.v4.new_code_cell('register = "demo"\ncommit = None\nmode = "author"')
    params.metadata["tags"] = ["parameters"]
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Chat runtime report"),
        params,
        nbformat.v4.new_code_cell(
            "import tracework as tw\nwb = tw.open(register, commit=commit, mode=mode)\n"
            'src = wb.source("SRC-1")'
        ),
        nbformat.v4.new_code_cell(cell),
        nbformat.v4.new_code_cell("wb.done()"),
    ]
    nbformat.write(nb, ws_root / "notebooks" / "demo.ipynb")


def render_chat_report(setup: Setup) -> Path:
    """The chat report rendered at the pin, with hashes asserted by a document (one holds,
    one differs); returns the folder of the render."""
    tw, root = setup.tw, setup.ws.root
    (root / "dossier.md").write_text("toy/chat.py and toy/store.py, hashed\n")
    assert tw("register", "add-document", "demo", "SRC-2", "dossier.md").exit_code == 0
    right = hashlib.sha256(CHAT.encode()).hexdigest()
    for path, digest in (("toy/chat.py", right), ("toy/store.py", "ab" * 32)):
        asserted = tw("register", "assert", "demo", "SRC-1", path, digest, "--by", "SRC-2")
        assert asserted.exit_code == 0, asserted.output
    author = tracework.open("demo")  # author mode: the quotes and the capture registered
    exec(CELL, {"wb": author, "src": author.source("SRC-1")})
    write_notebook(root, CELL)
    rendered = tw("render", "demo")
    assert rendered.exit_code == 0, rendered.output
    return root / "reports" / "demo" / setup.commit[:12]


def test_the_report_shows_conversations_and_a_computed_sentence(chat):
    folder = render_chat_report(chat)
    page = (folder / "report.html").read_text()
    # the requests as conversations: each role, then the content's real lines, escaped
    assert 'class="tw-conversation"' in page and "tw-message tw-role-system" in page
    assert 'class="tw-role-name">user<' in page
    assert "&lt;/details&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script>alert(1)" not in page and "tw-role-&lt;b&gt;" not in page
    assert 'class="tw-role-name">&lt;b&gt;<' in page
    # the difference from the template, computed, with the lines inserted
    assert f"This value {SENTENCE}." in page
    assert page.count('<ins class="tw-line tw-ins">') >= 3 and "tw-whole-diff" in page
    assert 'class="tw-raw"' in page  # the canonical JSON one click away
    # the table: its title is its caption, its notes a footnote apart
    assert "<caption>requests per turn</caption>" in page
    assert '<p class="tw-table-notes"><span class="tw-table-notes-lead">Note.</span> one ' in page
    assert (
        '<caption>replies by condition <span class="tw-badge tw-model-driven">model-driven, '
        "not graded</span></caption>"
    ) in page
    # records.json carries the reference and the verdict: a check can derive them again
    records = json.loads((folder / "records.json").read_text())
    [compared] = records["capture_evidence"][f"SRC-3/C-01/{SYSTEM}"]["compared_with"]
    assert compared["verdict"] == "inserted" and compared["sentence"] == SENTENCE
    assert compared["changes"] == [{"op": "inserted", "lines": [3, 5], "reference_lines": None}]
    reference = compared["reference"]
    assert (reference["kind"], reference["quote"], reference["form"]) == (
        "quote", "Q-prompt", "string literal"
    )  # fmt: skip
    register = reg.load(chat.ws.register_file("demo"))
    text, form = quoted_text(register.quotes["Q-prompt"].text, "toy/prompts.py")
    assert reference["sha256"] == hashlib.sha256(text.encode()).hexdigest()
    transcript = json.loads((chat.folder("chat") / "transcripts" / "C-01.json").read_text())
    value = transcript["records"][0]["value"][1]["messages"][0]["content"]
    again = compare(value, Reference("quote", "the string Q-prompt quotes", text, form))
    assert (again.verdict, again.sentence) == (compared["verdict"], compared["sentence"])


def test_the_sentence_follows_the_template_and_the_previous_capture(chat, tw):
    wb = tracework.open("demo")
    exec(CELL, {"wb": wb, "src": wb.source("SRC-1")})
    # the template changes at a newer commit: at the pin's capture (stale there) the
    # pin's text is compared; captured there too, the quote's text there is
    chat.repo.write("toy/prompts.py", PROMPTS.replace("Say when", "Say plainly when"))
    newer = chat.repo.commit("plainer")
    assert tw("fetch", "toy").exit_code == 0
    stale = tracework.open("demo", commit=newer, mode="render")
    exec(CELL, {"wb": stale, "src": stale.source("SRC-1")})
    [at_pin] = stale.records_json()["capture_evidence"][f"SRC-2/C-01/{SYSTEM}"]["compared_with"]
    assert at_pin["reference"]["commit"] == chat.commit and at_pin["sentence"] == SENTENCE
    assert tw("capture", "env", "chat", "--commit", newer).exit_code == 0
    assert tw("capture", "chat", "--commit", newer).exit_code == 0
    there = tracework.open("demo", commit=newer, mode="render")
    cap = there.capture("chat")
    q_prompt = there.source("SRC-1").quote("toy/prompts.py", lines=(3, 6), id="Q-prompt")
    system = cap.transcript("C-01", SYSTEM).against(q_prompt)
    [now] = system.comparisons
    assert now.reference.commit == newer and now.sentence == SENTENCE
    assert "Say plainly when" in (now.reference.text or "")
    # the same case and path in the capture before this one: the line that changed
    before = system.against(previous=True)
    assert [c.sentence for c in before.comparisons] == [
        SENTENCE,
        f"differs from its value in the capture at {chat.commit[:12]} in 1 place: "
        "line 7 replaces its line 7",
    ]
    assert f"This value differs from its value in the capture at {chat.commit[:12]}" in (
        shown_html(before)
    )
    # at the pin there is no capture before: said, not an error
    first = tracework.open("demo", mode="render").capture("chat")
    [missing] = first.transcript("C-01", SYSTEM).against(previous=True).comparisons
    assert missing.verdict == "missing"
    assert missing.sentence == (
        "cannot be compared with the previous capture: no capture of chat at a commit "
        f"before {chat.commit[:12]}"
    )
    # another case's value: a mistyped one is an error in the register's capture
    other = first.transcript("C-01", "model requests[0].messages[0].content")
    assert other.against(path=SYSTEM).comparisons[0].sentence == (
        f'equals C-01\'s value at "{SYSTEM}" with only its lines 3–5 removed'
    )
    with pytest.raises(TraceworkError, match="no item"):
        other.against(path="model requests[7]")
    with pytest.raises(TraceworkError, match="one reference, 2 given"):
        other.against(q_prompt, previous=True)


#: What of the capture part and of the asserted hashes a reader cannot see at this width:
#: boxes that scroll sideways (their content wider than they are), text past the right
#: edge, and cells of the asserted hashes outside the table's visible box.  Every fold
#: of the capture part is opened first (its transcripts, raw JSON, whole differences).
HIDDEN = """() => {
    const width = document.documentElement.clientWidth;
    const capture = document.querySelector('section.tw-capture');
    capture.querySelectorAll('details').forEach(d => { d.open = true; });
    const scrolls = [];
    for (const e of [capture, ...capture.querySelectorAll('*')]) {
        const hidden = e.clientWidth <= 1;  // shown to screen readers only
        const scrolls_x = getComputedStyle(e).overflowX !== 'visible';
        if (!hidden && scrolls_x && e.scrollWidth > e.clientWidth + 1)
            scrolls.push(e.tagName + '.' + e.className + ' ' + e.scrollWidth + '>' + e.clientWidth);
    }
    const past = [];
    const walker = document.createTreeWalker(capture, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
        const range = document.createRange();
        range.selectNodeContents(n);
        const box = range.getBoundingClientRect();
        if (box.width && box.right > width + 1) past.push(n.textContent.slice(0, 40));
    }
    const table = document.getElementById('register-assertions').nextElementSibling;
    const edge = Math.min(table.getBoundingClientRect().right, width);
    const cells = [...table.querySelectorAll('tbody td')];
    const outside = cells.filter(td => {
        const box = td.getBoundingClientRect();
        return !box.width || box.right > edge + 1;
    }).map(td => td.textContent.slice(0, 30));
    const states = cells.filter((td, i) => i % 6 === 5).map(td => td.textContent.trim());
    return {scrolls: scrolls.slice(0, 5), past: past.slice(0, 5), outside, states,
            table: [table.scrollWidth, table.clientWidth]};
}"""


@pytest.mark.browser
def test_the_capture_part_and_the_asserted_hashes_fit_a_phone_and_a_desktop(browser, chat):
    from conftest import page_fits

    url = (render_chat_report(chat) / "report.html").as_uri()
    for width in (390, 1280):
        fits = page_fits(browser, url, width)
        assert fits["scroll"] <= fits["width"] and not fits["past"], (width, fits)
        assert not fits["errors"], fits["errors"]
        for scheme in ("light", "dark"):
            context = browser.new_context(
                viewport={"width": width, "height": 900}, color_scheme=scheme
            )
            page = context.new_page()
            page.goto(url)
            found = page.evaluate(HIDDEN)
            context.close()
            assert not found["scrolls"] and not found["past"], (width, scheme, found)
            assert found["table"][0] <= found["table"][1] + 1, (width, found)
            assert not found["outside"], (width, found)
            assert sorted(found["states"]) == ["differs", "holds"], found
