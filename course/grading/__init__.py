"""The grader's parts (:mod:`course.grading.grade` is its command line and orchestration): :mod:`.source`
(reading and compiling a submission's code), :mod:`.notebook` (running it in a box), :mod:`.roster` (the
submissions folder)."""
