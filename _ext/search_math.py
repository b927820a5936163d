"""Search results show formulas as text ("α(1−α)"), not as their TeX source ("\\(\\alpha(1-\\alpha)").

Sphinx builds each result's snippet from the text of the page, where MathJax has not run, so
the snippet would quote the raw TeX. ``_assets/search-math.js`` wraps the search page's
``Search.htmlToText`` and rewrites every ``.math`` element into plain text first.
"""


def setup(app):
    app.add_js_file("search-math.js", loading_method="defer")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
