"""tt-depth-batch's progress: a tqdm bar on a terminal (a real pty), plain log lines elsewhere."""
import io
import logging
import os
import pty
import subprocess
import sys

from support.procs import ROOT
from tt_depth_ros.tools.batch.progress import Progress

ROWS = [{'bag': 'a', 'status': 'ok', 'frames_out': 12}, {'bag': 'b', 'status': 'ok',
                                                        'frames_out': 18},
        {'bag': 'c', 'status': 'failed', 'frames_out': 0}]
CODE = ('import time; from tt_depth_ros.tools.batch.progress import Progress; p = Progress(3)\n'
        f'for row in {ROWS!r}:\n    time.sleep(0.05); p.done(row)\np.close()\n')


def test_a_bar_on_a_terminal():
    master, slave = pty.openpty()   # a fresh pty reports a size of 0 x 0: the bar still shows
    proc = subprocess.Popen([sys.executable, '-c', CODE], stdin=slave, stdout=slave,
                            stderr=slave, cwd=ROOT, env={**os.environ, 'COLUMNS': '160'})
    os.close(slave)
    out = b''
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:      # EIO: the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    assert proc.wait(30) == 0, out
    text = out.decode(errors='replace')
    final = text.replace('\r', '\n').splitlines()
    last = [line for line in final if '3/3' in line][-1]
    assert 'tt-depth-batch' in last and 'bag' in last and '30 frames' in last, last
    assert 'frames/s' in last and 'last c failed' in last and '<' in last, last   # rate, ETA
    assert '0/3' in text and 'progress:' not in text       # the bar, not the log lines


def test_plain_lines_elsewhere(caplog):
    caplog.set_level(logging.INFO, logger='tt_depth_batch')
    progress = Progress(3, stream=io.StringIO())
    for row in ROWS:
        progress.done(row)
    progress.close()
    lines = [r.getMessage() for r in caplog.records]
    assert lines[0].startswith('progress: 1/3 bags, 12 frames out') and 'ETA' in lines[0]
    assert lines[2].startswith('progress: 3/3 bags, 30 frames out') and 'done' in lines[2]
    assert '(last: c failed)' in lines[2]
