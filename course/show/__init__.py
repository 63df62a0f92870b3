"""Show: what a chapter shows of a finished result: ipywidgets (:mod:`.widgets`), tables and plots
(:mod:`.display`), predict-then-trace tasks, traced launches and timing (:mod:`.lab`), recorded runs looked
up (:mod:`.lookup`), kernel cells generated from ``course/kernels/`` (:mod:`.notebook_cells`).

Each is imported from its module (``from course.show import display, lab``); this package defines nothing.
"""
