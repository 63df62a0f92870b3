"""The race checker's validation suite, by race kind; :mod:`course.validation.race_suite` gathers the cases."""
