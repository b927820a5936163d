"""No page asserts on a time it measured (bookbuild.lint.timing): the rule on examples, then on every page."""
import pytest

from bookbuild.lint import timing
from bookbuild.pages import pages


def found(*cells: str) -> list[int]:
    return [line for line, _code in timing.measured_time_assertions([(1, c) for c in cells])]


def test_an_assert_on_a_timer_result_is_found_through_names_and_cells():
    assert found("t = bench.median_time(f)\nassert t < 1") == [2]
    assert found("t0 = time.perf_counter()\nf()\nelapsed = time.perf_counter() - t0", "assert elapsed < 0.5") == [1]
    assert found("times = bench.interleaved_times(cases)\nfast = min(times['a'])",
                 "np.testing.assert_array_less(fast, 1.0)") == [1]


def test_a_table_of_measurements_is_followed_through_appends_and_dataframes():
    cell = '''
rows = []
for T in (1, 2):
    t = bench.median_time(f)
    rows.append({"T": T, "time (ms)": 1e3 * t, "peak memory (MiB)": m})
live = pd.DataFrame(rows)
speed = live.set_index("T")["time (ms)"]
memory = live.set_index("T")["peak memory (MiB)"]
assert memory[2] > memory[1]
assert speed[2] > speed[1]
'''
    assert found(cell) == [10]


def test_a_function_of_the_page_that_times_is_a_timer():
    cell = '''
def median_times(cases):
    t0 = time.perf_counter()
    return {n: time.perf_counter() - t0 for n in cases}
med = median_times(cases)
ratio = med["a"] / med["b"]
'''
    assert found(cell, "assert ratio > 1") == [1]


def test_deterministic_quantities_and_rebound_names_may_be_asserted():
    assert found("t = bench.median_time(f)\nprint(t)\nt = 3\nassert t == 3") == []
    assert found("gqa = bench.interleaved_times(c)", "gqa, mha = 2 * S, 4 * S\nassert gqa < mha") == []
    assert found("n = traffic.naive_bytes(1, 8, T, T, 64)\nassert n == 4 * T * T") == []
    assert found("t = bench.median_time(f)\nif t > 1:\n    print('slow')") == []


@pytest.mark.parametrize("page", pages(), ids=lambda p: p.stem)
def test_no_page_asserts_on_a_measured_time(page):
    assert [str(f) for f in timing.lint(page)] == []
