"""The wire format between the grading supervisor and its worker: no pickle, ever.

A message is one frame: ``MAGIC`` (4 bytes), the JSON header length (u32, big-endian), the number
of raw buffers (u32), the JSON header, then each buffer as a u64 length and its bytes. Tensors
travel as ``{"__t": ...}`` header entries (dtype, shape, strides, storage offset, device) that point
at a raw buffer holding the bytes of the storage span they view, so non-contiguous views arrive as
views. ``torch.Generator`` travels as its state, ``torch.dtype``/``torch.device`` by name.

This file is loaded by the worker *by path* (the worker never imports ``inferview``), so it imports
only the standard library and torch (on first use).
"""

from __future__ import annotations

import functools
import json
import math
import os
import struct
from typing import Any

MAGIC = b"IVG1"
MAX_HEADER = 64 << 20
MAX_BUFFER = 4 << 30
MAX_BUFFERS = 4096


class _Torch:
    """torch, imported on first use: framing needs none, so the supervisor can start a worker
    (whose torch import is the slow part of a grading) before paying for its own import."""

    def __getattr__(self, name: str) -> Any:
        import torch as real

        globals()["torch"] = real
        return getattr(real, name)


torch: Any = _Torch()


@functools.lru_cache(maxsize=1)
def _dtypes() -> dict[str, Any]:
    out = {
        str(d).replace("torch.", ""): d
        for d in (
            torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.complex64,
            torch.complex128, torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8,
            torch.bool,
        )
    }
    for name in ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "uint16",
                 "uint32", "uint64"):
        if hasattr(torch, name):
            out[name] = getattr(torch, name)
    return out


class CodecError(ValueError):
    """A frame or value that does not follow the format."""


class Unsupported:
    """Stand-in for a value of a type the codec does not carry."""

    def __init__(self, type_name: str, text: str) -> None:
        self.type_name = type_name
        self.text = text


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def _span(shape: tuple[int, ...], stride: tuple[int, ...]) -> int:
    if any(s == 0 for s in shape):
        return 0
    return 1 + sum((n - 1) * st for n, st in zip(shape, stride, strict=False))


class Encoder:
    """Turns a Python value into a JSON-able header plus raw buffers.

    ``extra`` handles types the caller knows (handles, function references): it returns a JSON-able
    dict or ``None``.
    """

    def __init__(self, extra: Any = None) -> None:
        self.buffers: list[bytes] = []
        self.extra = extra

    def _buf(self, data: bytes) -> int:
        self.buffers.append(data)
        return len(self.buffers) - 1

    def tensor(self, t: torch.Tensor) -> dict[str, Any]:
        t = t.detach()
        if t.device.type == "meta":
            return {"__t": None, "dtype": dtype_name(t.dtype), "shape": list(t.shape),
                    "stride": list(t.stride()), "offset": 0, "device": "meta"}
        if t.is_sparse or t.layout != torch.strided:
            t = t.to_dense()
        if getattr(t, "is_conj", lambda: False)():
            t = t.resolve_conj()
        if getattr(t, "is_neg", lambda: False)():
            t = t.resolve_neg()
        shape = tuple(t.shape)
        stride = tuple(t.stride())
        itemsize = t.element_size()
        span = _span(shape, stride)
        offset = t.storage_offset()
        storage = t.untyped_storage()
        nbytes_storage = storage.nbytes()
        if span * itemsize + 4096 >= nbytes_storage and offset * itemsize <= nbytes_storage:
            # send the whole storage, keeping the exact offset
            start, length = 0, nbytes_storage // itemsize
        else:
            start, length = offset, span
            offset = 0
        flat = torch.empty(0, dtype=t.dtype, device=t.device)
        flat.set_(storage, start, (length,), (1,))
        raw = flat.cpu().contiguous().view(torch.uint8).numpy().tobytes() if length else b""
        return {
            "__t": self._buf(raw),
            "dtype": dtype_name(t.dtype),
            "shape": list(shape),
            "stride": list(stride),
            "offset": int(offset),
            "device": t.device.type,
            "requires_grad": bool(t.requires_grad),
        }

    def value(self, v: Any, depth: int = 0) -> Any:
        if depth > 64:
            raise CodecError("value nested too deeply")
        if v is None or isinstance(v, (bool, str)):
            return v
        if isinstance(v, int):
            return v
        if isinstance(v, float):
            if math.isfinite(v):
                return v
            return {"__f": repr(v)}
        if isinstance(v, torch.Tensor):
            return self.tensor(v)
        if isinstance(v, torch.dtype):
            return {"__dtype": dtype_name(v)}
        if isinstance(v, torch.device):
            return {"__device": str(v)}
        if isinstance(v, torch.Size):
            return {"__tuple": [int(x) for x in v]}
        if isinstance(v, torch.Generator):
            state = v.get_state()
            return {"__gen": self._buf(state.numpy().tobytes()), "device": v.device.type,
                    "seed": int(v.initial_seed())}
        if self.extra is not None:
            special = self.extra(v)
            if special is not None:
                return special
        if type(v) is tuple:
            return {"__tuple": [self.value(x, depth + 1) for x in v]}
        if type(v) is list:
            return [self.value(x, depth + 1) for x in v]
        if type(v) is dict:
            return {"__dict": [[self.value(k, depth + 1), self.value(x, depth + 1)]
                               for k, x in v.items()]}
        if isinstance(v, complex):
            return {"__complex": [self.value(v.real), self.value(v.imag)]}
        try:
            text = repr(v)
        except Exception:  # noqa: BLE001 - a hostile __repr__ must not break encoding
            text = "?"
        return {"__unsupported": type(v).__name__, "repr": text[:200]}


