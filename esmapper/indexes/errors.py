"""Errors of index management; defined in :mod:`esmapper.errors`, re-exported here."""

from esmapper.errors import IndexMaxAgeExceededError, ReindexError

__all__ = ["IndexMaxAgeExceededError", "ReindexError"]
