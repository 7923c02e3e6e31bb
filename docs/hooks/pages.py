"""MkDocs hook: README.md and CHANGELOG.md (kept at the repository root, where GitHub and
a clone show them) become the site's ``index.md`` and ``changelog.md``, and every page's
links to files are made to work on the site.

A relative link to a file under docs/ (``docs/architecture.md`` in the README, or an
image such as ``docs/performance.png``) points at it on the site; a link to README.md or
CHANGELOG.md at their pages; a link to any other file of the repository
(``bench/README.md``) has no page on the site, so it becomes its text and the path in the
repository. Sections added to the README later need nothing here.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
GENERATED = {"index.md": ROOT / "README.md", "changelog.md": ROOT / "CHANGELOG.md"}
PAGES_OF = {source: name for name, source in GENERATED.items()}
_LINK = re.compile(r"(?P<image>!?)\[(?P<text>[^\]\n]*)\]\((?P<target>[^)\s]+)\)")
_CODE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)


def on_files(files: Files, config: Any) -> Files:
    """Add the pages made from the repository root's README.md and CHANGELOG.md."""
    for name, source in GENERATED.items():
        if files.get_file_from_path(name) is None:
            content = source.read_text(encoding="utf-8")
            files.append(File.generated(config, name, content=content))
    return files


def on_page_markdown(markdown: str, page: Page, config: Any, files: Files) -> str:
    """Rewrite the links of ``page`` to files (see the module docstring)."""
    name = page.file.src_uri
    source = GENERATED.get(name, DOCS / name)
    page_dir = posixpath.dirname(name)

    def fix(match: re.Match[str]) -> str:
        image, text, target = match.group("image"), match.group("text"), match.group("target")
        if re.match(r"[a-z][a-z0-9+.-]*:|#|/", target):  # a URL, an anchor, a site path
            return match.group(0)
        path, _, anchor = target.partition("#")
        resolved = (source.parent / path).resolve()
        page_name = PAGES_OF.get(resolved)
        if page_name is None and resolved.is_relative_to(DOCS):  # a page, an image...
            page_name = resolved.relative_to(DOCS).as_posix()
        if page_name is not None and files.get_file_from_path(page_name) is not None:
            link = posixpath.relpath(page_name, page_dir or ".")
            return f"{image}[{text}]({link}{'#' + anchor if anchor else ''})"
        where = resolved.relative_to(ROOT).as_posix() if resolved.is_relative_to(ROOT) else path
        return f"{text} (`{where}` in the repository)"

    parts: list[str] = []
    last = 0
    for block in _CODE.finditer(markdown):  # links inside code blocks are left alone
        parts.append(_LINK.sub(fix, markdown[last : block.start()]))
        parts.append(block.group(0))
        last = block.end()
    parts.append(_LINK.sub(fix, markdown[last:]))
    return "".join(parts)
