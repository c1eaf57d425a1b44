"""Process entry point shared by the lifecycle nodes: signals, autostart, bounded shutdown.

The node runs in the ROS environment it is given: nothing here sets or changes ROS_DOMAIN_ID,
RMW_IMPLEMENTATION, discovery or DDS profile variables.

Threads: the executor spins in its own thread, where every lifecycle transition runs (autostart's
configure/activate too, so the main thread only waits for signals, see
ros/runtime/process/signal_latch.py). On
SIGINT/SIGTERM the main thread cancels a configure in progress (the engine build stops at its next
checkpoint), stops the executor thread (waiting at most CONFIGURE_ABORT_S for a transition that
cannot be interrupted, then exiting without it: the process exit releases memory and device, and
nothing is closed under a running build), runs the shutdown transition (worker joined for at most
WORKER_JOIN_S; an engine still inside `infer` is not closed under it) and only then
`rclpy.shutdown()`. Further signals are absorbed; the process exits 0 within SHUTDOWN_BUDGET_S,
enforced by a watchdog thread. Should a thread hold the GIL inside blocking C code (the watchdog
could not run), faulthandler's C thread prints every thread's stack to stderr and exits 1 at
STUCK_DUMP_S. After its own teardown the process ends with os._exit: interpreter finalization,
which no watchdog covers, is skipped.
"""
from __future__ import annotations

import faulthandler
import os
import sys
import threading
from typing import NoReturn

from tt_depth_ros.ros.runtime.process.signal_latch import SignalLatch

CONFIGURE_ABORT_S = 1.5   # longest wait for a transition in progress after the signal
WORKER_JOIN_S = 1.5       # longest wait for an in-flight inference at shutdown
SHUTDOWN_BUDGET_S = 4.0   # signal -> exit, whatever happens (launch escalates after 5 s)
STUCK_DUMP_S = SHUTDOWN_BUDGET_S + 0.5
"""When even the watchdog (a Python thread) cannot run - a thread holds the GIL inside blocking C
code - faulthandler's own C thread dumps every thread's stack to stderr and exits (code 1)."""


def _hard_exit(code: int) -> None:
    """Exit now, skipping interpreter teardown (threads may still be inside C++ code)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def run_lifecycle_node(node_factory, latch: SignalLatch,
                       args: list[str] | None = None) -> NoReturn:
    """Create the node, autostart it when its `autostart` parameter is true, spin until a signal.

    Args:
        node_factory: callable(**node kwargs) returning a PerceptionLifecycleNode.
        args: command line (default sys.argv), `--ros-args ...` included.
        latch: handlers installed by the caller before it imported the node module
            (ros/entry_points.py), so a signal during startup is kept, never lost.

    Never returns: the process exits 0 after the shutdown (or 1 from the stuck-GIL dump).
    """
    import rclpy
    from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
    from rclpy.signals import SignalHandlerOptions

    rclpy.init(args=sys.argv if args is None else args,
               signal_handler_options=SignalHandlerOptions.NO)
    node = node_factory()
    log = node.get_logger()
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    stopping = threading.Event()   # set by the main thread only, never by a signal handler

    def spin() -> None:
        if node.params.autostart and latch.first is None:
            _autostart(node, stopping)
        # spin_once in a loop: an exception escaping a callback (Jazzy raises one in the
        # change_state service for an invalid transition) must not end the node's spinning.
        while not stopping.is_set():
            try:
                executor.spin_once(timeout_sec=0.1)
            except ExternalShutdownException:
                break
            except Exception as exc:  # noqa: BLE001 - logged; the node keeps serving
                if not stopping.is_set():
                    log.error(f'a callback raised {type(exc).__name__}: {exc} '
                              '(e.g. an invalid lifecycle transition); continuing')

    spin_thread = threading.Thread(target=spin, name='executor', daemon=True)
    spin_thread.start()
    while not latch.wait(0.5) and spin_thread.is_alive():
        pass
    watchdog = threading.Timer(SHUTDOWN_BUDGET_S, _watchdog_exit, (log,))
    watchdog.daemon = True
    watchdog.start()
    faulthandler.dump_traceback_later(STUCK_DUMP_S, exit=True)
    log.info(f'{latch.name or "executor stopped"}: shutting down')
    node.abort_configure()
    stopping.set()
    spin_thread.join(CONFIGURE_ABORT_S)
    if spin_thread.is_alive():
        log.warning(f'a lifecycle transition (configure: download, weight loading, compile or '
                    f'trace) did not stop within {CONFIGURE_ABORT_S} s of the signal; exiting '
                    'without waiting for it (the process exit releases its memory and device; '
                    'nothing is closed under it)')
        _hard_exit(0)
    executor.shutdown(timeout_sec=1.0)
    node.worker_join_s = WORKER_JOIN_S
    try:
        node.trigger_shutdown()   # from any state: worker joined, engine closed
    except Exception as exc:  # noqa: BLE001 - e.g. already finalized
        log.info(f'shutdown transition skipped: {exc}')
    node.destroy_node()
    rclpy.try_shutdown()
    latch.ignore_further()
    # Everything the node owns is closed above. Interpreter teardown would only meet the
    # middleware's static destructors and object finalizers (and, with a worker still inside
    # the engine, that thread): the process ends here, its budget still armed until this line.
    _hard_exit(0)


def _watchdog_exit(log) -> None:
    log.error(f'shutdown did not finish within {SHUTDOWN_BUDGET_S} s of the signal; exiting now')
    _hard_exit(0)


def _autostart(node, stopping: threading.Event) -> None:
    from rclpy.lifecycle import TransitionCallbackReturn
    log = node.get_logger()
    log.info('autostart: configuring')
    if node.trigger_configure() != TransitionCallbackReturn.SUCCESS:
        if not stopping.is_set():
            log.error('autostart: configure did not succeed; the node stays unconfigured (fix '
                      'the cause, then configure it through the lifecycle services)')
        return
    if stopping.is_set():
        return
    log.info('autostart: activating')
    if node.trigger_activate() != TransitionCallbackReturn.SUCCESS:
        log.error('autostart: activate did not succeed')
        return
    log.info('autostart: active')
