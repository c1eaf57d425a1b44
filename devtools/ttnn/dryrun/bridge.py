"""Engine side of the dry run: the real ttnn module, reached over a pipe, as `sys.modules['ttnn']`.

The engine runs unchanged in the project's venv (Python 3.11, torch); the real ttnn 0.81.1 wheel
exists for Python 3.12 only and runs in the side venv (server.py). Every attribute read and call
the engine makes on `ttnn` or on an object it returned is forwarded; objects stay in the server
and are represented here by `Remote` handles (dropped when garbage-collected here). Torch tensors
travel as arrays; `to_torch` returns a torch tensor of the dtype the real function returns.
Each call carries the engine's call sites (innermost first), for the report and the cost
estimate's op groups.
"""
from __future__ import annotations

import builtins
import functools
import os
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import torch

from devtools.ttnn.dryrun import wire

PROJECT = str(Path(__file__).resolve().parents[3] / 'tt_depth_ros')
_ERRORS = {n: getattr(builtins, n) for n in ('RuntimeError', 'TypeError', 'ValueError',
                                              'IndexError', 'KeyError', 'AttributeError')}


class RemoteError(RuntimeError):
    pass


def _stack(limit: int = 8) -> list[str]:
    """The engine's call sites of this ttnn call, innermost first ('file:line (function)')."""
    out = []
    f = sys._getframe(2)
    while f is not None and len(out) < limit:
        path = f.f_code.co_filename
        if path.startswith(PROJECT):
            out.append(f'{_relative(path)}:{f.f_lineno} ({f.f_code.co_name})')
        f = f.f_back
    return out


@functools.lru_cache(maxsize=None)
def _relative(path: str) -> str:
    """A source path relative to the repository root (asked tens of thousands of times a run)."""
    return os.path.relpath(path, os.path.dirname(PROJECT))


class Bridge:
    """One server process; `module` is what the engine imports as ttnn."""

    def __init__(self, python: str, env: dict, log_path: Path):
        """Start the server (`python -m devtools.ttnn.dryrun.server`) in log_path's directory.

        `env` puts the repository root on PYTHONPATH (environment.side_env).

        tt-metal writes a `generated/` tree into its working directory: never the checkout.
        """
        r1, w1 = os.pipe()            # us -> server
        r2, w2 = os.pipe()            # server -> us
        self.log_path = Path(log_path)
        self._log = open(self.log_path, 'wb')
        self.proc = subprocess.Popen([python, '-m', 'devtools.ttnn.dryrun.server', str(r1),
                                      str(w2)], pass_fds=(r1, w2), env=env, stdout=self._log,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     cwd=str(self.log_path.parent))
        os.close(r1)
        os.close(w2)
        self._w, self._r = os.fdopen(w1, 'wb'), os.fdopen(r2, 'rb')
        self._drops: list[int] = []
        self.module = RemoteModule(self)

    # -- transport ----------------------------------------------------------------------------
    def request(self, *msg, static: bool = False):
        drops, self._drops = self._drops, []
        try:
            wire.send(self._w, (drops, msg))
            reply = wire.recv(self._r)
        except (EOFError, BrokenPipeError) as e:
            raise RemoteError(f'the real-library process died ({e}); last lines of its log '
                              f'{self.log_path}:\n{self.log_tail()}') from None
        if reply[0] == 'ok':
            return self.decode(reply[1], static)
        _, name, text, _tb = reply
        raise _ERRORS.get(name, RuntimeError)(text)

    def log_tail(self, n: int = 4000) -> str:
        self._log.flush()
        return self.log_path.read_bytes()[-n:].decode(errors='replace')

    def drop(self, ref_id: int) -> None:
        self._drops.append(ref_id)

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.request('quit')
            except Exception:
                pass
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()

    # -- encoding -----------------------------------------------------------------------------
    def encode(self, v):
        if isinstance(v, Remote):
            return wire.Ref(object.__getattribute__(v, '_id'))
        if isinstance(v, RemoteModule):
            return wire.Ref(0)
        if isinstance(v, torch.Tensor):
            t = v.detach().cpu()
            if t.dtype == torch.bfloat16:
                t = t.to(torch.float32)           # exact; the real conversion re-rounds
            a = np.ascontiguousarray(t.numpy())
            return wire.Array(str(a.dtype), a.shape, a.tobytes())
        if isinstance(v, np.ndarray):
            a = np.ascontiguousarray(v)
            return wire.Array(str(a.dtype), a.shape, a.tobytes())
        if isinstance(v, (np.integer, np.floating)):
            return v.item()
        if isinstance(v, os.PathLike):
            return os.fspath(v)
        if isinstance(v, tuple):
            return tuple(self.encode(x) for x in v)
        if isinstance(v, list):
            return [self.encode(x) for x in v]
        if isinstance(v, dict):
            return {k: self.encode(x) for k, x in v.items()}
        if v is None or isinstance(v, (bool, int, float, str, bytes)):
            return v
        raise TypeError(f'dry run: cannot send {type(v).__name__} to the real ttnn')

    def decode(self, v, static: bool = False):
        if isinstance(v, wire.Ref):
            return Remote(self, v.id, static)
        if isinstance(v, wire.Array):
            a = np.frombuffer(v.data, dtype=v.dtype).reshape(v.shape).copy()
            if v.torch_dtype is None:
                return a
            return torch.from_numpy(a).to(getattr(torch, v.torch_dtype))
        if isinstance(v, tuple):
            return tuple(self.decode(x, static) for x in v)
        if isinstance(v, list):
            return [self.decode(x, static) for x in v]
        if isinstance(v, dict):
            return {k: self.decode(x, static) for k, x in v.items()}
        return v

    def report(self) -> dict:
        return self.request('report', wire.Ref(0))

    def phase(self, name: str) -> None:
        self.request('phase', wire.Ref(0), name)


