"""esmapper in a Django project.

- ``settings.ESMAPPER`` (checked by :func:`read_config`) says where Elasticsearch is and
  which models the mapper has; ``"esmapper.contrib.django"`` in
  ``INSTALLED_APPS`` checks it at start-up and adds ``manage.py esmapper ...``.
- :func:`get_mapper`: the process's mapper (built on first use, thread-safe, closed at exit).
- :class:`~esmapper.contrib.django.middleware.EsmapperMiddleware` in ``MIDDLEWARE``: one
  session per request, committed before the response is sent when it is not an error,
  rolled back otherwise (the rule every esmapper web integration shares);
  :func:`session` gives it to a view; esmapper errors become 404/409/422 responses.
- :func:`sync`: mirror a Django model into an esmapper model on ``post_save`` /
  ``post_delete``, after the database commit, never leaving a stale document.
- :mod:`esmapper.contrib.django.testing`: a pytest plugin and a ``TestCase`` mixin.

Requires Django 4.2 or later (the ``django`` extra).
"""

from __future__ import annotations

from esmapper.contrib.django._mapper import close_mapper, get_mapper, use_mapper
from esmapper.contrib.django._settings import read_config
from esmapper.contrib.django._sync import Sync, sync
from esmapper.contrib.django.middleware import EsmapperMiddleware, session

__all__ = [
    "EsmapperMiddleware",
    "Sync",
    "close_mapper",
    "get_mapper",
    "read_config",
    "session",
    "sync",
    "use_mapper",
]
