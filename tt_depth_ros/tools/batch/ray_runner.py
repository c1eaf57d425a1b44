"""`tt-depth-batch --ray`: the bags over a Ray cluster, one Ray Core actor per engine.

Each actor builds one engine (on its first bag to process, as a local pool process does) and
keeps it for its life; a bag goes whole to one actor (its frames in bag order) through the same
`bag_job.process_bag` as the local run, so the outputs and manifests are the local run's. The driver
only hands out bags (one in flight per actor) and collects their rows: placement by resources,
restarts and retries are Ray's.

Resources per actor: `num_cpus` = its torch threads (`--torch-threads`, 1 when 0; the actor's
OMP_NUM_THREADS), `num_gpus` (`--ray-num-gpus`; 1 by default for backend torch-cuda) and custom
resources (`--ray-resources NAME=AMOUNT`; `tenstorrent=1` by default for backend ttnn), matched to
what `ray start --num-gpus/--resources` declared on each node. Faults: an actor whose process dies
(killed, out of memory) is restarted by Ray and its bag retried, at most `--ray-retries` times per
bag; the retry first removes the dead attempt's `NAME.partial`, and a bag that still fails gets a
failed manifest saying so. The actors read the inputs and write `--out` themselves: both must be
at the same paths on every node (a shared filesystem).
"""
from __future__ import annotations

import logging
import os
import shutil
import socket
import warnings
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from tt_depth_ros.tools.batch import manifest as mf

LOG = logging.getLogger('tt_depth_batch')
INSTALL_HINT = ("tt-depth-batch --ray needs Ray, which is not installed: pip install "
                "'tt_depth_ros[ray]' (or pip install -r requirements/ray.txt)")
#: how long the driver waits for a restarted actor to answer before it counts it as gone
ALIVE_TIMEOUT_S = 300.0
#: how long a TCP connection to a given HOST:PORT head may take before the address is refused
CONNECT_TIMEOUT_S = 10.0


class RayUnavailable(RuntimeError):
    """Ray cannot be used: not installed, or no cluster at the address (the message says why)."""


@dataclass(frozen=True)
class RayOptions:
    """How the run uses the cluster (from the command line)."""

    address: str                  # 'auto', 'local' or HOST:PORT / ray://HOST:PORT
    actors: int | None = None     # None = as many as the cluster's resources fit (<= bags)
    num_gpus: float | None = None   # None = the backend's default
    resources: dict = field(default_factory=dict)   # custom resources; empty = backend default
    retries: int = 2              # attempts per bag after the first, when its actor died


def parse_resource(spec: str) -> tuple[str, float]:
    """'tenstorrent=1' -> ('tenstorrent', 1.0); ValueError naming the bad spec."""
    name, sep, amount = spec.partition('=')
    try:
        value = float(amount)
    except ValueError:
        value = -1.0
    if not sep or not name or value <= 0 or name in ('CPU', 'GPU'):
        raise ValueError(f'--ray-resources {spec!r}: expected NAME=AMOUNT with AMOUNT > 0 '
                         '(e.g. tenstorrent=1); CPUs and GPUs go through --torch-threads and '
                         '--ray-num-gpus')
    return name, value


def actor_demand(backend: str, threads: int, opts: RayOptions) -> dict[str, float]:
    """{resource: amount} one actor asks for: CPUs, GPUs, custom resources."""
    gpus = opts.num_gpus if opts.num_gpus is not None else (1.0 if backend == 'torch-cuda' else 0.0)
    custom = dict(opts.resources) or ({'tenstorrent': 1.0} if backend == 'ttnn' else {})
    return {'CPU': float(max(threads, 1)), 'GPU': gpus, **custom}


def import_ray():
    """The ray module, or RayUnavailable with the install command."""
    try:
        import ray
    except ImportError as exc:
        raise RayUnavailable(INSTALL_HINT) from exc
    return ray


