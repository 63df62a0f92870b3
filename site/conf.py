"""Sphinx configuration of the course website (``make site``; sources assembled by site/sitetool.py).

Pages are built from executed notebook copies with execution off; saved widgets are drawn by
_static/widgets-static.js from the stored widget state, so the site loads nothing from outside itself.
"""

project = "How CUDA code becomes fast"
author = "the course's authors"
copyright = "the course's authors"
language = "en"

extensions = ["myst_nb", "sphinx.ext.githubpages"]  # githubpages: writes .nojekyll
root_doc = "index"
exclude_patterns = []

# the notebooks arrive executed (site/executed/, or a CPU run made by sitetool.py at build time)
nb_execution_mode = "off"
nb_merge_streams = True
# instead of require.js and the widget manager from a CDN: the site's own drawing of the saved state
nb_ipywidgets_js = {"widgets-static.js": {}}
myst_enable_extensions = ["colon_fence"]
myst_heading_anchors = 3

html_theme = "sphinx_book_theme"
html_title = "How CUDA code becomes fast"
# ../fonts: the CJK subset font and its licence (course.css names it), shared with the lab
html_static_path = ["_static", "../fonts"]
html_css_files = ["course.css"]
html_copy_source = False
html_show_sourcelink = False
html_theme_options = {
    "home_page_in_toc": True,
    "show_navbar_depth": 1,
    "use_download_button": False,
    "use_fullscreen_button": False,
    "show_toc_level": 2,
}
pygments_style = "sphinx"
# light by default: the course's SVG drawings are made for a white page (the reader can still switch)
html_context = {"default_mode": "light"}