class Decoder:
    """Turns a header plus buffers back into values; ``extra`` maps special dicts to objects."""

    def __init__(self, buffers: list[bytes], device: str | None = None, extra: Any = None) -> None:
        self.buffers = buffers
        self.device = device
        self.extra = extra

    def _get(self, idx: Any) -> bytes:
        if not isinstance(idx, int) or not 0 <= idx < len(self.buffers):
            raise CodecError(f"bad buffer index {idx!r}")
        return self.buffers[idx]

    def tensor(self, d: dict[str, Any]) -> torch.Tensor:
        dtype = _dtypes().get(d.get("dtype"))  # type: ignore[arg-type]
        if dtype is None:
            raise CodecError(f"unknown dtype {d.get('dtype')!r}")
        shape, stride, offset = d.get("shape"), d.get("stride"), d.get("offset", 0)
        if (not isinstance(shape, list) or not isinstance(stride, list) or len(shape) != len(stride)
                or not all(isinstance(x, int) and x >= 0 for x in shape + stride)
                or not isinstance(offset, int) or offset < 0 or len(shape) > 64):
            raise CodecError("bad tensor layout")
        if d.get("__t") is None and d.get("device") == "meta":
            return torch.empty_strided(shape, stride, dtype=dtype, device="meta")
        raw = self._get(d["__t"])
        itemsize = torch.empty(0, dtype=dtype).element_size()
        if len(raw) % itemsize:
            raise CodecError("tensor buffer is not a whole number of elements")
        n = len(raw) // itemsize
        span = _span(tuple(shape), tuple(stride))
        if span and offset + span > n:
            raise CodecError("tensor layout points outside its buffer")
        if n:
            flat = torch.frombuffer(bytearray(raw), dtype=torch.uint8).view(dtype)
        else:
            flat = torch.empty(0, dtype=dtype)
        device = d.get("device", "cpu")
        if self.device is not None and device != "cpu":
            device = self.device
        if device != "cpu":
            flat = flat.to(device)
        out = torch.as_strided(flat, shape, stride, offset)
        if d.get("requires_grad") and out.is_floating_point():
            out.requires_grad_(True)
        return out

    def value(self, v: Any, depth: int = 0) -> Any:
        if depth > 64:
            raise CodecError("value nested too deeply")
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        if isinstance(v, list):
            return [self.value(x, depth + 1) for x in v]
        if not isinstance(v, dict):
            raise CodecError(f"unexpected {type(v).__name__} in a frame")
        if "__t" in v:
            return self.tensor(v)
        if "__f" in v:
            text = v["__f"]
            if text not in ("nan", "inf", "-inf"):
                raise CodecError("bad float")
            return float(text)
        if "__tuple" in v:
            return tuple(self.value(x, depth + 1) for x in v["__tuple"])
        if "__dict" in v:
            out = {}
            for pair in v["__dict"]:
                if not isinstance(pair, list) or len(pair) != 2:
                    raise CodecError("bad dict entry")
                key = self.value(pair[0], depth + 1)
                try:
                    hash(key)
                except TypeError:
                    key = repr(key)
                out[key] = self.value(pair[1], depth + 1)
            return out
        if "__dtype" in v:
            dt = _dtypes().get(v["__dtype"])
            if dt is None:
                raise CodecError(f"unknown dtype {v['__dtype']!r}")
            return dt
        if "__device" in v:
            return torch.device(str(v["__device"]))
        if "__complex" in v:
            re_, im = v["__complex"]
            return complex(self.value(re_), self.value(im))
        if "__gen" in v:
            raw = self._get(v["__gen"])
            device = v.get("device", "cpu")
            if self.device is not None and device != "cpu":
                device = self.device
            g = torch.Generator(device=device)
            g.set_state(torch.frombuffer(bytearray(raw), dtype=torch.uint8).clone())
            return g
        if "__unsupported" in v:
            return Unsupported(str(v["__unsupported"]), str(v.get("repr", ""))[:200])
        if self.extra is not None:
            special = self.extra(v)
            if special is not None:
                return special
        raise CodecError(f"unknown value tag {sorted(v)[:3]}")


