"""Show: what a chapter shows of a finished result: ipywidgets (:mod:`.widgets`), tables and plots
(:mod:`.display`), predict-then-trace tasks and timing (:mod:`.lab`), kernel cells generated from
``course/kernels/`` (:mod:`.notebook_cells`).

Each is imported from its module (``from course.show import display, lab``); this package defines nothing.
"""
