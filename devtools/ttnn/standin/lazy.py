"""Deferred values of eager device ops: computed when first read, never when only dropped.

An eager op validates its inputs and derives its output specs at launch (on meta tensors, as a
capture does) but computes its values only when something reads them: `to_torch`, a later op's
read, a trace replay. The engines' warm-up forward (compile + conv preparation, output
deallocated unread) so costs no arithmetic instead of repeating the replay's whole forward.

Each pending output holds the op's function and its inputs' values as they were at launch (a
tensor's value is only ever replaced, never written into), so a later write to an input does not
change what a deferred op computes. The stand-in's exact-arithmetic switch is captured too.
"""
from __future__ import annotations

from . import numerics


class _Op:
    __slots__ = ('fn', 'inputs', 'exact', 'result')

    def __init__(self, fn, inputs: list, exact: bool):
        self.fn = fn
        self.inputs = inputs      # torch tensors or Pending, as at launch
        self.exact = exact
        self.result = None        # [torch tensor per output] once computed


class Pending:
    """Output `index` of a deferred op; `meta` is its data's meta tensor (shape, dtype)."""

    __slots__ = ('op', 'index', 'meta')

    def __init__(self, op: _Op, index: int, meta):
        self.op, self.index, self.meta = op, index, meta

    def value(self):
        """Compute this output (and the deferred ops it reads), iteratively: chains run deep."""
        stack = [self.op]
        while stack:
            op = stack[-1]
            if op.result is not None:
                stack.pop()
                continue
            waiting = [x.op for x in op.inputs if isinstance(x, Pending) and x.op.result is None]
            if waiting:
                stack.extend(waiting)
                continue
            datas = [x.op.result[x.index] if isinstance(x, Pending) else x for x in op.inputs]
            with numerics.arithmetic(exact=op.exact):
                op.result = [r[0] for r in op.fn(datas)]
            op.inputs = op.fn = None       # what it read may now be freed
            stack.pop()
        return self.op.result[self.index]


def defer(fn, inputs: list, metas: list) -> list[Pending]:
    """Pending outputs of `fn` over `inputs` (torch tensors or Pending), one per meta spec."""
    op = _Op(fn, list(inputs), numerics.exact_on())
    return [Pending(op, i, m) for i, m in enumerate(metas)]
