from __future__ import annotations

from tests.integration.custom_fields.conftest import fields, mapper, repo  # noqa: F401
