"""The channel between the grader and a student's process: plain data, never pickle.

A message is ``4-byte length | header | blob 0 | blob 1 | ...``: the header is UTF-8 JSON whose
``"blobs"`` lists the byte length of each blob. A value travels as JSON, with tagged objects for
what JSON lacks:

==========================  =====================================================================
``{"$array": i}``           blob i holds ``.npy`` bytes, read with ``allow_pickle=False``
                            (numbers and booleans only)
``{"$tensor": i, ...}``     a torch tensor as the array of its values plus ``dtype``, ``shape``,
                            ``device``, ``requires_grad`` and ``parameter``
``{"$scalar": dtype, ...}`` a NumPy scalar; ``$tuple``, ``$dict`` (pairs), ``$set``, ``$bytes``,
                            ``$complex``, ``$fraction``, ``$float`` (nan, inf) likewise
``{"$opaque": name}``       anything else a student's code returned: only its type's name and
                            whether it is callable or a generator cross
==========================  =====================================================================

Those are all the grader reads from a student's process (``decode(..., references=False)``).
The other direction also names objects *by reference*, rebuilt by the student's process from
its own read-only copy of the packages (see :mod:`.references`): ``$module``, ``$global`` (an
importable function or class), ``$code`` (a function of an attnlab module, closures included),
``$partial``, ``$method``, ``$instance`` (a dataclass, an ``nn.Module``), ``$rng`` (a NumPy
Generator by its state) and ``$torch_rng``.
"""
from __future__ import annotations

import base64
import fractions
import io
import json
import math
import os
import re
import selectors
import struct
import sys
import time
import types

import numpy as np

MAX_HEADER = 16 << 20            # bytes of JSON in one message
MAX_BLOBS = 256 << 20            # bytes of arrays in one message
MAX_DEPTH = 64                   # nesting of lists, tuples and dicts
ARRAY_KINDS = "biufc"            # booleans, integers, floats, complex numbers


class ChannelError(Exception):
    """The other side sent something that is not a message of this protocol, or too much."""


class ChannelClosed(ChannelError):
    """The other side closed the channel (its process ended)."""


class ChannelTimeout(ChannelError):
    """No complete message arrived before the deadline."""


# ---------------------------------------------------------------------------------------------- framing


def write_message(fd: int, header: dict, blobs=()) -> None:
    header = dict(header, blobs=[len(b) for b in blobs])
    text = json.dumps(header, allow_nan=True, separators=(",", ":")).encode()
    data = b"".join([struct.pack(">I", len(text)), text, *blobs])
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


class Reader:
    """Reads messages from ``fd``, each before a deadline (``time.monotonic()`` seconds) or none."""

    def __init__(self, fd: int, max_blobs: int = MAX_BLOBS):
        self.fd, self.max_blobs, self.buffer = fd, max_blobs, bytearray()
        self.selector = selectors.DefaultSelector()
        self.selector.register(fd, selectors.EVENT_READ)

    def _fill(self, size: int, deadline: float | None) -> bytes:
        while len(self.buffer) < size:
            if deadline is not None:
                wait = deadline - time.monotonic()
                if wait <= 0 or not self.selector.select(timeout=wait):
                    raise ChannelTimeout("no message before the deadline")
            chunk = os.read(self.fd, min(max(size - len(self.buffer), 65536), 1 << 24))
            if not chunk:
                raise ChannelClosed("the channel was closed")
            self.buffer += chunk
        out = bytes(self.buffer[:size])
        del self.buffer[:size]
        return out

    def read(self, deadline: float | None = None) -> tuple[dict, list[bytes]]:
        (size,) = struct.unpack(">I", self._fill(4, deadline))
        if size > MAX_HEADER:
            raise ChannelError(f"a message header of {size} bytes (at most {MAX_HEADER})")
        try:
            header = json.loads(self._fill(size, deadline))
        except (ValueError, RecursionError) as err:
            raise ChannelError(f"a header that is not JSON ({type(err).__name__})") from None
        sizes = header.get("blobs") if isinstance(header, dict) else None
        if not isinstance(sizes, list) or not all(type(n) is int and n >= 0 for n in sizes):
            raise ChannelError("a header without its list of blob sizes")
        if sum(sizes) > self.max_blobs:
            raise ChannelError(f"{sum(sizes)} bytes of arrays in one message (at most {self.max_blobs})")
        return header, [self._fill(n, deadline) for n in sizes]

    def close(self) -> None:
        self.selector.close()


