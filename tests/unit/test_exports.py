"""The public face of the package: ``esmapper.__all__`` is sorted and complete."""

from __future__ import annotations

import types

import esmapper as em

#: Private-looking names that are public all the same.
_DUNDER_EXPORTS = {"__version__"}
#: Submodules that are part of the public face as modules (``em.signals.entity_changed``).
_MODULE_EXPORTS = {"signals"}


def _public_names() -> set[str]:
    """Every name ``esmapper/__init__.py`` binds for its users: not private, and not a
    submodule bound as a side effect of importing it."""
    return {
        name
        for name, value in vars(em).items()
        if (not name.startswith("_") or name in _DUNDER_EXPORTS)
        and (not isinstance(value, types.ModuleType) or name in _MODULE_EXPORTS)
    }


def test_all_is_sorted_without_duplicates() -> None:
    assert em.__all__ == sorted(set(em.__all__))


def test_all_lists_every_public_name_and_nothing_else() -> None:
    assert set(em.__all__) == _public_names()


def test_every_exported_name_resolves() -> None:
    for name in em.__all__:
        assert getattr(em, name) is not None, name
