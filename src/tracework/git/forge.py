"""Links to a quoted line range on the subject's forge, when the URL names a known one."""

from __future__ import annotations

import re
from urllib.parse import quote as urlquote

_HTTPS = re.compile(r"https://(?:[^@/]+@)?(?P<host>[^/:]+)(?::\d+)?/(?P<repo>.+?)(?:\.git)?/?")
_SCP = re.compile(r"(?:[A-Za-z0-9._-]+@)?(?P<host>[^:/]+):(?P<repo>.+?)(?:\.git)?/?")
_SSH = re.compile(r"ssh://(?:[^@/]+@)?(?P<host>[^/:]+)(?::\d+)?/(?P<repo>.+?)(?:\.git)?/?")

_LAYOUTS = {
    "github": "https://{host}/{repo}/blob/{commit}/{path}#L{a}-L{b}",
    "gitlab": "https://{host}/{repo}/-/blob/{commit}/{path}#L{a}-{b}",
    "gitea": "https://{host}/{repo}/src/commit/{commit}/{path}#L{a}-L{b}",
    "bitbucket": "https://{host}/{repo}/src/{commit}/{path}#lines-{a}:{b}",
}
_HOSTS = {
    "github.com": "github",
    "gitlab.com": "gitlab",
    "codeberg.org": "gitea",
    "gitea.com": "gitea",
    "bitbucket.org": "bitbucket",
}


def upstream_file_url(url: str, commit: str, path: str) -> str | None:
    """The forge URL showing the whole of ``path`` at ``commit``, or None if unknown."""
    link = upstream_url(url, commit, path, (1, 1))
    return link.split("#", 1)[0] if link else None


def upstream_url(url: str, commit: str, path: str, lines: tuple[int, int]) -> str | None:
    """The forge URL showing ``path`` lines ``a-b`` at ``commit``, or None if unknown."""
    for pattern in (_HTTPS, _SSH, _SCP):
        m = pattern.fullmatch(url)
        if m:
            break
    else:
        return None
    host = m.group("host").lower()
    forge = _HOSTS.get(host)
    repo = m.group("repo").strip("/")
    if forge is None or not re.fullmatch(r"[A-Za-z0-9._~/-]+", repo) or ".." in repo:
        return None
    return _LAYOUTS[forge].format(
        host=host,
        repo=repo,
        commit=commit,
        path=urlquote(path, safe="/"),
        a=lines[0],
        b=lines[1],
    )
