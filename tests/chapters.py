"""Which chapter of the course each test belongs to.

A test belongs to the chapter of the latest material it uses: a chapter-1
test uses only autograd and the chapter-1 functions, never ``nn.Linear``
(chapter 2) or an optimizer (chapter 3).  So blanking the exercises of
chapter N (``make student CHAPTERS=N-``) leaves every test of the chapters
before N passing, and ``make selftest`` checks exactly that.

Chapter 0 holds what needs no exercise at all: the data sets, the command
line's argument checks, the tooling.  The plugin (tools/course_plugin.py) adds
the marker ``chapterNN`` to every test from the longest matching entry of
``PATHS`` (a file or folder) and ``TESTS`` (one test, overriding its file).
A test file missing here gets no chapter and is named in the summary.
"""

PATHS = {
    "tools/tests/": 0,
    "tests/exercises/test_ch01.py": 1,
    "tests/exercises/test_ch02.py": 2,
    "tests/exercises/test_ch03.py": 3,
    "tests/exercises/test_ch04.py": 4,
    "tests/exercises/test_ch05.py": 5,
    "tests/exercises/test_ch06.py": 6,
    "tests/exercises/test_ch07.py": 7,
    "tests/exercises/test_ch08.py": 8,
    "tests/exercises/test_ch09.py": 9,
}

TESTS = {
}