def encode(header: dict[str, Any], buffers: list[bytes]) -> bytes:
    """One frame from a JSON-able header and raw buffers."""
    head = json.dumps(header, separators=(",", ":"), allow_nan=False).encode()
    parts = [MAGIC, struct.pack(">II", len(head), len(buffers)), head]
    for b in buffers:
        parts.append(struct.pack(">Q", len(b)))
        parts.append(b)
    return b"".join(parts)


def write_frame(fd: int, header: dict[str, Any], buffers: list[bytes]) -> None:
    """Write one frame to a file descriptor (blocking)."""
    data = memoryview(encode(header, buffers))
    while data:
        n = os.write(fd, data)
        data = data[n:]


class FrameReader:
    """Incremental frame parser: ``feed`` bytes, ``pop`` complete frames (with size limits)."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, data: bytes) -> None:
        self._buf += data

    def pop(self) -> tuple[dict[str, Any], list[bytes]] | None:
        buf = self._buf
        if len(buf) < 12:
            return None
        if bytes(buf[:4]) != MAGIC:
            raise CodecError("frame does not start with the magic bytes")
        hlen, nbuf = struct.unpack(">II", bytes(buf[4:12]))
        if hlen > MAX_HEADER or nbuf > MAX_BUFFERS:
            raise CodecError("frame too large")
        pos = 12 + hlen
        if len(buf) < pos:
            return None
        lengths = []
        for _ in range(nbuf):
            if len(buf) < pos + 8:
                return None
            (blen,) = struct.unpack(">Q", bytes(buf[pos:pos + 8]))
            if blen > MAX_BUFFER:
                raise CodecError("buffer too large")
            pos += 8
            if len(buf) < pos + blen:
                return None
            lengths.append((pos, blen))
            pos += blen
        try:
            header = json.loads(bytes(buf[12:12 + hlen]).decode())
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            raise CodecError(f"bad frame header: {exc}") from None
        if not isinstance(header, dict):
            raise CodecError("frame header is not an object")
        buffers = [bytes(buf[p:p + n]) for p, n in lengths]
        del buf[:pos]
        return header, buffers


def read_frame_blocking(fd: int) -> tuple[dict[str, Any], list[bytes]] | None:
    """Read one frame from ``fd`` (worker side: blocks); ``None`` at end of file."""
    reader = FrameReader()
    while True:
        frame = reader.pop()
        if frame is not None:
            return frame
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return None
        reader.feed(chunk)
