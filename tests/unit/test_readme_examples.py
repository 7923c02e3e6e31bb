"""The README's self-contained Python blocks run as printed.

Blocks that need a server or an application (``mapper = em.Mapper("http://...")``, Flask)
are not listed; each section named here has only blocks that run on their own.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
RUNNABLE_SECTIONS = ["### Embedded objects and nested lists"]


def python_blocks(section: str) -> list[str]:
    text = README.read_text(encoding="utf-8")
    start = text.index(f"\n{section}\n")
    following = re.search(r"\n#{2,3} ", text[start + len(section) + 2 :])
    end = len(text) if following is None else start + len(section) + 2 + following.start()
    return re.findall(r"```python\n(.*?)```", text[start:end], flags=re.DOTALL)


@pytest.mark.parametrize("section", RUNNABLE_SECTIONS)
def test_the_blocks_of_the_section_run_as_printed(section: str) -> None:
    blocks = python_blocks(section)
    assert blocks, f"no Python block under {section!r}"
    namespace: dict[str, object] = {"__name__": "readme_example"}
    for block in blocks:
        exec(compile(block, f"README.md {section}", "exec"), namespace)
