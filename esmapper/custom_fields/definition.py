"""``CustomFieldDefinition``: one tenant's custom field of one entity type.

Stored in its own versioned index, ``<prefix>esmapper-custom-fields`` (registered with every
mapper that has a ``HasCustomFields`` model, so ``configure_indexes``/``migrate`` create
it). A definition's id is its slot: ``compose_id(entity_type, tenant_key, index_type,
str(index_slot))``, so creating it (``op_type=create``) *is* reserving the slot, and a
second creator of the same slot gets a conflict (:mod:`esmapper.custom_fields.slots`).

``entity_type``, ``tenant_key``, ``index_type`` and ``index_slot`` are immutable (the id is
made of them); ``name``, ``description``, ``display_order``, ``process_mode``,
``process_order``, ``data`` and ``is_deleted`` may change (a rename keeps the slot, so the
stored values answer to the new name at once).

A rename rewrites no document: the definition keeps its former names (``former_names``,
maintained by the repository's ``save``), the write pipeline finds a document's value under
a former name when the current one is absent and moves it to the current name on the
document's next write (:func:`esmapper.custom_fields.indexing.refresh_idx`). Queries resolve
the current name only. A former name taken by another active definition belongs to that one.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from esmapper._bodies import merged
from esmapper.errors import DocumentValidationError
from esmapper.ids import compose_id
from esmapper.model import Document, HasDates, SoftDeletes, Versioned, field
from esmapper.model.fields import Integer, Keyword, Text
from esmapper.model.partial import check_partial
from esmapper.patches import ActionPatch, JsonPatch, PartialPatch, ScriptPatch

__all__ = [
    "IMMUTABLE_FIELDS",
    "MAX_NAME_LENGTH",
    "PROCESS_MODES",
    "CustomFieldDefinition",
    "apply_patch",
    "check_name",
    "definition_id",
    "remember_former_name",
]

PROCESS_MODES = ("on_value", "always")
MAX_NAME_LENGTH = 128
#: Fields a save may not change (the id is composed from them).
IMMUTABLE_FIELDS = ("entity_type", "tenant_key", "index_type", "index_slot")


class CustomFieldDefinition(Document, HasDates, SoftDeletes, Versioned):
    """A custom field: ``name`` (logical, case-insensitive in queries) of ``tenant_key``'s
    ``entity_type`` documents, held in slot ``idx.<index_type>-<index_slot>``.

    ``process_mode`` is ``"on_value"`` (processed when the document has a value) or
    ``"always"`` (calculated fields: processed even without one, after the ``on_value``
    ones); ``process_order`` orders processing within a mode; ``data`` is for the type
    (e.g. an expression).
    """

    class Index:
        name = "esmapper-custom-fields"
        version = 1
        settings = {"number_of_shards": 1, "auto_expand_replicas": "0-1"}  # noqa: RUF012

    entity_type: str = field(Keyword(), default="")
    tenant_key: str = field(Keyword(), default="")
    name: str = field(Keyword(), default="")
    description: str | None = field(Text(), default=None)
    display_order: int = field(Integer(), default=0)
    process_mode: str = field(Keyword(), default="on_value")
    process_order: int = field(Integer(), default=0)
    index_type: str = field(Keyword(), default="")
    index_slot: int = field(Integer(), default=0)
    data: dict[str, Any] | None = None
    #: the names the field had before its renames (kept by ``save``): documents written
    #: before a rename hold the value under one of them (see the module docstring)
    former_names: list[str] = field(Keyword(), factory=list)

    @property
    def slot_name(self) -> str:
        """The slot's key in ``idx`` (``"int-1"``); its field is ``idx.<slot_name>``."""
        return f"{self.index_type}-{self.index_slot}"


def definition_id(entity_type: str, tenant_key: str, index_type: str, slot: int) -> str:
    """The id of the definition holding ``slot`` (its reservation)."""
    return compose_id(entity_type, tenant_key, index_type, str(slot))


#: What a custom field's name may be: a name the filter language addresses as one field
#: (``Level:5``): letters, digits, ``_`` and ``-``, starting with a letter or a digit
#: (no ``.``: an object path; no spaces, ``:``, ``*`` or other query syntax; no leading
#: ``_``: ``_id``, ``_exists_`` are the language's own).
_NAME = re.compile(r"[^\W_][\w-]*")
#: Lucene's operators: a field named like one cannot be written in a filter.
_OPERATORS = frozenset({"and", "or", "not", "to"})


def check_name(name: Any, *, field: str = "name", new: bool = True) -> str:
    """``name`` if it can name a custom field: a non-empty string of at most 128 characters
    that a filter expression can name as a field (``name:value``): letters, digits, ``_``
    and ``-``, starting with a letter or a digit, not a query operator (``AND``, ``OR``,
    ``NOT``, ``TO``). Raises DocumentValidationError (a ``ValueError``) saying what is
    wrong. ``new=False`` (looking a stored field up, saving it under its stored name) skips
    the filter-language rule: names stored before it came stay usable."""
    if not isinstance(name, str) or not name:
        raise DocumentValidationError(
            f"a custom field needs a name (a non-empty string), got {name!r}", field=field
        )
    if name != name.strip():
        raise DocumentValidationError(
            f"custom field name {name!r} has leading or trailing spaces", field=field
        )
    if len(name) > MAX_NAME_LENGTH:
        raise DocumentValidationError(
            f"custom field name {name[:20]!r}... is {len(name)} characters long; at most "
            f"{MAX_NAME_LENGTH}",
            field=field,
        )
    if any(unicodedata.category(c).startswith("C") for c in name):
        raise DocumentValidationError(
            f"custom field name {name!r} holds control characters", field=field
        )
    if new and (_NAME.fullmatch(name) is None or name.lower() in _OPERATORS):
        raise DocumentValidationError(
            f"custom field name {name!r} cannot be named in a filter expression: use "
            "letters, digits, '_' and '-', starting with a letter or a digit (no '.', "
            "spaces, ':', '*' or a leading '_'), and not AND, OR, NOT or TO",
            field=field,
        )
    return name


def apply_patch(doc: CustomFieldDefinition, patch: Any) -> bool:
    """Apply a Partial/Json/Action patch to a loaded definition; ``False``: no change."""
    info = CustomFieldDefinition.__esmapper__
    if isinstance(patch, ScriptPatch):
        raise TypeError(
            "a ScriptPatch cannot be checked against the custom-field rules; use "
            "PartialPatch, JsonPatch, ActionPatch or save()"
        )
    if isinstance(patch, ActionPatch):
        return patch.apply(doc)
    source = info.to_source(doc)
    if isinstance(patch, PartialPatch):
        new = merged(source, check_partial(info, patch.doc))
    else:
        assert isinstance(patch, JsonPatch)
        import jsonpatch

        new = jsonpatch.JsonPatch(list(patch.operations)).apply(source)
    if new == source:
        return False
    fresh = info.from_source(new, doc.id, doc.version)
    for spec in info.fields:
        if spec.stored and spec.name != "id":
            setattr(doc, spec.name, getattr(fresh, spec.name))
    return True


def remember_former_name(item: CustomFieldDefinition, former: str) -> None:
    """Keep ``former`` among ``item``'s former names (documents written before the rename
    hold their value under it), the current name not among them."""
    names: dict[str, str] = {}
    for name in [*item.former_names, former]:
        if name and name.lower() != item.name.lower():
            names.setdefault(name.lower(), name)
    item.former_names = list(names.values())
