"""esmapper.testing: the Elasticsearch the tests use, and a pytest plugin for users."""
