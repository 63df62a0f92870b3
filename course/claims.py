"""``python -m course.claims check``: the claims ledger's documented command. The ledger is
:mod:`course.measure.claims`; this stub only runs it, and defines no names."""

if __name__ == "__main__":
    import runpy

    runpy.run_module("course.measure.claims", run_name="__main__", alter_sys=True)
