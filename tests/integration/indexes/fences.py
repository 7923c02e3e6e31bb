"""The fence alias rule, checked wherever a test lists the aliases of its indexes."""

from __future__ import annotations

from collections.abc import Iterable

from esmapper.indexes.spec import fence_name, is_fence


def without_fence(index: str, aliases: Iterable[str]) -> list[str]:
    """``aliases`` of the physical ``index``, sorted, without its fence alias, once the
    fence rule is checked: an index holding a model alias (it serves the model) carries
    its own fence alias and no other fence; an index holding none carries no fence (a
    reindex's swap removed it)."""
    names = sorted(aliases)
    fences = [a for a in names if is_fence(a)]
    others = [a for a in names if not is_fence(a)]
    assert fences == ([fence_name(index)] if others else []), (index, names)
    return others
