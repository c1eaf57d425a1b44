"""Test-side rclpy helpers: a probe node spinning in its own thread, lifecycle/param service calls.

The test process is one ROS process; the node under test always runs in another one (started with
support.procs.spawn). Every wait has a timeout: Jazzy never answers an invalid lifecycle transition.
"""
from __future__ import annotations

import threading
import time
from collections import defaultdict

import rclpy
from lifecycle_msgs.msg import Transition
from lifecycle_msgs.srv import ChangeState, GetState
from rcl_interfaces.srv import SetParameters
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile, ReliabilityPolicy

from support.procs import ROOT, python_cmd, pythonpath_env, ros_node_cmd, wait_for

TEST_DIR = ROOT / 'test'
RELIABLE = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
BEST_EFFORT = QoSProfile(depth=10, reliability=ReliabilityPolicy.BEST_EFFORT)
TRANSITIONS = {name: getattr(Transition, f'TRANSITION_{name.upper()}') for name in
               ('configure', 'activate', 'deactivate', 'cleanup', 'unconfigured_shutdown',
                'inactive_shutdown', 'active_shutdown')}
KNOWN_ENGINE = 'support.fake_engines.known_depth:KnownDepthEngine'


def child_env() -> dict:
    """Env for node processes: test/ on PYTHONPATH, so `support.fake_engines.*` plugins import.

    The loopback env is inherited.
    """
    return pythonpath_env(TEST_DIR)


def depth_node_cmd(ns: str, params: dict, name: str = 'depth_node') -> list[str]:
    """`python -m tt_depth_ros.ros.depth.node --ros-args ...` in namespace `ns`."""
    return ros_node_cmd('tt_depth_ros.ros.depth', ns, params, name)


def helper_cmd(name: str, *args) -> list[str]:
    """`python -m support.ros_nodes.<name> ARGS`: a helper process (run it with child_env())."""
    return python_cmd(f'support.ros_nodes.{name}', *map(str, args))


class RosProbe:
    """An rclpy node in the test process with its executor in a background thread."""

    def __init__(self, name: str = 'probe') -> None:
        self.ctx = rclpy.Context()
        rclpy.init(context=self.ctx)
        self.node = rclpy.create_node(name, context=self.ctx)
        self.executor = SingleThreadedExecutor(context=self.ctx)
        self.executor.add_node(self.node)
        self.lock = threading.Lock()
        self.msgs: dict[str, list] = defaultdict(list)
        self.subscriptions: dict[str, object] = {}
        self._thread = threading.Thread(target=self.executor.spin, daemon=True)
        self._thread.start()

    def subscribe(self, msg_type, topic: str, qos=RELIABLE, keep: int = 10_000):
        """Collect messages of `topic` (with receive time) into self.msgs[topic]."""
        def cb(msg):
            with self.lock:
                lst = self.msgs[topic]
                lst.append((time.monotonic(), msg))
                if len(lst) > keep:
                    del lst[0]
        sub = self.node.create_subscription(msg_type, topic, cb, qos)
        self.subscriptions[topic] = sub
        return sub

    def got(self, topic: str) -> list:
        """Messages received so far on `topic` (copies the list)."""
        with self.lock:
            return [m for _, m in self.msgs[topic]]

    def clear(self, topic: str | None = None) -> None:
        """Forget received messages."""
        with self.lock:
            if topic is None:
                self.msgs.clear()
            else:
                self.msgs[topic].clear()

    def publisher(self, msg_type, topic: str, qos=RELIABLE):
        """A publisher on this probe."""
        return self.node.create_publisher(msg_type, topic, qos)

    def wait_matched(self, pub, n: int = 1, timeout: float = 20.0) -> None:
        """Wait until `pub` has n subscribers."""
        wait_for(lambda: pub.get_subscription_count() >= n, timeout,
                 what=f'{n} subscriber(s) on {pub.topic_name}')

    def wait_sources(self, topics, timeout: float = 20.0) -> None:
        """Wait until each subscribed topic has matched a publisher.

        A node that reached 'active' may not have discovered this probe yet: its first outputs
        would be lost on a loaded machine.
        """
        for topic in topics:
            sub = self.subscriptions[topic]
            wait_for(lambda s=sub: s.get_publisher_count() >= 1, timeout,
                     what=f'a publisher matched on {topic}')

    def call(self, srv_type, name: str, request, timeout: float = 10.0):
        """Call a service; None on timeout (e.g. Jazzy's silence on invalid transitions)."""
        client = self.node.create_client(srv_type, name)
        try:
            if not client.wait_for_service(timeout_sec=timeout):
                raise TimeoutError(f'service {name} not available after {timeout} s')
            future = client.call_async(request)
            deadline = time.monotonic() + timeout
            while not future.done() and time.monotonic() < deadline:
                time.sleep(0.01)
            return future.result() if future.done() else None
        finally:
            self.node.destroy_client(client)

    def change_state(self, node: str, transition: str, timeout: float = 60.0):
        """ChangeState by name; True/False = reply, None = no reply within timeout."""
        req = ChangeState.Request()
        req.transition.id = TRANSITIONS[transition]
        res = self.call(ChangeState, f'{node}/change_state', req, timeout)
        return None if res is None else bool(res.success)

    def get_state(self, node: str, timeout: float = 10.0) -> str:
        """Current lifecycle state label of `node`.

        GetState is idempotent, so an unanswered request is sent again (every 5 s at most): under
        load a DDS service can be "available" before its reply writer has matched our reader, and
        the one reply of that first request then goes nowhere.
        """
        deadline = time.monotonic() + timeout
        why = 'did not answer'
        while time.monotonic() < deadline:
            try:
                res = self.call(GetState, f'{node}/get_state', GetState.Request(),
                                max(0.5, min(5.0, deadline - time.monotonic())))
            except TimeoutError as err:   # the service not discovered yet
                why = str(err)
                continue
            if res is not None:
                return res.current_state.label
            why = 'did not answer'
        raise TimeoutError(f'{node}/get_state: {why} (within {timeout} s)')

    def wait_state(self, node: str, label: str, timeout: float = 60.0) -> None:
        """Poll get_state until `node` reports `label`.

        A node busy in a transition (autostart's configure runs in its executor) answers
        nothing meanwhile: that is "not yet", not a failure.
        """
        def reached() -> bool:
            try:
                return self.get_state(node, timeout=2.0) == label
            except TimeoutError:
                return False
        wait_for(reached, timeout, interval=0.1, what=f'{node} {label}')

    def set_params(self, node: str, values: dict, timeout: float = 10.0) -> list:
        """SetParameters; returns the SetParametersResult list."""
        req = SetParameters.Request(parameters=[Parameter(k, value=v).to_parameter_msg()
                                                for k, v in values.items()])
        res = self.call(SetParameters, f'{node}/set_parameters', req, timeout)
        if res is None:
            raise TimeoutError(f'{node}/set_parameters did not answer')
        return list(res.results)

    def close(self) -> None:
        """Shutdown order of docs/ros.md §4: executor, spin thread, node, context."""
        self.executor.shutdown()
        self._thread.join(10)
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.ctx)
