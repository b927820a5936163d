"""The grader's channel to a student's process: plain data only, references rebuilt, text scrubbed.

What crosses from the student's process is decoded without running anything of theirs (no
pickle, no object): numbers, arrays, tensors, containers, and other objects by their type's name
only; a forged or oversized message is refused. What the grader hands over by reference (a
checker's closure, a generator, an ``nn.MultiheadAttention``) comes out equal on the other side.
"""
import fractions
import io
import os
import pickle
import struct

import numpy as np
import pytest
import torch

from attnlab.checks import causal, structure
from attnlab.checks.forbidden import recording
from attnlab.grading import references, wire
from attnlab.grading.scrub import scrub


def plain(value):
    """What the grader reads of ``value`` sent by a student's process."""
    data, blobs = wire.encode(value)
    return wire.decode(data, blobs)


def by_reference(value):
    """What a student's process rebuilds of ``value`` sent by the grader."""
    data, blobs = wire.encode(value, references.encode_reference)
    return wire.decode(data, blobs, references.rebuild)


def test_data_comes_back_equal_with_its_types():
    value = {"a": (1, 2.5, float("nan"), [np.float32(3), np.True_]), 3: {1, 2}, "big": 10**30, "b": b"\x00",
             "f": fractions.Fraction(1, 3), "c": 1 + 2j, "x": np.arange(6).reshape(2, 3), "e": ...}
    back = plain(value)
    assert back["a"][0] == 1 and np.isnan(back["a"][2]) and isinstance(back["a"], tuple)
    assert type(back["a"][3][0]) is np.float32 and back["a"][3][1] is np.True_
    assert back[3] == {1, 2} and back["big"] == 10**30 and back["f"] == fractions.Fraction(1, 3)
    assert back["b"] == b"\x00" and back["c"] == 1 + 2j and back["e"] is Ellipsis
    assert np.array_equal(back["x"], value["x"]) and back["x"].dtype == value["x"].dtype


def test_tensors_keep_dtype_shape_and_flags():
    t = torch.ones(2, 3, dtype=torch.bfloat16, requires_grad=True)
    back = plain(t)
    assert back.dtype == torch.bfloat16 and back.shape == (2, 3) and back.requires_grad
    meta = plain(torch.empty(4, device="meta"))
    assert meta.device.type == "meta" and meta.shape == (4,)
    assert isinstance(plain(torch.nn.Parameter(torch.zeros(2))), torch.nn.Parameter)


def test_other_objects_cross_by_the_name_of_their_type_only():
    class Sneaky:
        def __reduce__(self):
            raise AssertionError("never pickled")

    back = plain([Sneaky(), lambda x: x, (i for i in range(3)), np.array(["a"])])
    assert type(back[0]).__name__ == "Sneaky" and not callable(back[0])
    assert callable(back[1]) and type(back[1]).__name__ == "function"
    assert list(back[2]) == []                               # a generator, empty
    assert type(back[3]).__name__ == "ndarray" and not isinstance(back[3], np.ndarray)


def test_the_grader_refuses_references_pickles_and_forged_messages():
    data, blobs = wire.encode(np.cumsum, references.encode_reference)
    with pytest.raises(wire.ChannelError, match="does not accept"):
        wire.decode(data, blobs)                             # a student's process cannot name code
    buffer = io.BytesIO()
    np.save(buffer, np.array([object()], dtype=object), allow_pickle=True)
    with pytest.raises(wire.ChannelError):
        wire.decode({"$array": 0}, [buffer.getvalue()])      # pickled object arrays are not read
    with pytest.raises(wire.ChannelError):
        wire.decode({"$array": 0}, [pickle.dumps(np.arange(3))])
    with pytest.raises(wire.ChannelError):
        wire.decode({"$array": 5}, [])
    nested = 1.0
    for _ in range(100):
        nested = [nested]
    with pytest.raises(wire.ChannelError, match="deep"):
        wire.decode(nested, [])


def test_framing_refuses_garbage_and_oversized_messages():
    for data in (b"\xff\xff\xff\xff", struct.pack(">I", 5) + b"nope!", struct.pack(">I", 2) + b"[]",
                 struct.pack(">I", 30) + b'{"blobs": [999999999999], "x":1}'):
        read, write = os.pipe()
        os.write(write, data)
        os.close(write)
        with pytest.raises(wire.ChannelError):
            wire.Reader(read).read()
        os.close(read)
    read, write = os.pipe()
    with pytest.raises(wire.ChannelTimeout):
        wire.Reader(read).read(deadline=0)
    os.close(read)
    os.close(write)


def test_a_checkers_closures_generators_and_modules_are_rebuilt_equal():
    x = np.random.default_rng(0).normal(size=(8, 4))
    for _name, attn, _leaks in causal._probes():                # closures over arrays and lambdas
        assert np.array_equal(by_reference(attn)(x), attn(x))
    for _name, f, _expected, _seed in structure._probes():
        assert np.array_equal(by_reference(f)(x), f(x))
    rng = np.random.default_rng(3)
    rng.normal()
    assert by_reference(rng).normal() == rng.normal()        # the state travels, not the seed
    gen = torch.Generator().manual_seed(5)
    assert torch.equal(torch.randn(3, generator=by_reference(gen)), torch.randn(3, generator=gen))
    mha = torch.nn.MultiheadAttention(8, 2, batch_first=True)
    xt = torch.randn(2, 5, 8)
    assert torch.equal(by_reference(mha)(xt, xt, xt)[0], mha(xt, xt, xt)[0])
    assert by_reference(torch) is torch and by_reference(torch.float16) is torch.float16


def test_student_text_is_cut_to_one_scrubbed_line():
    os.environ["ATTNLAB_TEST_SECRET_NAME"] = "x"
    try:
        from attnlab.grading import scrub as module
        module._names.cache_clear()
        text = scrub("see /work/course/solutions/sol01.md and ~/x/y, $HOME, ATTNLAB_TEST_SECRET_NAME\nline 2")
    finally:
        del os.environ["ATTNLAB_TEST_SECRET_NAME"]
        module._names.cache_clear()
    assert text == "see <path> and <path>, <name>, <name>"
    assert scrub("operands could not be broadcast together with shapes (3,4) (3,)").endswith("(3,4) (3,)")
    assert len(scrub("x" * 1000)) == 160


def test_recording_finds_forbidden_entry_points_under_any_name():
    from torch.nn.functional import scaled_dot_product_attention as sdpa
    namespace = {"sdpa": sdpa}
    q = torch.randn(1, 2, 3)
    name = "torch.nn.functional.scaled_dot_product_attention"
    with recording([name, "numpy.einsum"], [namespace]) as called:
        namespace["sdpa"](q, q, q)
    assert called == [name]
    with recording([name], []) as called:
        torch._C._nn.scaled_dot_product_attention(q, q, q)    # another name: the torch function mode sees it
        np.einsum("ij->i", np.ones((2, 2)))
    assert called == [name]
    assert torch.nn.functional.scaled_dot_product_attention is sdpa and namespace["sdpa"] is sdpa
