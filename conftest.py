"""Settings for every pytest run from the repository, the chapter notebooks' too (``pytest --nbval book/…``): the
notebooks run both frameworks, as in the book and in ``make test``, not the single framework a live kernel runs by
default. The tests' own set-up is ``tests/conftest.py``."""

import os

os.environ.setdefault("COURSE_FRAMEWORKS", "both")