# ---------------------------------------------------------------------------------------------- values


class Opaque:
    """Stands in for a value that crossed by its type's name only (see :func:`opaque_type`)."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"


class OpaqueCallable(Opaque):
    def __call__(self, *args, **kwargs):
        raise TypeError(f"{type(self).__name__} came back from the student's process by name only")


_OPAQUE: dict[tuple[str, bool], type] = {}


def opaque_type(name: str, is_callable: bool = False) -> type:
    """A class named like the student's type (an identifier of at most 40 characters)."""
    name = re.sub(r"\W", "", str(name))[:40] or "object"
    if name[0].isdigit():
        name = "_" + name
    key = (name, is_callable)
    if key not in _OPAQUE:
        _OPAQUE[key] = type(name, (OpaqueCallable if is_callable else Opaque,), {"__module__": "student"})
    return _OPAQUE[key]


def _empty_generator():
    yield from ()


def _torch():
    return sys.modules.get("torch")


def _sympy():
    return sys.modules.get("sympy")


def array_bytes(arr: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, arr, allow_pickle=False)
    return buffer.getvalue()


def read_array(data: bytes) -> np.ndarray:
    try:
        arr = np.load(io.BytesIO(data), allow_pickle=False)
    except Exception as err:                                  # numpy raises several kinds on bad bytes
        raise ChannelError(f"an array that is not .npy data ({type(err).__name__})") from None
    if not isinstance(arr, np.ndarray) or arr.dtype.kind not in ARRAY_KINDS or arr.dtype.fields:
        raise ChannelError("an array that does not hold numbers")
    return arr


class Encoder:
    """Turns a value into JSON-ready data, appending arrays to ``self.blobs``.

    ``by_reference`` (a callable or None) encodes what plain data cannot hold: the grader passes
    :func:`.references.encode_reference`; the student's process passes None, so anything else
    becomes ``$opaque``.
    """

    def __init__(self, by_reference=None, limit: int = MAX_BLOBS):
        self.blobs: list[bytes] = []
        self.by_reference, self.limit, self.size = by_reference, limit, 0

    def blob(self, data: bytes) -> int:
        self.size += len(data)
        if self.size > self.limit:
            raise ValueError(f"more than {self.limit >> 20} MiB of arrays")
        self.blobs.append(data)
        return len(self.blobs) - 1

    def __call__(self, value, depth: int = 0):
        if depth > MAX_DEPTH:
            raise ValueError("nested more than 64 levels deep")
        kind = type(value)
        if value is None or kind in (bool, str):
            return value
        if kind is int:
            return value if abs(value) < 1 << 62 else {"$bigint": str(value)}
        if kind is float:
            return value if math.isfinite(value) else {"$float": repr(value)}
        if kind is list:
            return [self(v, depth + 1) for v in value]
        if kind is tuple:
            return {"$tuple": [self(v, depth + 1) for v in value]}
        if kind is dict:
            return {"$dict": [[self(k, depth + 1), self(v, depth + 1)] for k, v in value.items()]}
        if kind in (set, frozenset):
            return {"$set": [self(v, depth + 1) for v in value], "frozen": kind is frozenset}
        if kind is bytes:
            return {"$bytes": base64.b64encode(value).decode()}
        if kind is complex:
            return {"$complex": [self(value.real), self(value.imag)]}
        if kind is fractions.Fraction:
            return {"$fraction": [str(value.numerator), str(value.denominator)]}
        if value is Ellipsis:
            return {"$ellipsis": True}
        if isinstance(value, np.ndarray):
            return self.array(np.asarray(value), depth)
        if isinstance(value, np.generic):
            return self.scalar(value)
        torch = _torch()
        if torch is not None and isinstance(value, torch.Tensor):
            return self.tensor(value, torch)
        sympy = _sympy()
        if sympy is not None and isinstance(value, (sympy.Basic, sympy.MatrixBase)):
            plain = _sympy_plain(value, sympy)
            if plain is not None:
                return self(plain, depth + 1)
        if self.by_reference is not None:
            return self.by_reference(self, value, depth)
        return self.opaque(value)

    def opaque(self, value):
        if isinstance(value, types.GeneratorType):
            return {"$opaque": "generator", "generator": True}
        return {"$opaque": type(value).__name__, "callable": callable(value)}

    def array(self, arr: np.ndarray, depth: int):
        if arr.dtype.kind in ARRAY_KINDS and not arr.dtype.fields:
            return {"$array": self.blob(array_bytes(arr))}
        if arr.dtype == object:
            return {"$objects": [self(v, depth + 1) for v in arr.reshape(-1).tolist()], "shape": list(arr.shape)}
        return {"$opaque": "ndarray", "dtype": str(arr.dtype)[:20]}

    def scalar(self, value: np.generic):
        if value.dtype.kind not in ARRAY_KINDS:
            return self.opaque(value)
        return {"$scalar": self.blob(array_bytes(np.asarray(value)))}

    def tensor(self, value, torch):
        meta = {"dtype": str(value.dtype).removeprefix("torch."), "shape": list(value.shape),
                "device": value.device.type, "requires_grad": bool(value.requires_grad),
                "parameter": isinstance(value, torch.nn.Parameter)}
        if value.is_sparse or value.is_quantized or value.device.type == "meta":
            return {"$tensor": None, **meta}
        values = value.detach().cpu()
        if values.dtype in (torch.bfloat16,):
            values = values.to(torch.float32)
        elif values.dtype == torch.complex32:
            values = values.to(torch.complex64)
        return {"$tensor": self.blob(array_bytes(values.resolve_conj().resolve_neg().numpy())), **meta}


