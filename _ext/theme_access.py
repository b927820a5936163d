"""The theme's own controls, named as they read (``_assets/theme-access.js``, see its header)."""


def setup(app):
    app.add_js_file("theme-access.js", loading_method="defer")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
