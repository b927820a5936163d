"""attnlab's message language: English by default, Chinese on request, errors unchanged."""
import subprocess
import sys

import pytest

from attnlab import i18n


@pytest.fixture(autouse=True)
def english_afterwards():
    yield
    i18n.set_language("en")


def test_english_is_the_default_and_returns_the_message_itself():
    assert i18n.get_language() == "en"
    assert i18n._("not attempted yet") == "not attempted yet"


def test_unknown_language_is_refused_by_name():
    with pytest.raises(ValueError, match="language must be one of en, zh_CN; got 'fr'"):
        i18n.set_language("fr")


def test_aliases_select_chinese():
    i18n.set_language("zh")
    assert i18n.get_language() == "zh_CN"


def test_environment_variable_selects_the_language_at_import():
    code = "import attnlab.i18n as i; print(i.get_language())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={"ATTNLAB_LANG": "zh_CN.UTF-8", "PATH": ""}, check=True)
    assert out.stdout.strip() == "zh_CN"


def test_a_bad_environment_value_warns_and_keeps_english():
    code = "import attnlab.i18n as i; print(i.get_language())"
    out = subprocess.run([sys.executable, "-W", "always", "-c", code], capture_output=True, text=True,
                         env={"ATTNLAB_LANG": "xx", "PATH": ""}, check=True)
    assert out.stdout.strip() == "en"
    assert "ATTNLAB_LANG='xx' is not one of en, zh_CN" in out.stderr
