"""One write of the pipeline (:class:`PendingWrite`) and the version format it carries."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from esmapper.errors import DocumentValidationError

if TYPE_CHECKING:
    from esmapper.model.info import ModelInfo

__all__ = ["PendingWrite", "split_version"]


@attrs.define(slots=True)
class PendingWrite:
    """One write: ``kind`` is ``add``, ``save``, ``remove`` or ``patch``.

    ``doc`` is the caller's document (``None`` for a patch by id that loaded nothing),
    ``id`` the document id for writes without a document. ``conditional`` is false for
    a removal by id (``remove("id")`` deletes whatever is stored).
    """

    kind: str
    doc: Any
    info: ModelInfo
    id: str | None = None
    conditional: bool = True
    #: condition the write on this version (``"<primary_term>:<seq_no>"``, e.g. what a
    #: by-query scan saw), whatever the model's ``Versioned`` support
    guard: str | None = None
    #: the stored ``_source`` before this write (captured when the pipeline starts)
    original_source: dict[str, Any] | None = None
    #: what the store holds after a confirmed write (the source, merged for partial saves)
    written: dict[str, Any] | None = None

    @property
    def doc_id(self) -> str | None:
        return self.doc.id if self.doc is not None else self.id


def split_version(
    version: str | None, *, owner: str = "", id: str | None = None
) -> tuple[int | None, int | None]:
    """``(seq_no, primary_term)`` of a ``"<primary_term>:<seq_no>"`` version (``None``s for
    no version); a malformed one raises DocumentValidationError naming ``owner``."""
    if not version:
        return None, None
    try:
        term_text, seq_text = version.split(":", 1)
        return int(seq_text), int(term_text)
    except ValueError:
        raise DocumentValidationError(
            f"{owner} {id!r}: version {version!r} is not '<primary_term>:<seq_no>'",
            field="version",
            ids=[id],
        ) from None
