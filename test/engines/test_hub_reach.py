"""Offline is decided once and fast: an unreachable hub never runs huggingface_hub's retry loop.

No network is needed: the hub endpoint (HF_ENDPOINT) points at a name that cannot resolve, at a
closed port on 127.0.0.1, or at a local HTTP server that answers 404 for every file (reachable
but missing: the real hf_hub_download runs against it, as before this probe existed).
"""
import http.server
import logging
import socket
import threading
import time

import huggingface_hub
import pytest

from tt_depth_ros.engines import hub_reach
from tt_depth_ros.engines.weights import WeightsUnavailableError, resolve_weights


@pytest.fixture(autouse=True)
def fresh_probe(monkeypatch):
    monkeypatch.delenv('HF_HUB_OFFLINE', raising=False)
    for var in ('HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy', 'ALL_PROXY',
                'all_proxy'):
        monkeypatch.delenv(var, raising=False)
    hub_reach.forget()
    yield
    hub_reach.forget()


@pytest.fixture()
def no_download(monkeypatch):
    def fail(*a, **k):
        raise AssertionError('hf_hub_download must not be called when the hub is unreachable')
    monkeypatch.setattr(huggingface_hub, 'hf_hub_download', fail)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def _offline_lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith('offline:')]


@pytest.mark.parametrize('endpoint', ['https://tt-depth-hub.invalid', 'closed-port'])
def test_unreachable_hub_is_decided_once_within_2_s(tmp_path, monkeypatch, caplog, no_download,
                                                    endpoint):
    if endpoint == 'closed-port':
        endpoint = f'http://127.0.0.1:{_closed_port()}'
    monkeypatch.setenv('HF_ENDPOINT', endpoint)
    caplog.set_level(logging.INFO)
    t0 = time.monotonic()
    with pytest.raises(WeightsUnavailableError) as e:
        resolve_weights('da3metric-large', cache_dir=tmp_path / 'empty')
    first = time.monotonic() - t0
    msg = str(e.value)
    assert msg.startswith('offline:') and endpoint in msg and 'not in the cache' in msg
    assert 'huggingface-cli download depth-anything/DA3METRIC-LARGE' in msg and 'weights=' in msg
    assert first < 2.0, first
    assert _offline_lines(caplog) == [msg.split('. ')[0]]     # one line, said once
    # the second lookup in the process (another model) reuses the answer: no probe, no line
    t0 = time.monotonic()
    with pytest.raises(WeightsUnavailableError, match='^offline:'):
        resolve_weights('da3mono-large', cache_dir=tmp_path / 'empty')
    assert time.monotonic() - t0 < 0.5
    assert len(_offline_lines(caplog)) == 1


def test_hf_hub_offline_needs_no_probe(tmp_path, monkeypatch, no_download):
    monkeypatch.setenv('HF_HUB_OFFLINE', '1')
    monkeypatch.setattr(hub_reach, '_probe',
                        lambda *a: pytest.fail('probed despite HF_HUB_OFFLINE'))
    with pytest.raises(WeightsUnavailableError, match='offline mode is on'):
        resolve_weights('da3metric-large', cache_dir=tmp_path / 'empty')


class _NotFound(http.server.BaseHTTPRequestHandler):
    """A hub that is up but has no such file: 404 for everything."""

    def _answer(self):
        self.send_response(404)
        self.send_header('Content-Length', '0')
        self.end_headers()

    do_GET = do_HEAD = _answer

    def log_message(self, *a):
        pass


def test_reachable_hub_without_the_file_behaves_as_before(tmp_path, monkeypatch, caplog):
    server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), _NotFound)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        endpoint = f'http://127.0.0.1:{server.server_address[1]}'
        monkeypatch.setenv('HF_ENDPOINT', endpoint)
        caplog.set_level(logging.INFO)
        with pytest.raises(WeightsUnavailableError, match='could not download') as e:
            resolve_weights('da3metric-large', cache_dir=tmp_path / 'empty')
        assert 'offline' not in str(e.value) and not _offline_lines(caplog)
        assert hub_reach.hub_reach(endpoint).ok
    finally:
        server.shutdown()
        server.server_close()


def test_a_proxy_is_what_gets_probed(monkeypatch):
    monkeypatch.setenv('HTTPS_PROXY', 'http://proxy.example:3128')
    assert hub_reach._target('https://huggingface.co') == ('proxy.example', 3128,
                                                           'proxy proxy.example:3128')
    monkeypatch.setenv('NO_PROXY', 'huggingface.co')
    assert hub_reach._target('https://huggingface.co')[:2] == ('huggingface.co', 443)
    with pytest.raises(ValueError, match='HF_ENDPOINT'):
        hub_reach._target('not a url')


def test_a_resolver_that_hangs_is_cut_off(monkeypatch):
    """DNS has no timeout of its own: a probe that does not answer is abandoned at the limit."""
    release = threading.Event()

    def hang(*a, **k):
        release.wait(10)
        raise OSError('answered too late')
    monkeypatch.setattr(socket, 'create_connection', hang)
    try:
        t0 = time.monotonic()
        reach = hub_reach.hub_reach('https://slow-resolver.example', timeout=0.3)
        assert time.monotonic() - t0 < 1.0
        assert not reach.ok and reach.reason == 'no answer within 0.3 s'
        assert hub_reach.hub_reach('https://slow-resolver.example').cached
    finally:
        release.set()
