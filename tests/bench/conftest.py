# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Run the benchmark scripts for real under this machine's Open MPI, with Debian's python3-mpi4py and python3-numpy."""
from __future__ import annotations
import importlib.util
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / 'files' / 'bench'
# the interpreter the nodes use: Debian's, where python3-mpi4py and python3-numpy live (not this venv's Python)
SYSTEM_PYTHON = '/usr/bin/python3'
# one host, so only shared memory: ob1 + vader avoids probing UCX, libfabric and verbs devices the test host may
# half-have, and without single-copy (CMA) vader also works in containers that forbid ptrace between processes
MPIRUN_MCA = ['--mca', 'pml', 'ob1', '--mca', 'btl', 'self,vader', '--mca', 'btl_vader_single_copy_mechanism', 'none']


def _missing():
    """Why the scripts cannot run here, or None."""
    if shutil.which('mpirun') is None:
        return 'mpirun is not installed (Debian: openmpi-bin)'
    if not os.access(SYSTEM_PYTHON, os.X_OK):
        return '%s is not there' % SYSTEM_PYTHON
    probe = subprocess.run([SYSTEM_PYTHON, '-c', 'import mpi4py, numpy'], capture_output=True, text=True, check=False)
    if probe.returncode:
        return '%s cannot import mpi4py and numpy (Debian: python3-mpi4py python3-numpy): %s' % (
            SYSTEM_PYTHON, probe.stderr.strip().splitlines()[-1:])
    return None


MISSING = _missing()


@pytest.fixture
def mpirun():
    """``mpirun(script, *args, np=2, env=None)`` runs files/bench/<script> on np local ranks, ``env`` added to the
    environment; returns the CompletedProcess."""
    if MISSING:
        pytest.skip(MISSING)
    base = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT='1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1', OMPI_MCA_rmaps_base_oversubscribe='1')

    def run(script, *args, np=2, env=None):
        cmd = ['mpirun', '--oversubscribe', '-np', str(np)] + MPIRUN_MCA + [SYSTEM_PYTHON, str(BENCH / script)] + [str(a) for a in args]
        return subprocess.run(cmd, env=dict(base, **(env or {})), capture_output=True, text=True, timeout=120, check=False)
    return run


@pytest.fixture
def plain():
    """``plain(script, *args)`` runs the script once without mpirun (argument errors need no MPI)."""
    if MISSING:
        pytest.skip(MISSING)

    def run(script, *args):
        return subprocess.run([SYSTEM_PYTHON, str(BENCH / script)] + [str(a) for a in args],
                              capture_output=True, text=True, timeout=60, check=False)
    return run


@pytest.fixture
def read_json():
    """Load a JSON file the scripts wrote."""
    def read(path):
        return json.loads(Path(path).read_text(encoding='utf-8'))
    return read


def _load(name):
    """files/bench/<name>.py imported into the test's Python, for its pure functions (the scripts import MPI and CuPy
    only when they run)."""
    spec = importlib.util.spec_from_file_location('hpcfabric_bench_' + name, BENCH / (name + '.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope='session')
def bench():
    """files/bench/allreduce.py."""
    return _load('allreduce')


@pytest.fixture(scope='session')
def nccl_engine():
    """files/bench/allreduce_nccl.py."""
    return _load('allreduce_nccl')


@pytest.fixture(scope='session')
def ipc_engine():
    """files/bench/allreduce_ipc.py."""
    return _load('allreduce_ipc')


@pytest.fixture
def without_cupy():
    """Skip when the nodes' interpreter has CuPy: the missing-CuPy refusal cannot happen there."""
    if MISSING:
        pytest.skip(MISSING)
    if subprocess.run([SYSTEM_PYTHON, '-c', 'import cupy'], capture_output=True, check=False).returncode == 0:
        pytest.skip('CuPy is installed for %s, so the missing-CuPy error cannot happen' % SYSTEM_PYTHON)


@pytest.fixture
def fixture_text():
    """The text of tests/bench/fixtures/<name> (sources in SOURCES.md there)."""
    def read(name):
        return (Path(__file__).resolve().parent / 'fixtures' / name).read_text(encoding='utf-8')
    return read
