"""The explorers for keyboard and screen-reader users: ``_assets/explorer-access.js`` names the
sliders' handles, marks pressed toggle buttons and gives each explorer a live region that announces
the reading of the frame on show (see the script's header)."""


def setup(app):
    app.add_js_file("explorer-access.js", loading_method="defer")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
