"""Sphinx extension: drop repeated <script> entries from each page.

Jupyter Book 1.x registers sphinx-thebe's and sphinx-togglebutton's inline set-up scripts twice, so every page declares
``const THEBE_JS_URL`` twice and the browser reports ``Uncaught SyntaxError: Identifier 'THEBE_JS_URL' has already
been declared`` (found by the headless-browser check of tests/test_browser.py). The first of equal entries is kept.
"""

from __future__ import annotations


def _key(script) -> tuple:
    if isinstance(script, str):
        return (script, ())
    attrs = tuple(sorted((k, str(v)) for k, v in script.attributes.items()))
    return (script.filename or "", attrs)  # None and "" both mean inline; priority aside: the same script at two priorities is still one script


def _dedupe(app, pagename, templatename, context, doctree):
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, kept = set(), []
    for s in scripts:
        k = _key(s)
        if k not in seen:
            seen.add(k)
            kept.append(s)
    context["script_files"] = kept


def setup(app):
    app.connect("html-page-context", _dedupe, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
