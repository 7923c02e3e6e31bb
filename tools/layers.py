"""The layers of the esmapper package, lowest first, as docs/architecture.md's table
("The layers") states them: that table is the one place they are written down.

A module of a layer may import (and call into) the modules of its own layer and of the
layers below; a call or an import from a lower layer into a higher one "climbs back up".
``tools/flow_trace.py`` counts such climbs along a followed parameter, and
``tests/unit/test_layers.py`` checks every import of the package against the same table.

A row lists module patterns: ``esmapper.x`` is that module, ``esmapper.x.*`` the package
and every module under it; a module named on its own wins over its package's row, a deeper
package over a shallower one. A module no pattern matches is an error: a new module is
placed in the table when it is written.
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["ARCHITECTURE", "LAYERS", "layer_name", "layer_of", "matches"]

ARCHITECTURE = Path(__file__).resolve().parent.parent / "docs" / "architecture.md"


def _read() -> list[tuple[str, list[str]]]:
    """``(layer name, module patterns)`` of the table, lowest first."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    section = text.split("## The layers", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].isdigit():
            rows.append((int(cells[0]), cells[1], re.findall(r"`([\w.*]+)`", cells[2])))
    if [n for n, _, _ in rows] != list(range(1, len(rows) + 1)):
        raise ValueError(f"{ARCHITECTURE}: the layers must be numbered 1..n")
    return [(name.split(":")[0].strip(), patterns) for _, name, patterns in rows]


#: ``(layer name, module patterns)``, lowest layer first.
LAYERS: list[tuple[str, list[str]]] = _read()


def matches(module: str, pattern: str) -> bool:
    """Whether ``pattern`` (``esmapper.x`` or ``esmapper.x.*``) names ``module``."""
    if pattern.endswith(".*"):
        stem = pattern[:-2]
        return module == stem or module.startswith(stem + ".")
    return module == pattern


def _specificity(pattern: str) -> tuple[int, int]:
    return (0 if pattern.endswith(".*") else 1, pattern.count("."))


def layer_of(module: str) -> int:
    """The rank of ``module``'s layer (0: the lowest). Raises ``KeyError`` for a module of
    no layer (not esmapper's, or not placed in the table yet)."""
    best: tuple[tuple[int, int], int] | None = None
    for number, (_, patterns) in enumerate(LAYERS):
        for pattern in patterns:
            if matches(module, pattern):
                rank = _specificity(pattern)
                if best is None or rank > best[0]:
                    best = (rank, number)
    if best is None:
        raise KeyError(f"{module!r} is in no layer of docs/architecture.md")
    return best[1]


def layer_name(module: str) -> str:
    """The name of ``module``'s layer (``"indexes"``)."""
    return LAYERS[layer_of(module)][0]
