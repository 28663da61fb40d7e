"""The graded exercises' own tests: one file per chapter, each test marked
``@pytest.mark.exercise("N.M")``.

They call the exercise's function as directly as they can (a Function's
``backward`` on raw arrays, an optimizer's ``step`` on a hand-set ``.grad``),
so that a test fails only because of its own exercise or an earlier one, and
their failure messages say what is wrong in the course's terms.
"""
