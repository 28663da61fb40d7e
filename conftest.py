"""Root conftest: the course's pytest plugin (chapter and exercise markers,
``--chapter`` / ``--exercise`` selection, the progress table; see tools/course_plugin.py),
and in a student copy the warning when a file of the course was changed (tools/release.py)."""
pytest_plugins = ["tools.course_plugin", "tools.release"]
