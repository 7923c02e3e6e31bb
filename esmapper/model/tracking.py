"""Old location of :mod:`esmapper.model._tracking`, an implementation module (private: see
"Public and private modules" in docs/architecture.md); it re-exports the names so imports
of ``esmapper.model.tracking`` keep working. Import from the package instead."""

from esmapper.model._tracking import *  # noqa: F403 - its __all__ is this module's
from esmapper.model._tracking import __all__ as __all__  # noqa: PLC0414 - re-exported
