"""Command queues and events of the ttnn stand-in: what two CQs may reorder, made visible.

A device opened with two command queues runs them independently; only events order one against
the other (ttnn.record_event / wait_for_event). With the default schedule ('in_order') every
command runs when it is issued, as on one queue. The test knob `set_queue_schedule` picks an
adversarial but legal schedule instead:

- 'cq0_lazy': CQ1 runs as soon as it can; CQ0 (the trace queue) runs only when something forces
  it: a host read of its results, a synchronize, or a wait on one of its events. A missing
  "CQ1 waits for CQ0" event lets the next upload overwrite an input CQ0 has not consumed yet.
- 'cq1_lazy': the mirror image. A missing "CQ0 waits for CQ1" event lets CQ0 consume an input
  before its upload has landed (a stale frame).

Queued commands: uploads (copy_host_to_device_tensor), device-to-device ttnn.copy, trace replays
(execute_trace), non-blocking readbacks (from_device(blocking=False)), event records and waits.
Any other eager op is issued on CQ0 after draining CQ0 (a legal, less reordered schedule).
"""
from __future__ import annotations

from collections import deque

SCHEDULES = ('in_order', 'cq0_lazy', 'cq1_lazy')
_state = {'schedule': 'in_order'}


def set_queue_schedule(name: str) -> None:
    """Test knob: how the stand-in orders the two command queues (see module docstring)."""
    if name not in SCHEDULES:
        raise ValueError(f'queue schedule {name!r}; allowed: {SCHEDULES}')
    _state['schedule'] = name


class MeshEvent:
    """An event recorded on one command queue; done once every earlier command there ran."""

    def __init__(self, cq: int):
        self.cq = cq
        self.done = False

    def __repr__(self) -> str:
        return f'MeshEvent(cq={self.cq}, done={self.done})'


class CommandQueues:
    """The pending commands of one device's queues: ('run', fn, tag) | ('record'|'wait', ev)."""

    def __init__(self, count: int):
        self.count = int(count)
        self.pending = [deque() for _ in range(self.count)]

    def check(self, cq) -> int:
        cq = 0 if cq is None else int(cq)
        if not 0 <= cq < self.count:
            raise RuntimeError(f'TT_FATAL: cq_id {cq} >= num_command_queues {self.count} (open '
                               'the device with num_command_queues=2 for a second queue)')
        return cq

    def lazy(self, cq: int) -> bool:
        return _state['schedule'] == f'cq{cq}_lazy'

    def issue(self, cq, cmd: tuple) -> None:
        """Append a command to queue `cq` and run whatever the schedule runs eagerly."""
        cq = self.check(cq)
        self.pending[cq].append(cmd)
        for q in range(self.count):
            if not self.lazy(q):
                self.run(q, stop_at_blocked=True)

    def run(self, cq: int, until=None, stop_at_blocked: bool = False) -> None:
        """Run queue `cq` in order (until the event `until` is recorded, if given).

        A wait on an event not yet recorded forces the other queue up to it; `stop_at_blocked`
        (an eager queue's own progress) leaves a lazy queue alone and stops instead.
        """
        q = self.pending[cq]
        while q and not (until is not None and until.done):
            cmd = q[0]
            if cmd[0] == 'wait' and not cmd[1].done:
                ev = cmd[1]
                if ev.cq == cq:
                    raise RuntimeError('stand-in: a queue waits on an event it has not recorded')
                if stop_at_blocked and self.lazy(ev.cq):
                    return
                self.run(ev.cq, until=ev)
                if not ev.done:
                    raise RuntimeError(f'stand-in: CQ{cq} waits on an event CQ{ev.cq} never '
                                       'records (command queues deadlocked)')
                continue
            q.popleft()
            if cmd[0] == 'record':
                cmd[1].done = True
            elif cmd[0] == 'run':
                cmd[1]()

    def drain(self, cq=None) -> None:
        """Run every pending command (of one queue and what it waits on, or of all)."""
        for q in ([cq] if cq is not None else range(self.count)):
            self.run(q)

    def holds(self, tag) -> bool:
        """Whether a pending command carries `tag` (e.g. a trace id still to replay)."""
        return any(c[0] == 'run' and c[2] == tag for q in self.pending for c in q)

    def busy(self) -> bool:
        return any(self.pending)
