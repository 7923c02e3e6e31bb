"""The Django settings of esmapper.contrib.django's tests (configured by the package's
conftest; ``DJANGO_SETTINGS_MODULE`` for a ``manage.py`` subprocess). Elasticsearch is
``ESMAPPER_URL`` with ``ESMAPPER_INDEX_PREFIX`` (a test's own mapper replaces this one)."""

from __future__ import annotations

import os
import tempfile

_DB = os.path.join(tempfile.gettempdir(), f"esmapper-django-tests-{os.getpid()}.sqlite3")

SECRET_KEY = "esmapper-tests"
DEBUG = False
ALLOWED_HOSTS = ["*"]
USE_TZ = True
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"
INSTALLED_APPS = ["esmapper.contrib.django", "tests.integration.contrib.django.rows"]
MIDDLEWARE = ["esmapper.contrib.django.middleware.EsmapperMiddleware"]
ROOT_URLCONF = "tests.integration.contrib.django.urls"
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ.get("ESMAPPER_DJANGO_TEST_DB", _DB),
        # a file (not memory): the concurrency tests' threads each have a connection
        "TEST": {"NAME": _DB},
        "OPTIONS": {"timeout": 60, "transaction_mode": "IMMEDIATE"},  # writers queue
        "ATOMIC_REQUESTS": True,
    },
    # a second database (the sync tests' multi-database cases)
    "other": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": _DB.replace(".sqlite3", "-other.sqlite3"),
        "TEST": {"NAME": _DB.replace(".sqlite3", "-other.sqlite3")},
        "OPTIONS": {"timeout": 60},
    },
}
ESMAPPER = {
    "url": os.environ.get("ESMAPPER_URL", "http://127.0.0.1:9200"),
    "index_prefix": os.environ.get("ESMAPPER_INDEX_PREFIX", ""),
    "models": [
        "tests.integration.contrib.django.documents.Note",
        "tests.integration.contrib.django.documents.RowDoc",
    ],
    "session": {"consistency": "wait"},
}
