"""One process of the two-process sync test: ``python -m tests.integration.contrib.django.saver
PK ROUNDS NAME`` saves row ``PK`` ``ROUNDS`` times (``NAME`` ``delete``: deletes and creates
it again instead), mirrored by ``sync`` into ``RowDoc``, the reads of rows widened by the
jitter. The environment gives ``DJANGO_SETTINGS_MODULE``, ``ESMAPPER_DJANGO_TEST_DB`` (the
test's database), ``ESMAPPER_URL`` and ``ESMAPPER_INDEX_PREFIX``."""

from __future__ import annotations

import sys

import django


def main(pk: int, rounds: int, name: str) -> None:
    django.setup()
    from django.db import transaction

    from esmapper.contrib.django import sync

    from .documents import RowDoc
    from .rows.models import JITTER, Row

    sync(Row, to=RowDoc, convert=lambda row: RowDoc(title=row.title, counter=row.counter))
    JITTER.set()
    for round in range(rounds):
        with transaction.atomic():
            if name == "delete":
                Row.objects.filter(pk=pk).delete()
                Row.objects.create(pk=pk, title=f"{name}{round}", counter=-round)
            else:
                row, _ = Row.objects.select_for_update().get_or_create(pk=pk)
                row.counter += 1
                row.title = f"{name}{round}"
                row.save()
        if name == "delete" and round % 2:  # every other round, gone for a while
            Row.objects.filter(pk=pk).delete()


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3])
