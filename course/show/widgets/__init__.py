"""Widgets that draw finished results: the bank-mapping explorer and the traced-warp view (chapter 04).

They are imported from their modules (``from course.show.widgets.banks import bank_explorer``) so that
importing :mod:`course` never pulls in ipywidgets.
"""
