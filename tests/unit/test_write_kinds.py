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
