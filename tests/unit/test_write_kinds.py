"""One vocabulary of write kinds: ``WriteKind`` names them, ``KINDS`` translates them."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

import esmapper as em
from esmapper import _pending, signals
from esmapper._pending import KINDS, PendingWrite, WriteKind
from esmapper.signals import ChangeType

PACKAGE = Path(_pending.__file__).resolve().parent


def test_every_kind_has_one_row() -> None:
    assert list(KINDS) == list(get_args(WriteKind)) == ["add", "save", "remove", "patch"]


def test_the_table() -> None:
    rows = {k: (w.change_type, w.before, w.after) for k, w in KINDS.items()}
    assert rows == {
        "add": (ChangeType.ADDED, signals.documents_adding, signals.documents_added),
        "save": (ChangeType.SAVED, signals.documents_saving, signals.documents_saved),
        "remove": (ChangeType.REMOVED, signals.documents_removing, signals.documents_removed),
        "patch": (ChangeType.SAVED, None, None),
    }


def test_no_other_module_translates_kinds_by_hand() -> None:
    """A dict literal keyed by write kinds (``{"add": ...}``) outside the table would be a
    second translation: the pipeline reads :data:`KINDS` instead."""
    table = re.compile(r"\{\s*\"add\":\s*(ChangeType|signals)\.")
    offenders = [
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if path.name != "_pending.py" and table.search(path.read_text())
    ]
    assert offenders == []


class _Soft(em.Document, em.SoftDeletes):
    class Index:
        name = "write_kinds_soft"


class _Hard(em.Document):
    is_deleted: bool = False

    class Index:
        name = "write_kinds_hard"


def test_a_save_or_patch_that_soft_deletes_is_a_removal() -> None:
    """One rule for saves and patches: only the false -> true transition, seen against the
    stored original and what was written, is ``REMOVED`` (the soft-delete feature's
    ``change_type`` point); a model without the feature publishes its kind's change."""
    soft, hard = _Soft.__esmapper__, _Hard.__esmapper__  # type: ignore[attr-defined]
    alive, gone = {"is_deleted": False}, {"is_deleted": True}
    for kind in ("save", "patch"):
        write = PendingWrite(kind, None, soft)  # type: ignore[arg-type]
        assert _pending.change_type(write, alive, gone) is ChangeType.REMOVED
        assert _pending.change_type(write, gone, gone) is ChangeType.SAVED
        assert _pending.change_type(write, None, gone) is ChangeType.SAVED
        assert _pending.change_type(write, alive, None) is ChangeType.SAVED
        assert _pending.change_type(write, alive, alive) is ChangeType.SAVED
        hard_write = PendingWrite(kind, None, hard)  # type: ignore[arg-type]
        assert _pending.change_type(hard_write, alive, gone) is ChangeType.SAVED
    assert _pending.change_type(PendingWrite("add", None, soft), alive, gone) is ChangeType.ADDED


def test_a_stored_value_is_read_from_the_original_as_held_without_decoding_bytes() -> None:
    info = None
    held = b'{"a":{"is_deleted":false},"is_deleted":true,"b":[1,{"x":null}]}'
    pending = PendingWrite("save", None, info, original_source=held)  # type: ignore[arg-type]
    assert pending.stored_value("is_deleted") is True
    assert pending.stored_value("missing") is None
    assert pending.original_as_held is held  # nothing decoded
    as_dict = PendingWrite("save", None, info, original_source={"is_deleted": 1})  # type: ignore[arg-type]
    assert as_dict.stored_value("is_deleted") == 1
    assert PendingWrite("add", None, info).stored_value("is_deleted") is None  # type: ignore[arg-type]
    odd = PendingWrite("save", None, info, original_source=b"[1, 2]")  # type: ignore[arg-type]
    assert odd.stored_value("is_deleted") is None  # not an object: decoded, nothing there
