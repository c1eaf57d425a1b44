"""What crosses the pipe between the engine (project venv) and the real ttnn (side venv).

Both sides import this file. Messages are pickles (protocol 4) of builtins and the two classes
below only, so the two interpreters (3.11 with numpy 2, 3.12 with numpy < 2) never exchange a
pickled numpy or torch object: arrays travel as dtype name + shape + raw bytes.
"""
from __future__ import annotations

import pickle
import struct
from dataclasses import dataclass


@dataclass(frozen=True)
class Ref:
    """A handle to an object that lives in the real-library process."""

    id: int


@dataclass(frozen=True)
class Array:
    """A host array: numpy dtype name, shape, C-order bytes.

    `torch_dtype` names the dtype the engine side hands back (e.g. 'bfloat16': the values travel
    as float32, exactly).
    """

    dtype: str
    shape: tuple
    data: bytes
    torch_dtype: str | None = None


def send(f, obj) -> None:
    blob = pickle.dumps(obj, protocol=4)
    f.write(struct.pack('<Q', len(blob)))
    f.write(blob)
    f.flush()


def recv(f):
    head = f.read(8)
    if len(head) < 8:
        raise EOFError('the real-library process closed the pipe')
    (n,) = struct.unpack('<Q', head)
    return pickle.loads(f.read(n))
