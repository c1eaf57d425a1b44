"""Process entry point shared by the lifecycle nodes: loopback env, signals, autostart, shutdown.

Order (spec/ros.md §4): SIGINT/SIGTERM only set an event (our handlers are installed before
rclpy, so a signal during startup is never swallowed); the executor spins in its own thread; on
exit `executor.shutdown()`, the spin thread is joined, the node goes through its shutdown
transition (worker joined, engine closed, with no callback running concurrently), and only then
`rclpy.shutdown()` — exiting with a live spin thread aborts.
"""
from __future__ import annotations

import signal
import sys
import threading

from tt_depth_ros.ros.loopback import apply_loopback_env


def run_lifecycle_node(node_factory, args: list[str] | None = None) -> int:
    """Create the node, autostart it when its `autostart` parameter is true, spin until a signal.

    Args:
        node_factory: callable(**node kwargs) returning a PerceptionLifecycleNode.
        args: command line (default sys.argv), `--ros-args ...` included.

    Returns:
        Process exit code (0 on a clean signal-initiated shutdown).
    """
    apply_loopback_env()
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())

    import rclpy
    from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
    from rclpy.signals import SignalHandlerOptions

    rclpy.init(args=sys.argv if args is None else args,
               signal_handler_options=SignalHandlerOptions.NO)
    node = node_factory()
    executor = SingleThreadedExecutor()
    executor.add_node(node)

    def spin() -> None:
        # spin_once in a loop: an exception escaping a callback (Jazzy raises one in the
        # change_state service for an invalid transition) must not end the node's spinning.
        while not stop.is_set():
            try:
                executor.spin_once(timeout_sec=0.25)
            except ExternalShutdownException:
                break
            except Exception as exc:  # noqa: BLE001 - logged; the node keeps serving
                if not stop.is_set():
                    node.get_logger().error(f'a callback raised {type(exc).__name__}: {exc} '
                                            '(e.g. an invalid lifecycle transition); continuing')
        stop.set()

    if node.p.get('autostart') and not stop.is_set():
        _autostart(node)
    spin_thread = threading.Thread(target=spin, name='executor', daemon=True)
    spin_thread.start()
    stop.wait()
    node.get_logger().info('shutting down')
    executor.shutdown(timeout_sec=5.0)
    spin_thread.join(10.0)
    try:
        node.trigger_shutdown()   # from any state: worker joined, engine closed
    except Exception as exc:  # noqa: BLE001 - e.g. already finalized
        node.get_logger().info(f'shutdown transition skipped: {exc}')
    node.destroy_node()
    rclpy.try_shutdown()
    return 0


def _autostart(node) -> None:
    from rclpy.lifecycle import TransitionCallbackReturn
    log = node.get_logger()
    log.info('autostart: configuring')
    if node.trigger_configure() != TransitionCallbackReturn.SUCCESS:
        log.error('autostart: configure did not succeed; the node stays unconfigured (fix the '
                  'cause, then configure it through the lifecycle services)')
        return
    log.info('autostart: activating')
    if node.trigger_activate() != TransitionCallbackReturn.SUCCESS:
        log.error('autostart: activate did not succeed')
        return
    log.info('autostart: active')
