"""The README demo runs end to end offline (quick mode): random weights are labelled everywhere.

The DA3-SMALL pass runs the tiny any-view config as a labelled stand-in (rule-v1 + X1, built from
the package, no test data): relative outputs only, nothing on `depth`. The demo's index.html is
rendered by a real headless Chromium (screenshot and DOM), from the same run (module fixture).
"""
import json
import os
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import cv2
import numpy as np
import pytest

from support.procs import python_cmd, spawn

# The README demo runs in the Jazzy venv (`make demo`); its ROS surface (replay, record, the
# nodes) is covered on Kilted by the bag and node tests.
pytestmark = [pytest.mark.ros, pytest.mark.one_distro]


@pytest.fixture(scope='module')
def demo(tmp_path_factory):
    """The quick offline demo, run once for this module: (output folder, its log)."""
    tmp = tmp_path_factory.mktemp('demo')
    out = tmp / 'demo_out'
    env = {'HF_HUB_OFFLINE': '1', 'HF_HUB_CACHE': str(tmp / 'empty_cache')}
    with spawn(python_cmd('tt_depth_ros.tools.demo.run', '--out', str(out), '--quick', '--offline'),
               env=env, unset=('WEIGHTS', 'PAIR_WEIGHTS', 'ANYVIEW_WEIGHTS'), timeout=30,
               name='demo') as proc:
        proc.wait(600)
        log = proc.log_text()
    assert proc.returncode == 0, log
    return out, log


def test_demo_quick_offline(demo):
    out, log = demo
    assert log.count('RANDOM-WEIGHTS') >= 3             # said at start, per model and at the end
    files = [p for p in out.iterdir() if p.is_file() and p.name != 'index.html']
    assert files and all('RANDOM-WEIGHTS' in p.name for p in files), [p.name for p in files]
    assert f'open {out / "index.html"} in a browser' in log
    report = json.loads(next(out.glob('demo_report_RANDOM-WEIGHTS.json')).read_text())
    assert report['random_weights'] is True
    assert report['weights']['depth']['source'] == 'rule-v1'
    depth = report['depth']
    assert depth['outputs'] == depth['frames_sent'] == 12
    assert len(depth['panels']) == 12 and all(Path(p).read_bytes()[:4] == b'\x89PNG'
                                              for p in depth['panels'])
    ply = Path(depth['ply']).read_bytes()
    assert ply.startswith(b'ply\n') and b'element vertex' in ply and len(ply) > 10_000
    assert depth['recorded_counts']['/depth'] >= 12
    assert 0 <= depth['accuracy']['delta1'] <= 1
    assert 'tiny-config STAND-IN for da3-small' in log
    anyview = report['anyview']
    assert report['weights']['anyview']['source'] == 'rule-v1'
    assert (anyview['model'], anyview['stand_in_for']) == ('da3-anyview-tiny', 'da3-small')
    assert anyview['depth_relative'] == anyview['frames_sent'] == 4
    assert anyview['confidence'] == 4 and anyview['camera_info_estimated'] >= 1
    assert anyview['metric_depth_messages'] == 0              # a relative model has no metres
    K = anyview['K_estimated_first']
    assert K[0][0] > 0 and K[1][1] > 0 and K[2] == [0.0, 0.0, 1.0]
    assert len(anyview['panels']) == 4 and all(
        'da3-anyview-tiny-standin-for-da3-small_RANDOM-WEIGHTS' in Path(p).name
        for p in anyview['panels'])
    assert len(anyview['alignment_scales']) == 4 and 0 <= anyview['accuracy']['delta1'] <= 1
    bench = json.loads(Path(report['benchmark']['json']).read_text())
    assert bench['unmatched_outputs_total'] == 0 and len(bench['plots']) == 3
    assert bench['config']['tag'] == '_RANDOM-WEIGHTS'
    if isinstance(report['weights']['pair'], dict):       # pair node installed
        assert report['pair']['pairs_sent'] == 2 and report['pair']['clouds'] >= 1


