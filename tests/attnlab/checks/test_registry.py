"""The registry: every checker is exported and catalogued from it, and every mistake it can name has a test.

A test "covers" the pair (checker, mistake) when one test function calls ``C.check_<name>`` and contains the
mistake's name as a string (the ``assert_diagnosis(result, "<mistake>", ...)`` of that test). A topic's own
mistakes must be covered in ``tests/attnlab/checks/test_<topic>.py``; the failures every checker shares (time limit,
input changed in place, wrong type, ...) anywhere in this folder.
"""
import ast
import pathlib

import attnlab.checks as C
from attnlab.checks.catalogue import CATALOGUE, mistake_names, summary
from attnlab.checks.registry import COMMON_MISTAKES, REGISTRY

HERE = pathlib.Path(__file__).parent


def covered_pairs(path: pathlib.Path) -> set:
    tree = ast.parse(path.read_text())
    pairs = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
            checkers = {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute) and n.attr.startswith("check_")}
            strings = {n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
            pairs |= {(c, s) for c in checkers for s in strings}
    return pairs


def test_every_topic_mistake_has_a_test_in_its_topic_file():
    missing = []
    for name, entry in REGISTRY.items():
        test_file = HERE / f"test_{entry.topic}.py"
        assert test_file.exists(), f"{name} is defined in {entry.topic}.py but {test_file.name} does not exist"
        pairs = covered_pairs(test_file).union(*(covered_pairs(p) for p in HERE.glob("test_*.py")))
        missing += [(name, m) for m in entry.mistake_names() if (name, m) not in pairs]
    assert not missing, missing


def test_every_common_failure_has_a_test():
    pairs = set().union(*(covered_pairs(p) for p in HERE.glob("test_*.py")))
    names = {m for _, m in pairs}
    missing = [m.name for m in COMMON_MISTAKES if m.name not in names]
    assert not missing, missing


def test_public_names_and_catalogue_come_from_the_registry():
    public = sorted(name for name in C.__all__ if name.startswith("check_"))
    assert public == sorted(REGISTRY) == sorted(CATALOGUE)
    for name in public:
        assert getattr(C, name) is REGISTRY[name].function
    for name in ("check_softmax", "check_attention", "check_causal_attention", "check_answer", "check_leak_test"):
        assert name in public


def test_catalogue_entries_have_names_and_explanations():
    for checker, mistakes in CATALOGUE.items():
        names = mistake_names(checker)
        assert names and len(names) == len(set(names))
        for mistake in mistakes:
            assert mistake.name and mistake.name == mistake.name.strip()
            assert summary(mistake.explanation).endswith(".")


def test_names_are_unique_within_a_checker_up_to_deliberate_variants():
    """Two entries may share a name only when they explain one mistake in two situations."""
    for entry in REGISTRY.values():
        by_name = {}
        for mistake in entry.mistakes:
            by_name.setdefault(mistake.name, []).append(mistake)
        for name, group in by_name.items():
            assert all(m.model is not None for m in group) or len(group) == 1, (entry.name, name)
