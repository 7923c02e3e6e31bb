"""esmapper: a synchronous, ORM-style document mapper for Elasticsearch."""

from esmapper._version import __version__
from esmapper.errors import (
    BulkItemFailure,
    BulkWriteError,
    DocumentError,
    DocumentNotFoundError,
    DocumentValidationError,
    DuplicateDocumentError,
    EsmapperError,
    IdTooLongError,
    IndexConfigurationError,
    InvalidIdTermError,
    LockError,
    MigrationError,
    QueryValidationError,
    VersionConflictError,
)

__all__ = [
    "BulkItemFailure",
    "BulkWriteError",
    "DocumentError",
    "DocumentNotFoundError",
    "DocumentValidationError",
    "DuplicateDocumentError",
    "EsmapperError",
    "IdTooLongError",
    "IndexConfigurationError",
    "InvalidIdTermError",
    "LockError",
    "MigrationError",
    "QueryValidationError",
    "VersionConflictError",
    "__version__",
]
