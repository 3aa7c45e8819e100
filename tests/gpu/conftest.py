# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""What the GPU proof does on a machine without a GPU: its checks, its one-line refusals, its summary and bundle."""
from __future__ import annotations
import os
import subprocess
import time

import pytest

from proof_paths import ROOT


@pytest.fixture
def run_make():
    """``run_make(target, path=None, **env)``: (rc, output lines, seconds) of ``make TARGET`` in the checkout."""
    def run(target, path=None, **env):
        full = dict(os.environ, **env)
        if path is not None:
            full['PATH'] = path
        start = time.monotonic()
        proc = subprocess.run(['make', '--no-print-directory', target], cwd=ROOT, env=full, capture_output=True,
                              text=True, timeout=120, check=False)
        return proc.returncode, (proc.stdout + proc.stderr).splitlines(), time.monotonic() - start
    return run