SECTIONS = ('random-weights-banner', 'weights', 'panels', 'anyview-panels', 'accuracy',
            'benchmark', 'resources', 'files')


class _Dom(HTMLParser):
    """The rendered DOM's ids, image sources, links and <img> count (what a query would find)."""

    def __init__(self):
        super().__init__()
        self.ids, self.refs, self.imgs, self.tags = set(), [], 0, set()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.add(tag)
        if a.get('id'):
            self.ids.add(a['id'])
        for key in ('src', 'href', 'srcset', 'poster', 'data'):
            if a.get(key) is not None:
                self.refs.append((tag, a[key]))
        self.imgs += tag == 'img'


def _chromium() -> str:
    exe = shutil.which('chromium') or shutil.which('chromium-browser')
    if exe:
        return exe
    msg = ('Chromium is not installed (scripts/run_tests.sh installs the Debian package '
           '"chromium" when run as root)')
    if os.environ.get('CI', '').lower() == 'true':
        pytest.fail(f'{msg}: the report page cannot be checked in CI without it')
    pytest.skip(msg)


def test_report_page_renders_in_headless_chromium(demo, tmp_path):
    out, _ = demo
    page = out / 'index.html'
    exe = _chromium()
    base = [exe, '--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
            '--hide-scrollbars', f'--user-data-dir={tmp_path / "profile"}',
            '--host-resolver-rules=MAP * ~NOTFOUND', '--window-size=1200,1600']
    shot = tmp_path / 'report.png'
    subprocess.run([*base, f'--screenshot={shot}', page.as_uri()], check=True, timeout=60,
                   capture_output=True)
    dom_text = subprocess.run([*base, '--dump-dom', page.as_uri()], check=True, timeout=60,
                              capture_output=True, text=True).stdout
    img = cv2.imread(str(shot))[..., ::-1]
    assert img is not None and img.shape[:2] == (1600, 1200)
    assert len(np.unique(img.reshape(-1, 3), axis=0)) > 50     # not a blank / single colour
    banner = np.all(np.abs(img.astype(int) - (0xB0, 0x00, 0x20)) < 12, axis=-1)
    assert banner[:400].sum() > 20_000                  # the RANDOM-WEIGHTS banner is drawn on top
    turbo = (img[..., 0] > 200) & (img[..., 1] < 80) & (img[..., 2] < 60)   # panels' red
    assert turbo.sum() > 500
    dom = _Dom()
    dom.feed(dom_text)
    missing = [s for s in SECTIONS if s not in dom.ids]
    assert not missing, f'sections missing from the rendered DOM: {missing}'
    assert not dom.tags & {'script', 'iframe', 'link', 'object', 'embed'}
    assert dom.imgs >= 12 + 4 + 3                        # depth + any-view panels, three plots
    for tag, ref in dom.refs:                            # nothing outside demo_out
        if ref.startswith('data:image/png;base64,'):
            continue
        assert '://' not in ref and not ref.startswith(('/', '//')), (tag, ref)
        target = (out / ref).resolve()
        assert target.is_relative_to(out.resolve()) and target.exists(), (tag, ref)
    linked = {ref.rstrip('/') for tag, ref in dom.refs if tag == 'a'}
    assert any(r.endswith('.ply') for r in linked) and 'demo_report_RANDOM-WEIGHTS.json' in linked
    assert any(r.endswith('_ros2_benchmark.json') for r in linked)
    assert 'url(' not in dom_text.split('</style>')[0].split('<style>')[-1]
    if os.environ.get('TT_REPORT_SCREENSHOT'):     # the README picture ("The demo report")
        from PIL import Image  # matplotlib's dependency: a 256-colour PNG

        small = cv2.resize(img, (600, 800), interpolation=cv2.INTER_AREA)
        Image.fromarray(small).quantize(256).save(os.environ['TT_REPORT_SCREENSHOT'],
                                                  optimize=True)
