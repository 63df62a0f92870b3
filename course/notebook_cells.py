"""``python -m course.notebook_cells sync|check|show``: the kernel cells' documented command (each
kernel cell names it). The tool is :mod:`course.show.notebook_cells`; this stub only runs it, and defines no names."""

if __name__ == "__main__":
    import runpy

    runpy.run_module("course.show.notebook_cells", run_name="__main__", alter_sys=True)
