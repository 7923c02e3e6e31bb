"""Old location of :mod:`esmapper.indexes._occupied`, an implementation module (private: see
"Public and private modules" in docs/architecture.md); it re-exports the names so imports
of ``esmapper.indexes.occupied`` keep working. Import from the package instead."""

from esmapper.indexes._occupied import *  # noqa: F403 - its __all__ is this module's
from esmapper.indexes._occupied import __all__ as __all__  # noqa: PLC0414 - re-exported
