"""The Django model the sync tests mirror into Elasticsearch."""

from __future__ import annotations

import random
import threading

from django.db import models

#: Set by a test: every read of rows waits a little before it (random, up to 10 ms) and
#: after it (up to 50 ms), widening the windows in which another writer's commit can fall.
JITTER = threading.Event()


def _jitter(longest: float) -> None:
    if JITTER.is_set():
        threading.Event().wait(random.random() * longest)


class JitteryQuerySet(models.QuerySet):  # type: ignore[type-arg]
    def _fetch_all(self) -> None:
        _jitter(0.01)
        super()._fetch_all()
        _jitter(0.05)


class Row(models.Model):
    title = models.CharField(max_length=100, default="")
    counter = models.IntegerField(default=0)
    hidden = models.BooleanField(default=False)

    objects = models.Manager()
    jittery = JitteryQuerySet.as_manager()

    class Meta:
        app_label = "rows"
        base_manager_name = "jittery"  # what sync reads rows with


class ProxyRow(Row):
    """A proxy of :class:`Row`: its saves and deletes are ``Row``'s rows."""

    class Meta:
        app_label = "rows"
        proxy = True


class SpecialRow(Row):
    """A multi-table child of :class:`Row`: saving one saves a ``Row`` row too."""

    note = models.CharField(max_length=100, default="")

    class Meta:
        app_label = "rows"


class Unrelated(models.Model):
    """A model no sync follows: its deletes stay fast (no signal receiver)."""

    name = models.CharField(max_length=100, default="")

    class Meta:
        app_label = "rows"
