"""The site's Django settings, from the environment: ``ESMAPPER_URL`` (default
``http://127.0.0.1:9200``), ``ESMAPPER_INDEX_PREFIX``, ``ESMAPPER_REDIS_URL`` (the workers'
shared cache and change notifications) and ``SECRET_KEY`` (one for every worker: the flash
messages are signed cookies). No database: the contacts live in Elasticsearch."""

from __future__ import annotations

import os

from examples.contacts_api.models import DEFAULT_URL

SECRET_KEY = os.environ.get("SECRET_KEY") or "for-the-example-only-set-SECRET_KEY"
DEBUG = os.environ.get("DJANGO_DEBUG") == "1"
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
USE_TZ = True
ROOT_URLCONF = "examples.django_contacts.urls"
INSTALLED_APPS = [
    "django.contrib.messages",
    "esmapper.contrib.django",  # checks ESMAPPER at start-up; manage.py esmapper ...
    "examples.django_contacts",  # its templates
]
MIDDLEWARE = [
    "examples.django_contacts.middleware.name_the_worker",
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    # the request's esmapper session: committed before a successful page is sent
    "examples.django_contacts.middleware.ContactsMiddleware",
]
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]
MESSAGE_STORAGE = "django.contrib.messages.storage.cookie.CookieStorage"
DATABASES: dict[str, dict[str, str]] = {}
ESMAPPER = {
    "url": os.environ.get("ESMAPPER_URL") or DEFAULT_URL,
    "index_prefix": os.environ.get("ESMAPPER_INDEX_PREFIX", ""),
    "redis": os.environ.get("ESMAPPER_REDIS_URL") or None,
    "models": ["examples.contacts_api.models.Contact"],
    "session": {"consistency": "wait"},  # a saved contact is listed on the next page
}
