"""The reader's theme on a published page: light or dark, as the reader's system or choice says.

Every report and site page carries, inline in its head and by the page's nonce, the theme
script (``templates/shared/theme.js``): it shows the page in the system's theme
(``prefers-color-scheme``) unless the reader chose the other one with the page's toggle,
and keeps that choice in ``localStorage``.  The stylesheets hold the dark palette under
``html[data-theme="dark"]`` and, for a reader without scripts, under the media query; this
module adds the one part a stylesheet cannot say by hand, the dark colours of highlighted
code (pygments' ``github-dark``, as a JupyterLab dark theme shows them), under the same two
conditions.  Loads nothing heavy: the site imports it.
"""

from __future__ import annotations

import functools
import re
from importlib.resources import files
from pathlib import Path

from pygments.formatters import HtmlFormatter

TEMPLATES = Path(str(files("tracework") / "templates"))
#: pygments' palette for code on a dark page (JupyterLab's dark theme shows the same).
DARK_CODE_STYLE = "github-dark"
#: Where a page is dark: chosen with the toggle, or the system's with no choice made.
CHOSEN_DARK = ':root[data-theme="dark"]'
SYSTEM_DARK = ':root:not([data-theme="light"])'


@functools.cache
def theme_js() -> str:
    """The theme script's text, for a ``<script nonce>`` in a page's head."""
    return (TEMPLATES / "shared" / "theme.js").read_text(encoding="utf-8")


#: pygments' default (light) palette draws word operators (``in``, ``and``) and decorators
#: in #AA22FF, a shade short of 4.5:1 on the code's tint: on the page, a shade darker.
LIGHT_CODE_CSS = ".tw-hl .ow, .tw-hl .nd { color: #8f1cd6 }\n"


@functools.cache
def page_code_css() -> str:
    """Highlighted code's token colours on a dark page, under both ways a page is dark
    and for screens only (a printed page is light); first, the light palette's one
    correction (:data:`LIGHT_CODE_CSS`).  The token rules outweigh the light
    ones (``.tw-hl .k``) by the root selector in front."""
    formatter = HtmlFormatter(style=DARK_CODE_STYLE)

    def rules(where: str) -> str:
        css = "\n".join(formatter.get_token_style_defs(f"{where} .tw-hl"))
        return re.sub(r" */\*.*?\*/", "", css)

    return (
        LIGHT_CODE_CSS
        + "@media screen and (prefers-color-scheme: dark) {\n"
        + rules(SYSTEM_DARK)
        + "\n}\n@media screen {\n"
        + rules(CHOSEN_DARK)
        + "\n}\n"
    )
