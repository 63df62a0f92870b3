"""Placeholder: the CPU engine lands here (issue 3)."""


def install():
    pass
