"""nbconvert's accessibility pass over an HTML page, in one streaming pass.

nbconvert's ``HTMLExporter`` ends every export by parsing the whole page with
BeautifulSoup (``html.parser``), giving each ``img`` without ``alt`` a stock text and
each cell's input and output wrapper ``tabindex="0"``, and writing the tree out again;
the writing normalises the page as well (attributes sorted, whitespace-only text
collapsed, empty elements closed with ``/>``).  Building that tree was most of a
report page's export, a fifth of a second for the demo.

:func:`accessible_page` gives the same bytes without the tree: BeautifulSoup's own
``html.parser`` driver reports each tag, text and comment, and a writer that keeps
only the stack of open elements does what BeautifulSoup's tree building and its
``minimal`` formatter do with them, with BeautifulSoup's own tables (which elements
are void, which attributes are lists, which keep their whitespace).  The tests
compare the two on report pages and on generated HTML, malformed included.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from bs4.builder._htmlparser import BeautifulSoupHTMLParser, HTMLParserTreeBuilder
from bs4.element import CharsetMetaAttributeValue, ContentMetaAttributeValue, NavigableString
from bs4.formatter import HTMLFormatter

#: What nbconvert writes into an image that has no alternative text.
MISSING_ALT = "No description has been provided for this image"
#: The classes of the ``div`` elements nbconvert makes focusable inside a notebook.
_FOCUSABLE = frozenset({"jp-Cell-inputWrapper", "jp-OutputArea-output"})
_NOTEBOOK = "jp-Notebook"
#: BeautifulSoup writes a document as if it were to be encoded so (``str(soup)``).
_OUTPUT_ENCODING = "utf-8"
_ASCII_SPACES = "\x20\x0a\x09\x0c\x0d"

if TYPE_CHECKING:
    from bs4 import BeautifulSoup

_FORMATTER = HTMLFormatter.REGISTRY["minimal"]
_BUILDER = HTMLParserTreeBuilder()


@dataclass(frozen=True)
class _Open:
    """An element BeautifulSoup would hold open: its name, and whether it is, or is
    inside, the notebook."""

    name: str
    in_notebook: bool
    empty_element: bool  # void (``<br/>``): html.parser's driver closes it at once

    @property
    def is_empty_element(self) -> bool:  # what the driver asks of a tag it was given
        return self.empty_element


class _Writer:
    """What BeautifulSoup's tree building does with the driver's events, written out as
    they come, as ``str(soup)`` would write the tree (the driver calls it its soup)."""

    builder = _BUILDER
    contains_replacement_characters = False

    def __init__(self) -> None:
        self.out: list[str] = []
        self.missing_alt = 0
        self._stack: list[_Open] = []
        self._open: Counter[str] = Counter()
        self._preserving = 0  # open elements that keep their whitespace (pre, textarea)
        self._data: list[str] = []

    # -- the events -------------------------------------------------------------------

    def handle_starttag(
        self,
        name: str,
        namespace: str | None,
        nsprefix: str | None,
        attrs: dict[str, str],
        sourceline: int | None = None,
        sourcepos: int | None = None,
        namespaces: dict[str, str] | None = None,
    ) -> _Open:
        self.endData()
        values = self.builder._replace_cdata_list_attribute_values(name, attrs)
        inside = bool(self._stack) and self._stack[-1].in_notebook
        classes = values.get("class")
        listed = classes if isinstance(classes, list) else []
        if name == "img" and "alt" not in values:
            values["alt"] = MISSING_ALT
            self.missing_alt += 1
        if name == "div" and inside and _FOCUSABLE.intersection(listed):
            values["tabindex"] = "0"
        element = _Open(
            name, inside or _NOTEBOOK in listed, self.builder.can_be_empty_element(name)
        )
        self.out.append(_start_tag(name, values, element.empty_element))
        self._stack.append(element)
        self._open[name] += 1
        if name in self.builder.preserve_whitespace_tags:
            self._preserving += 1
        return element

    def handle_endtag(self, name: str, nsprefix: str | None = None) -> None:
        self.endData()
        if not self._open[name]:
            return  # BeautifulSoup drops an end tag with nothing open to end
        while self._stack:
            if self._pop().name == name:
                return

    def handle_data(self, data: str) -> None:
        self._data.append(data)

    def endData(self, containerClass: type[NavigableString] | None = None) -> None:  # bs4 names
        if not self._data:
            return
        text = "".join(self._data)
        self._data = []
        if not self._preserving and not text.strip(_ASCII_SPACES):
            text = "\n" if "\n" in text else " "
        if containerClass is not None:  # a comment, doctype, CDATA, declaration, PI
            self.out.append(containerClass.PREFIX + text + containerClass.SUFFIX)
        elif self._stack and self._stack[-1].name in _FORMATTER.cdata_containing_tags:
            self.out.append(text)  # a script's or style sheet's text, as it was
        else:
            self.out.append(_FORMATTER.substitute(text))

    # -- the end ----------------------------------------------------------------------

    def finish(self) -> str:
        self.endData()
        while self._stack:
            self._pop()
        return "".join(self.out)

    def _pop(self) -> _Open:
        element = self._stack.pop()
        self._open[element.name] -= 1
        if element.name in self.builder.preserve_whitespace_tags:
            self._preserving -= 1
        if not element.empty_element:
            self.out.append(f"</{element.name}>")
        return element


def _start_tag(name: str, values: Mapping[str, str | list[str]], empty_element: bool) -> str:
    """An element's start tag as BeautifulSoup writes it: attributes sorted, lists joined,
    a ``<meta>`` charset as the output's, values escaped and quoted."""
    meta = _meta_substitutions(name, values)
    parts = [f"<{name}"]
    for key, value in sorted(values.items()):
        if isinstance(value, list):
            text = " ".join(value)
        elif key in meta:
            text = meta[key]
        else:
            text = value
        parts.append(
            f" {key}={_FORMATTER.quoted_attribute_value(_FORMATTER.attribute_value(text))}"
        )
    parts.append("/>" if empty_element else ">")
    return "".join(parts)


def _meta_substitutions(name: str, values: Mapping[str, str | list[str]]) -> dict[str, str]:
    """The encoding a ``<meta>`` declares, rewritten to the output's, as BeautifulSoup
    rewrites it (``HTMLTreeBuilder.set_up_substitutions``)."""
    if name != "meta":
        return {}
    charset, content = values.get("charset"), values.get("content")
    if isinstance(charset, str):
        return {"charset": CharsetMetaAttributeValue(charset).substitute_encoding(_OUTPUT_ENCODING)}
    http_equiv = values.get("http-equiv")
    said = (
        http_equiv if isinstance(http_equiv, list) else [] if http_equiv is None else [http_equiv]
    )
    if isinstance(content, str) and any(v.lower() == "content-type" for v in said):
        return {"content": ContentMetaAttributeValue(content).substitute_encoding(_OUTPUT_ENCODING)}
    return {}


def accessible_page(html: str) -> tuple[str, int]:
    """``html`` as nbconvert's ``HTMLExporter`` leaves it after its accessibility pass,
    byte for byte, and how many images it gave the stock alternative text (nbconvert
    warns of them)."""
    writer = _Writer()
    soup = cast("BeautifulSoup", writer)  # the part of a soup the driver uses
    parser = BeautifulSoupHTMLParser(soup, **_BUILDER.parser_args[1])
    parser.feed(html)
    parser.close()
    return writer.finish(), writer.missing_alt