def _sympy_plain(value, sympy):
    """A SymPy number or matrix as Python numbers (Fraction for a rational); None for an expression."""
    if isinstance(value, sympy.MatrixBase):
        rows = [[_sympy_plain(x, sympy) for x in row] for row in value.tolist()]
        return None if any(x is None for row in rows for x in row) else rows
    if getattr(value, "is_Rational", False):
        return fractions.Fraction(int(value.p), int(value.q))
    if getattr(value, "is_number", False):                  # no free symbols: sqrt(2), pi / 4, ...
        for convert in (float, complex):
            try:
                return convert(value)
            except (TypeError, ValueError):
                continue
    return None


def encode(value, by_reference=None, limit: int = MAX_BLOBS) -> tuple[object, list[bytes]]:
    encoder = Encoder(by_reference, limit)
    return encoder(value), encoder.blobs


# ---------------------------------------------------------------------------------------------- decoding


class Decoder:
    """Turns encoded data back into values. ``by_reference`` (the student's process only) rebuilds
    the objects named by reference; the grader passes None, and every unknown tag is refused."""

    def __init__(self, blobs: list[bytes], by_reference=None, text=None):
        self.blobs, self.by_reference, self.text = blobs, by_reference, text or (lambda s: s)

    def blob(self, index) -> bytes:
        if type(index) is not int or not 0 <= index < len(self.blobs):
            raise ChannelError("a reference to a blob that was not sent")
        return self.blobs[index]

    def __call__(self, data, depth: int = 0):
        if depth > MAX_DEPTH:
            raise ChannelError("a value nested more than 64 levels deep")
        kind = type(data)
        if data is None or kind in (bool, int, float):
            return data
        if kind is str:
            return self.text(data)
        if kind is list:
            return [self(v, depth + 1) for v in data]
        if kind is not dict or len(data) == 0:
            raise ChannelError(f"a value of JSON type {kind.__name__}")
        tag = next(iter(data))
        if not isinstance(tag, str) or not tag.startswith("$"):
            raise ChannelError("an object without a tag")
        method = getattr(self, "tag_" + tag[1:], None)
        if method is None and self.by_reference is None:
            raise ChannelError(f"the tag {tag[:40]!r}, which the grader does not accept")
        try:
            return method(data, depth) if method is not None else self.by_reference(self, tag, data, depth)
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise ChannelError(f"a malformed {tag[:40]} ({type(err).__name__})") from None

    def items(self, data, key, depth):
        values = data.get(key)
        if type(values) is not list:
            raise ChannelError(f"{key} without its list")
        return [self(v, depth + 1) for v in values]

    def tag_bigint(self, data, depth):
        try:
            return int(data["$bigint"])
        except (ValueError, TypeError):
            raise ChannelError("a big integer that is not one") from None

    def tag_float(self, data, depth):
        if data["$float"] not in ("nan", "inf", "-inf"):
            raise ChannelError("a float that is not nan or an infinity")
        return float(data["$float"])

    def tag_tuple(self, data, depth):
        return tuple(self.items(data, "$tuple", depth))

    def tag_dict(self, data, depth):
        pairs = self.items(data, "$dict", depth)
        try:
            return {k: v for k, v in pairs}
        except (TypeError, ValueError):
            raise ChannelError("a dict whose keys cannot be keys") from None

    def tag_set(self, data, depth):
        try:
            return (frozenset if data.get("frozen") else set)(self.items(data, "$set", depth))
        except TypeError:
            raise ChannelError("a set of values that cannot be in a set") from None

    def tag_bytes(self, data, depth):
        try:
            return base64.b64decode(data["$bytes"], validate=True)
        except (ValueError, TypeError):
            raise ChannelError("bytes that are not base64") from None

    def tag_complex(self, data, depth):
        real, imag = self.items(data, "$complex", depth)
        if not all(type(x) in (int, float) for x in (real, imag)):
            raise ChannelError("a complex number that is not two numbers")
        return complex(real, imag)

    def tag_fraction(self, data, depth):
        try:
            numerator, denominator = (int(x) for x in data["$fraction"])
            return fractions.Fraction(numerator, denominator)
        except (ValueError, TypeError, ZeroDivisionError):
            raise ChannelError("a fraction that is not two integers") from None

    def tag_ellipsis(self, data, depth):
        return Ellipsis

    def tag_array(self, data, depth):
        return read_array(self.blob(data["$array"]))

    def tag_objects(self, data, depth):
        values, shape = self.items(data, "$objects", depth), data.get("shape")
        if type(shape) is not list or not all(type(n) is int and n >= 0 for n in shape) \
                or math.prod(shape) != len(values):
            raise ChannelError("an object array whose shape does not match its values")
        out = np.empty(len(values), dtype=object)
        for i, value in enumerate(values):
            out[i] = value
        return out.reshape(shape)

    def tag_scalar(self, data, depth):
        arr = read_array(self.blob(data["$scalar"]))
        if arr.shape != ():
            raise ChannelError("a scalar that is not 0-dimensional")
        return arr[()]

    def tag_tensor(self, data, depth):
        import torch
        dtype = getattr(torch, str(data.get("dtype")), None)
        shape = data.get("shape")
        if not isinstance(dtype, torch.dtype) or type(shape) is not list \
                or not all(type(n) is int and n >= 0 for n in shape):
            raise ChannelError("a tensor without a torch dtype and a shape")
        if data["$tensor"] is None:                          # no values: sparse, quantized or "meta"
            device = "meta" if data.get("device") == "meta" else "cpu"
            return torch.empty(shape, dtype=dtype, device=device)
        arr = read_array(self.blob(data["$tensor"]))
        if list(arr.shape) != shape:
            raise ChannelError("a tensor whose values do not have its shape")
        tensor = torch.from_numpy(arr.copy()).to(dtype)
        if data.get("requires_grad") is True and (tensor.is_floating_point() or tensor.is_complex()):
            tensor.requires_grad_(True)
        if data.get("parameter") is True and (tensor.is_floating_point() or tensor.is_complex()):
            tensor = torch.nn.Parameter(tensor, requires_grad=bool(data.get("requires_grad")))
        return tensor

    def tag_opaque(self, data, depth):
        if data.get("generator") is True:
            return _empty_generator()
        return opaque_type(self.text(str(data["$opaque"])), data.get("callable") is True)()


def decode(data, blobs, by_reference=None, text=None):
    """The value ``data`` encodes. Raises :class:`ChannelError` for anything not of this protocol."""
    return Decoder(blobs, by_reference, text)(data)
