"""Root conftest: the course's pytest plugin (chapter and exercise markers,
``--chapter`` / ``--exercise`` selection, the progress table); see tools/course_plugin.py."""
pytest_plugins = ["tools.course_plugin"]
