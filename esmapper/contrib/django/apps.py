"""The Django app of esmapper: add ``"esmapper.contrib.django"`` to ``INSTALLED_APPS``.

It checks ``settings.ESMAPPER`` when Django starts (an ``ImproperlyConfigured`` naming the
bad key, before anything is served or sent) and brings the ``esmapper`` management command
(``manage.py esmapper migrate``, ``manage.py esmapper status``, ...).
"""

from __future__ import annotations

from django.apps import AppConfig

from esmapper.contrib.django._mapper import get_config

__all__ = ["EsmapperConfig"]


class EsmapperConfig(AppConfig):
    """``esmapper.contrib.django``'s app config (label ``esmapper``)."""

    name = "esmapper.contrib.django"
    label = "esmapper"
    verbose_name = "esmapper"

    def ready(self) -> None:
        get_config()
