"""tools/code_lines: how the lines of a source are told apart (code, documentation, blank)."""

from __future__ import annotations

from tools.code_lines import Lines, count

SOURCE = '''"""A module docstring
over two lines."""

import os  # a trailing comment makes no documentation line


def f(
    a: int,
) -> int:
    """One line of docstring."""
    # a comment alone on its line
    return a + len(
        os.sep
    )
'''


def test_code_documentation_and_blank_lines_are_told_apart() -> None:
    counted = count(SOURCE)
    assert counted.total == 14
    # import, def over three lines, return over three lines
    assert counted.code == 7
    # the module docstring (2), the function's (1), the lone comment (1)
    assert counted.doc == 4


def test_counts_add_and_subtract() -> None:
    assert Lines(3, 2, 1) + Lines(1, 1, 0) == Lines(4, 3, 1)
    assert Lines(3, 2, 1) - Lines(1, 1, 0) == Lines(2, 1, 1)
