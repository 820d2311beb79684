"""Project-wide pytest setup. Markers are registered in pyproject.toml (pytest runs with
--strict-markers, so an unregistered or misspelt marker is an error)."""
