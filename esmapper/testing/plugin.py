"""pytest plugin: fixtures for an Elasticsearch server (being built)."""
