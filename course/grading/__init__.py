"""The grader's parts (:mod:`course.grading.grade` is its orchestration, :mod:`.cli` its command line, :mod:`.gradebook`
what instructors do with the results): :mod:`.source`
(reading and compiling a submission's code), :mod:`.notebook` (running it in a box), :mod:`.roster` (the
submissions folder)."""
