"""Is the Hugging Face hub reachable? One bounded probe per process, so offline is decided fast.

huggingface_hub retries a failed request five times with back-off (about 25 s per file when the
host does not resolve). A machine without a route to the hub learns nothing from those retries,
so before a download the weights lookup asks this module once: resolve the hub host (or the
proxy that would carry the request) and open one TCP connection, all within `PROBE_TIMEOUT_S`.
The answer is kept per host and port for the life of the process. DNS resolution has no
timeout of its own, so the probe runs in a daemon thread that is abandoned when it is late.
"""
from __future__ import annotations

import os
import socket
import threading
import time
import urllib.request
from dataclasses import dataclass, replace
from typing import Optional
from urllib.parse import urlsplit

PROBE_TIMEOUT_S = 1.5
"""Longest the probe may take, DNS and connect together (offline is decided within 2 s)."""

_DEFAULT_ENDPOINT = 'https://huggingface.co'
_answers: dict[tuple[str, int], 'Reach'] = {}
_lock = threading.Lock()


@dataclass(frozen=True)
class Reach:
    """Outcome of the probe: `ok`, and what was probed and why it failed, for the message."""

    ok: bool
    target: str         # 'host:port' that was probed (the proxy's when one is set)
    reason: str = ''    # empty when ok
    seconds: float = 0.0
    cached: bool = False   # True when an earlier probe in this process gave this answer


def hub_endpoint() -> str:
    """The hub URL downloads go to: HF_ENDPOINT at call time, else huggingface_hub's default."""
    env = os.environ.get('HF_ENDPOINT', '').strip()
    if env:
        return env.rstrip('/')
    try:
        from huggingface_hub import constants

        return str(constants.ENDPOINT).rstrip('/')
    except ImportError:
        return _DEFAULT_ENDPOINT


def _target(endpoint: str) -> tuple[str, int, str]:
    """(host, port, label) the request would first connect to: the proxy if one applies."""
    url = urlsplit(endpoint)
    if not url.hostname:
        raise ValueError(f'hub endpoint {endpoint!r} has no host; fix HF_ENDPOINT')
    scheme = url.scheme or 'https'
    proxies = urllib.request.getproxies_environment()
    proxy = proxies.get(scheme) or proxies.get('all')
    if proxy and not urllib.request.proxy_bypass_environment(url.hostname):
        p = urlsplit(proxy if '://' in proxy else 'http://' + proxy)
        if p.hostname:
            port = p.port or (443 if p.scheme == 'https' else 80)
            return p.hostname, port, f'proxy {p.hostname}:{port}'
    port = url.port or (443 if scheme == 'https' else 80)
    return url.hostname, port, f'{url.hostname}:{port}'


def _connect(host: str, port: int, timeout: float, box: list) -> None:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            box.append('')
    except OSError as e:
        box.append(f'{type(e).__name__}: {e}')


def _probe(host: str, port: int, label: str, timeout: float) -> Reach:
    t0 = time.monotonic()
    box: list = []
    worker = threading.Thread(target=_connect, args=(host, port, timeout, box), daemon=True,
                              name='hub-probe')
    worker.start()
    worker.join(timeout)
    dt = time.monotonic() - t0
    if not box:
        return Reach(False, label, f'no answer within {timeout:g} s', dt)
    return Reach(not box[0], label, box[0], dt)


def hub_reach(endpoint: Optional[str] = None, timeout: float = PROBE_TIMEOUT_S) -> Reach:
    """Probe the hub (or its proxy) once per process; later calls return the answer, `cached`."""
    host, port, label = _target(endpoint or hub_endpoint())
    with _lock:
        hit = _answers.get((host, port))
        if hit is None:
            _answers[(host, port)] = _probe(host, port, label, float(timeout))
            return _answers[(host, port)]
    return replace(hit, cached=True)


def forget() -> None:
    """Drop the cached answers (tests; a process whose network changed)."""
    with _lock:
        _answers.clear()
