"""Old location of :mod:`esmapper.indexes._lookup`, an implementation module (private: see
"Public and private modules" in docs/architecture.md); it re-exports the names so imports
of ``esmapper.indexes.lookup`` keep working. Import from the package instead."""

from esmapper.indexes._lookup import *  # noqa: F403 - its __all__ is this module's
from esmapper.indexes._lookup import __all__ as __all__  # noqa: PLC0414 - re-exported
