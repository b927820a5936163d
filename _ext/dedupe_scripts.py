"""Workaround for sphinx-doc/sphinx#13402 (``add_js_file(None, body=...)`` after the builder starts
emits the script twice; merged in March 2025, after the 7.x line that Jupyter Book 1 pins: Sphinx
7.4.7 still passes ``None`` where ``init_js_files`` passes ``''``). Remove when the pinned Sphinx
contains #13402 (with Jupyter Book 2).

Drop repeated inline <script> blocks from each page.

With Sphinx 7.4, extensions that register an inline script (``add_js_file(None, body=...)``)
after the builder starts -- sphinx-thebe and sphinx-togglebutton under Jupyter Book -- get it
emitted twice; sphinx-thebe's ``const THEBE_JS_URL`` then throws "Identifier has already been
declared" in every reader's console. Scripts with a file name are left alone.
"""


def _dedupe(app, pagename, templatename, context, doctree):
    seen, kept = set(), []
    for script in context.get("script_files", []):
        body = getattr(script, "attributes", {}).get("body")
        key = body if body and not getattr(script, "filename", "x") else None
        if key is not None and key in seen:
            continue
        if key is not None:
            seen.add(key)
        kept.append(script)
    if "script_files" in context:
        context["script_files"][:] = kept     # in place: the builder shares this list


def setup(app):
    # early: html-page-context is emitted with emit_firstresult, so a handler that returns a
    # template name stops the ones after it
    app.connect("html-page-context", _dedupe, priority=100)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