class BagActor:
    """One engine's worth of work on a cluster node (made a Ray actor by `run_on_ray`)."""

    def __init__(self, settings) -> None:
        import ray

        from tt_depth_ros.tools.batch.bag_job import setup_logging

        setup_logging()
        self.settings = settings
        with warnings.catch_warnings():   # Ray 2.60 warns about its own use of a property
            warnings.simplefilter('ignore', DeprecationWarning)
            self._restarted = bool(ray.get_runtime_context().was_current_actor_reconstructed)
        if self._restarted:
            LOG.warning('actor restarted by Ray after its process died: its bag is retried')

    def ping(self) -> bool:
        """Answers once the actor is up (after a restart too)."""
        return True

    def process(self, bag: str) -> dict:
        """`process_bag` on this node; the manifest records where it ran."""
        import ray

        from tt_depth_ros.tools.batch.bag_job import process_bag

        ctx = ray.get_runtime_context()
        execution = {'runner': 'ray', 'node_id': ctx.get_node_id(), 'actor_id': ctx.get_actor_id(),
                     'pid': os.getpid(), 'after_actor_restart': self._restarted}
        self._restarted = False
        return process_bag(Path(bag), self.settings, execution)


def _check_head(address: str) -> None:
    """A HOST:PORT with no Ray head behind it fails here at once (ray.init retries for minutes)."""
    host, sep, port = address.rpartition(':')
    if not sep or not port.isdigit() or '://' in address:
        return   # 'auto', 'local', ray:// (Ray Client): ray.init reports those itself
    try:
        socket.create_connection((host.strip('[]'), int(port)), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        raise RayUnavailable(
            f'no Ray head answers at {address} ({exc}): check the address (the head prints it '
            'at `ray start --head`; default port 6379) and that this machine can reach it') from exc


def _connect(ray, opts: RayOptions, demand: dict) -> None:
    _check_head(opts.address)
    kwargs = {}
    if opts.address == 'local':   # a private cluster of this machine, for this run only
        kwargs = dict(include_dashboard=False,
                      resources={k: v for k, v in demand.items() if k not in ('CPU', 'GPU')})
    try:
        ray.init(address=opts.address, **kwargs)
    except (ConnectionError, ValueError, RuntimeError) as exc:
        raise RayUnavailable(
            f'cannot connect to Ray at {opts.address!r}: {exc}. Start a cluster (`ray start '
            '--head` on one machine, `ray start --address HEAD:6379` on the others), or give '
            "its address with --ray HOST:PORT / RAY_ADDRESS, or '--ray local' for one machine"
        ) from exc


def _actor_count(ray, opts: RayOptions, demand: dict, bags: int) -> int:
    if opts.actors is not None:
        return min(opts.actors, bags)
    total = ray.cluster_resources()
    fits = min(int(total.get(k, 0.0) // v) for k, v in demand.items() if v > 0)
    if fits < 1:
        raise RayUnavailable(
            f'the Ray cluster has {dict(sorted(total.items()))} but one actor needs '
            f'{ {k: v for k, v in demand.items() if v} }: declare the accelerator on its nodes '
            "(`ray start --num-gpus 1` or `ray start --resources='{\"tenstorrent\": 1}'`), lower "
            '--torch-threads, or give --workers N to wait for nodes that have them')
    return min(fits, bags)


def _died_reason(bag: Path, why: str, retries: int) -> str:
    return (f'{bag}: the Ray actor processing it died on each of {retries + 1} attempt(s) '
            f'({why}); see the actor log lines above. A bag that kills its process every time '
            '(memory?) needs a bigger node, or raise --ray-retries')


def _gave_up(bag: Path, s, reason: str) -> dict:
    """The row and failed manifest of a bag Ray could not finish (`reason` says why)."""
    name = bag.name
    partial = s.out / (name + mf.PARTIAL_SUFFIX)
    if partial.exists():
        shutil.rmtree(partial)   # the dead attempt's half-written output
    path = s.out / (name + mf.MANIFEST_SUFFIX)
    if not path.exists() or mf.read_manifest(path) is not None:   # never over a foreign file
        mf.write_manifest(path, {
            'tool': mf.TOOL, 'input': {'path': str(bag.resolve())}, 'output': {'path': name},
            'model': s.params.model, 'backend': s.params.backend, 'weights': s.weights,
            'params_sha256': mf.canonical_sha256(s.params.as_dict()),
            'params': s.params.as_dict(),
            'software': mf.software(), 'status': 'failed', 'reason': reason,
            'frames': {'in': 0, 'out': 0, 'skipped': {}}, 'execution': {'runner': 'ray'},
            'finished': mf.now_iso()})
    LOG.error(f'{name}: FAILED: {reason}')
    return {'bag': name, 'status': 'failed', 'frames_in': 0, 'frames_out': 0, 'seconds': 0.0,
            'reason': reason}


def _alive(ray, actor) -> bool:
    try:
        return ray.get(actor.ping.remote(), timeout=ALIVE_TIMEOUT_S)
    except ray.exceptions.GetTimeoutError:
        ray.kill(actor)
        return False
    except ray.exceptions.RayActorError:
        return False


def run_on_ray(bags: list[Path], settings, opts: RayOptions, progress) -> list[dict]:
    """Process `bags` on the cluster at `opts.address`; rows in input order.

    Raises:
        RayUnavailable: Ray missing, no cluster there, or none of its nodes fits one actor.
    """
    ray = import_ray()
    demand = actor_demand(settings.params.backend, settings.threads, opts)
    if settings.params.backend == 'auto' and not (opts.num_gpus or opts.resources):
        LOG.warning("backend 'auto' on Ray: each actor uses what its node has and asks for no "
                    'accelerator; set the backend and --ray-num-gpus / --ray-resources to place '
                    'actors on accelerator nodes')
    _connect(ray, opts, demand)
    try:
        count = _actor_count(ray, opts, demand, len(bags))
        threads = int(demand['CPU'])
        actor_cls = ray.remote(BagActor).options(
            num_cpus=demand['CPU'], num_gpus=demand['GPU'],
            resources={k: v for k, v in demand.items() if k not in ('CPU', 'GPU')},
            max_restarts=opts.retries * len(bags), max_task_retries=opts.retries,
            runtime_env={'env_vars': {'OMP_NUM_THREADS': str(threads)}})
        LOG.info(f'Ray: {count} actor(s), each {demand}, at most {opts.retries} retries per bag '
                 f'(cluster: {dict(sorted(ray.cluster_resources().items()))})')
        idle = [actor_cls.remote(settings) for _ in range(count)]
        todo, running, rows = deque(bags), {}, {}
        while todo or running:
            while idle and todo:
                actor, bag = idle.pop(), todo.popleft()
                running[actor.process.remote(str(bag))] = (actor, bag)
            if not running:
                for bag in todo:
                    rows[bag] = _gave_up(bag, settings, f'{bag}: not processed: every Ray '
                                         'actor of the run died for good (see the failed bags '
                                         'before it)')
                    progress.done(rows[bag])
                break
            [ref], _ = ray.wait(list(running), num_returns=1)
            actor, bag = running.pop(ref)
            try:
                rows[bag] = ray.get(ref)
                idle.append(actor)
            except ray.exceptions.RayActorError as exc:
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                rows[bag] = _gave_up(bag, settings, _died_reason(bag, first, opts.retries))
                if _alive(ray, actor):
                    idle.append(actor)
            except ray.exceptions.RayTaskError as exc:   # raised outside process_bag's own net
                rows[bag] = {'bag': bag.name, 'status': 'failed', 'frames_in': 0,
                             'frames_out': 0, 'seconds': 0.0, 'reason': str(exc.cause)}
                LOG.error(f'{bag.name}: FAILED: {exc.cause!r}')
                idle.append(actor)
            progress.done(rows[bag])
        return [rows[b] for b in bags]
    finally:
        ray.shutdown()
