"""What a published page may do: the HTML it shows from analysts, the scripts it runs.

Analyst HTML — Markdown cells, ``display(Markdown(...))`` and ``display(HTML(...))``
outputs, record fields and rubric text written in Markdown — may format text and link
to places a reader chooses to follow, and nothing else: :func:`clean_html` keeps an
allow-list of formatting elements and attributes (nh3, the Rust ammonia sanitiser),
so no ``<meta http-equiv="refresh">``, ``<base>``, script, frame, object, form, SVG,
style sheet or event handler survives, no link is ``javascript:`` or ``data:``, and
an image can only be data carried inside the page.

A page runs only the scripts it names itself.  A Content-Security-Policy of
``script-src 'self'`` is not that on ``file://``, where Chromium counts every local
file as the page's own; hash sources cannot name a script file there either
(Chromium enforces a script's ``integrity`` only on CORS requests, which ``file://``
never makes, and blocks the script).  So each page's own ``<script>`` elements and its
policy carry a nonce that :func:`seal` computes from the page itself.
"""

from __future__ import annotations

import base64
import hashlib

import nh3

#: Elements analysts format with, and the ones tracework's own displays are built from.
_TAGS = {
    *("a", "abbr", "article", "aside", "b", "bdi", "blockquote", "br", "caption", "cite"),
    *("code", "col", "colgroup", "dd", "del", "details", "dfn", "div", "dl", "dt", "em"),
    *("figcaption", "figure", "footer", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr"),
    *("i", "img", "ins", "kbd", "li", "mark", "ol", "p", "pre", "q", "s", "samp", "section"),
    *("small", "span", "strong", "sub", "summary", "sup", "table", "tbody", "td", "tfoot"),
    *("th", "thead", "time", "tr", "u", "ul", "var", "wbr"),
}
_ATTRIBUTES = {
    "*": {"class", "id", "lang", "style", "title"},
    "a": {"href"},
    "img": {"alt", "height", "src", "width"},
    "td": {"colspan", "rowspan", "data-label"},  # a cell's column, shown on a phone (CSS)
    "th": {"colspan", "rowspan", "scope"},
    "col": {"span"},
    "colgroup": {"span"},
    "ol": {"reversed", "start"},
    "details": {"open"},
    "time": {"datetime"},
}
#: Inline styles may colour and align text (Markdown tables align cells this way); no
#: property that positions, hides, or loads anything.
_STYLE_PROPERTIES = {
    "background-color",
    "color",
    "font-style",
    "font-weight",
    "text-align",
    "text-decoration",
}
#: Classes the page's own script acts on: analyst HTML never becomes a diagram to draw.
_SCRIPTED_CLASSES = {"mermaid", "tw-diagram"}


def _attribute(tag: str, name: str, value: str) -> str | None:
    """Links never lead to ``data:``; images are only ``data:image/``; no scripted class."""
    if name == "href" and value.lstrip().lower().startswith("data:"):
        return None
    if tag == "img" and name == "src" and not value.lower().startswith("data:image/"):
        return None
    if name == "class":
        kept = [c for c in value.split() if c not in _SCRIPTED_CLASSES]
        return " ".join(kept) or None
    return value


_CLEANER = nh3.Cleaner(
    tags=_TAGS,
    clean_content_tags={"script", "style", "template"},
    attributes=_ATTRIBUTES,
    attribute_filter=_attribute,
    link_rel=None,
    url_schemes={"http", "https", "mailto", "data"},
    filter_style_properties=_STYLE_PROPERTIES,
)


def clean_html(html: str) -> str:
    """HTML reduced to what may appear on a page (tracework's own displays pass whole)."""
    return str(_CLEANER.clean(str(html)))


#: What a template writes where the page's nonce goes; :func:`seal` fills it in.
NONCE_SLOT = "tracework-nonce"


def seal(page: str) -> str:
    """The page with its nonce filled in: a digest of the page itself.

    Derived from the page, the nonce keeps identical renders byte-identical, and no
    text inside the page can carry it in advance (it would have to contain its own
    digest).  Only the head holds the page's policy and its ``<script>`` elements.
    """
    head, end, body = page.partition("</head>")
    digest = hashlib.sha256(page.encode("utf-8")).digest()
    nonce = base64.urlsafe_b64encode(digest[:18]).decode("ascii")
    return head.replace(NONCE_SLOT, nonce) + end + body
