"""Django for esmapper.contrib.django's tests: the package's settings (:mod:`.settings`),
configured here rather than by ``DJANGO_SETTINGS_MODULE``, so that the rest of the suite runs
without Django (pytest-django stays inert until settings exist) and no other process
inherits them."""

from __future__ import annotations

import django
from django.conf import settings

from esmapper.contrib.django.testing import (  # noqa: F401 - the plugin's fixtures
    esmapper_django_mapper,
    esmapper_django_session,
)

from . import settings as test_settings

if not settings.configured:
    settings.configure(
        **{name: getattr(test_settings, name) for name in dir(test_settings) if name.isupper()}
    )
    django.setup()
