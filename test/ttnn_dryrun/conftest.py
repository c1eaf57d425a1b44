"""The fixture both real-ttnn test files use: the side venv that holds ttnn 0.81.1."""
import os

import pytest

from devtools.ttnn.dryrun import environment


@pytest.fixture(scope='module')
def side_python():
    """Python of the side venv; without Python 3.12 a loud skip, in CI (CI=true) a failure."""
    try:
        return environment.ensure_dryrun_venv()
    except environment.ConformanceUnavailable as e:
        if os.environ.get('CI', '').lower() == 'true':
            pytest.fail(f'the real-ttnn side environment cannot be built in CI: {e}')
        pytest.skip(f'!!! REAL-TTNN CHECKS NOT RUN (no side environment): {e} !!!')
