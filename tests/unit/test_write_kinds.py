"""One vocabulary of write kinds: ``WriteKind`` names them, ``KINDS`` translates them."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

from esmapper import _pending, signals
from esmapper._pending import KINDS, WriteKind
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


class _Info:
    def __init__(self, soft_deletes: bool) -> None:
        self.soft_deletes = soft_deletes


def test_a_save_or_patch_that_soft_deletes_is_a_removal() -> None:
    """One rule for saves and patches: only the false -> true transition, seen against the
    stored original, is ``REMOVED``."""
    soft, hard = _Info(True), _Info(False)
    alive, gone = {"is_deleted": False}, {"is_deleted": True}
    for kind in ("save", "patch"):
        assert _pending.change_type(kind, soft, alive, True) is ChangeType.REMOVED  # type: ignore[arg-type]
        assert _pending.change_type(kind, soft, gone, True) is ChangeType.SAVED  # type: ignore[arg-type]
        assert _pending.change_type(kind, soft, None, True) is ChangeType.SAVED  # type: ignore[arg-type]
        assert _pending.change_type(kind, soft, alive, False) is ChangeType.SAVED  # type: ignore[arg-type]
        assert _pending.change_type(kind, hard, alive, True) is ChangeType.SAVED  # type: ignore[arg-type]
    assert _pending.change_type("add", soft, alive, True) is ChangeType.ADDED  # type: ignore[arg-type]
