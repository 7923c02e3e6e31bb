from tests.integration.indexes.conftest import FakeClock, MakeMapper, make_mapper  # noqa: F401