class Remote:
    """A handle to an object in the real-library process.

    `static` handles (reached from the module by attribute: submodules, types, enum values,
    functions) cache their attributes.
    """

    __slots__ = ('_bridge', '_id', '_static', '_attrs', '__weakref__')

    def __init__(self, bridge: Bridge, ref_id: int, static: bool = False):
        object.__setattr__(self, '_bridge', bridge)
        object.__setattr__(self, '_id', ref_id)
        object.__setattr__(self, '_static', static)
        object.__setattr__(self, '_attrs', {} if static else None)

    def _req(self, op, *args):
        b = object.__getattribute__(self, '_bridge')
        return b.request(op, wire.Ref(object.__getattribute__(self, '_id')), *args)

    def __getattr__(self, name):
        if name.startswith('__') and name.endswith('__'):
            raise AttributeError(name)
        cache = object.__getattribute__(self, '_attrs')
        if cache is not None and name in cache:
            return cache[name]
        b = object.__getattribute__(self, '_bridge')
        static = cache is not None
        out = b.request('getattr', wire.Ref(object.__getattribute__(self, '_id')), name,
                        static=static)
        if cache is not None:
            cache[name] = out
        return out

    def __call__(self, *args, **kwargs):
        b = object.__getattribute__(self, '_bridge')
        stack = _stack()
        return b.request('call', wire.Ref(object.__getattribute__(self, '_id')),
                         b.encode(args), b.encode(kwargs), stack[0] if stack else '?', stack)

    def __eq__(self, other):
        b = object.__getattribute__(self, '_bridge')
        return self._req('eq', b.encode(other)) if isinstance(other, Remote) or other is None \
            or isinstance(other, (int, float, str)) else NotImplemented

    def __ne__(self, other):
        r = self.__eq__(other)
        return r if r is NotImplemented else not r

    def __hash__(self):
        return self._req('hash')

    def __repr__(self):
        return f'<real ttnn: {self._req("repr")}>'

    def __str__(self):
        return self._req('str')

    def __len__(self):
        return self._req('len')

    def __getitem__(self, key):
        b = object.__getattribute__(self, '_bridge')
        return self._req('getitem', b.encode(key))

    def __iter__(self):
        return iter(self._req('list'))

    def __bool__(self):
        return self._req('bool')

    def __int__(self):
        return self._req('int')

    def __index__(self):
        return self._req('int')

    def __float__(self):
        return self._req('float')

    def __del__(self):
        try:
            object.__getattribute__(self, '_bridge').drop(object.__getattribute__(self, '_id'))
        except Exception:
            pass


class RemoteModule(types.ModuleType):
    """`ttnn` for the engine: attribute reads go to the real module (cached: they are static)."""

    def __init__(self, bridge: Bridge):
        super().__init__('ttnn', 'the real ttnn 0.81.1, in the dry-run side process')
        self.__dict__['_root'] = Remote(bridge, 0, True)

    def __getattr__(self, name):
        if name.startswith('__'):
            raise AttributeError(name)
        return getattr(self.__dict__['_root'], name)
