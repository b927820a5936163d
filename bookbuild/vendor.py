"""Copy the JavaScript the HTML book needs into _vendor/ (served under _static/), so it reads offline.

- MathJax 3 (with its fonts) from the PyPI package django-static-mathjax -> _vendor/mathjax
- require.js and @jupyter-widgets/html-manager's embed-amd.js (for widget pages) from the
  npm registry -> _vendor/widgets (fetched once with `npm pack`, licences copied alongside)
- Pyodide and the wheels the "Run the code" mode needs -> _vendor/pyodide (bookbuild/vendor_pyodide.py)
- for the browser tests only, axe-core (the accessibility audit) -> _build/test-vendor/axe,
  fetched the same way by the test that needs it (``vendor_axe``); the book never serves it

Run before every HTML build (``bookbuild.editions.prepare``); idempotent and quick when the files are
already there.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STATIC = ROOT / "_vendor"   # not _static: Jupyter Book adds every .js file in _static to every page
NPM_PACKAGES = {  # package@version -> {path prefix in the tarball's package/: name under _vendor/widgets}
    # require.js (MIT, see its package.json)
    "requirejs@2.3.8": {"require.js": "require.min.js", "package.json": "requirejs.package.json"},
    # embed-amd.js with the fonts it loads beside it (BSD-3-Clause, see its package.json)
    "@jupyter-widgets/html-manager@1.0.15": {"dist/": "", "package.json": "html-manager.package.json"},
}
# the audit of tests/build/test_a11y_browser.py (MPL-2.0), injected into each page by the test
AXE = ("axe-core@4.14.1", {"axe.min.js": "axe.min.js", "LICENSE": "LICENSE", "package.json": "package.json"})
TEST_VENDOR = ROOT / "_build" / "test-vendor"


def vendor_mathjax() -> None:
    import mathjax  # the django-static-mathjax package

    src = Path(mathjax.__file__).parent / "static" / "mathjax" / "es5"
    dest = STATIC / "mathjax"
    if (dest / "tex-chtml.js").exists():
        return
    shutil.copytree(src, dest, dirs_exist_ok=True)


def npm_files(spec: str, files: dict[str, str], dest: Path) -> None:
    """``npm pack spec`` and copy ``files`` (path prefix in the tarball's package/: name in ``dest``)."""
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run(["npm", "pack", spec, "--silent"], cwd=tmp, check=True,
                             capture_output=True, text=True).stdout.strip().splitlines()[-1]
        with tarfile.open(Path(tmp) / out) as tar:
            for inner, name in files.items():
                members = [m for m in tar.getmembers() if m.isfile() and m.name.startswith(f"package/{inner}")
                           and not m.name.endswith(".map")]
                if not members:
                    sys.exit(f"{spec} has no {inner}")
                for m in members:
                    target = dest / (name or m.name.removeprefix(f"package/{inner}"))
                    target.write_bytes(tar.extractfile(m).read())


def vendor_npm() -> None:
    dest = STATIC / "widgets"
    if (dest / "embed-amd.js").exists() and (dest / "require.min.js").exists():
        return
    for spec, files in NPM_PACKAGES.items():
        npm_files(spec, files, dest)


def vendor_axe() -> Path:
    """axe.min.js for the browser tests (``_build/test-vendor/axe/``); fetched once from npm."""
    spec, files = AXE
    dest = TEST_VENDOR / "axe"
    script = dest / "axe.min.js"
    version = dest / "VERSION"
    if not (script.exists() and version.exists() and version.read_text() == spec):
        npm_files(spec, files, dest)
        version.write_text(spec)
    return script


def main() -> None:
    from .vendor_pyodide import vendor_pyodide
    vendor_mathjax()
    vendor_npm()
    vendor_pyodide()
    print(f"vendored assets in {STATIC.relative_to(ROOT)}/")


if __name__ == "__main__":
    main()
