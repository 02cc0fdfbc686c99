"""The report's table of contents: h3s nest inside the item of their h2, as valid HTML."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from tracework.render.export import toc_html


class _Tree(HTMLParser):
    """Checks that every end tag closes the element last opened, that list items sit in
    lists and lists in the nav or an item; records each link's depth."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.links: list[tuple[int, str]] = []
        self.problems: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        parent = self.stack[-1] if self.stack else None
        if tag == "li" and parent != "ol":
            self.problems.append(f"li inside {parent}")
        if tag == "ol" and parent not in ("nav", "li"):
            self.problems.append(f"ol inside {parent}")
        self.stack.append(tag)
        if tag == "a":
            self.links.append((self.stack.count("ol"), dict(attrs)["href"] or ""))

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.problems.append(f"</{tag}> closes {self.stack[-1] if self.stack else None}")
            return
        self.stack.pop()


def _page(*headings: tuple[int, str]) -> str:
    return "<main>" + "".join(f'<h{level} id="{i}">{i}</h{level}>' for level, i in headings)


@pytest.mark.parametrize(
    ("headings", "depths"),
    [
        ([(2, "a"), (3, "a1"), (3, "a2"), (2, "b")], [1, 2, 2, 1]),
        ([(2, "a"), (3, "a1"), (2, "b"), (3, "b1")], [1, 2, 1, 2]),
        ([(3, "lead"), (2, "a"), (2, "b")], [1, 1, 1]),
        ([(2, "only")], [1]),
        ([], []),
    ],
)
def test_the_contents_nest_as_valid_html(headings, depths):
    tree = _Tree()
    tree.feed(toc_html(_page(*headings)))
    assert tree.problems == [] and tree.stack == []
    assert [depth for depth, _ in tree.links] == depths
    assert [href for _, href in tree.links] == [f"#{i}" for _, i in headings]
