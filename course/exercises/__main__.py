"""``python -m course.exercises build [--check] | list``."""

import sys

from course.exercises.build import main

sys.exit(main())
