# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""`make gpu-proof` on a machine that cannot run it: it stops within a minute with one line naming what is missing."""
from __future__ import annotations
import hashlib
import json
import os
import shutil
import subprocess
import sys

import pytest

import preflight
from proof_paths import ROOT

# what nvidia-smi prints, exit 9, on a node whose driver is installed but not loaded (e.g. after a kernel update)
DRIVER_NOT_LOADED = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the "
                     "latest NVIDIA driver is installed and running.")


@pytest.fixture
def bare_path(tmp_path):
    """A PATH with only what make and the check need (no nvidia-smi, no nvcc); returns (PATH, its directory)."""
    bindir = tmp_path / 'bin'
    bindir.mkdir()
    for tool in ('make', 'bash', 'dirname', 'env'):
        found = shutil.which(tool)
        assert found, tool
        (bindir / tool).symlink_to(found)
    # the interpreter itself, not a version manager's shim (a script that needs more of PATH)
    (bindir / 'python3').symlink_to(os.path.realpath(sys.executable))
    return str(bindir), bindir


def test_without_nvidia_smi_make_stops_at_once_with_one_line(run_make, bare_path):
    path, dummy = bare_path
    assert shutil.which('nvidia-smi', path=path) is None
    rc, lines, seconds = run_make('gpu-proof', path=path)
    assert rc != 0
    assert seconds < 60
    assert len(lines) == 1, lines
    assert 'nvidia-smi is not on PATH' in lines[0]
    assert 'gpu-proof: cannot run here:' in lines[0]


def test_a_driver_that_does_not_answer_is_named(run_make, bare_path, tmp_path):
    path, bindir = bare_path
    fake = bindir / 'nvidia-smi'
    fake.write_text('#!/bin/sh\necho "%s"\nexit 9\n' % DRIVER_NOT_LOADED)
    fake.chmod(0o755)
    rc, lines, dummy = run_make('gpu-proof', path=path)
    assert rc != 0 and len(lines) == 1, lines
    assert 'nvidia-smi -L failed (exit 9): NVIDIA-SMI has failed' in lines[0]


def test_everything_missing_is_named_on_the_one_line(run_make, bare_path, tmp_path):
    path, dummy = bare_path
    rc, lines, dummy = run_make('gpu-proof', path=path, GPU_PROOF_BUNDLE=str(tmp_path / 'nowhere'),
                                GPU_PROOF_CUDA_HOME=str(tmp_path / 'no-cuda'), GPU_PROOF_PYTHON=str(tmp_path / 'no-python'))
    assert rc != 0 and len(lines) == 1, lines
    for part in ('nvidia-smi is not on PATH', 'GPU Python %s not found' % (tmp_path / 'no-python'),
                 'no bundle at %s' % (tmp_path / 'nowhere')):
        assert part in lines[0]
    # nothing is compiled on the node, so a missing CUDA toolkit is no reason to stop
    assert 'CUDA toolkit' not in lines[0]


@pytest.mark.parametrize('name, value, says', [
    ('GPU_PROOF_RANKS', '1', 'GPU_PROOF_RANKS must be a whole number >= 2'),
    ('GPU_PROOF_MAX_BYTES', '1T', "GPU_PROOF_MAX_BYTES must be bytes or a K, M or G size, got '1T'"),
    ('GPU_PROOF_LIMIT_FRACTION', '1.5', "GPU_PROOF_LIMIT_FRACTION must be a number from 0 to 1, got '1.5'"),
    ('GPU_PROOF_ENGINES', 'ring,gloo', "GPU_PROOF_ENGINES must be auto or a comma list of ring, mpi, nccl and ipc, got 'ring,gloo'"),
])
def test_bad_settings_are_refused_before_anything_runs(run_make, name, value, says):
    rc, lines, dummy = run_make('gpu-proof', **{name: value})
    assert rc != 0 and len(lines) == 1, lines
    assert 'gpu-proof: bad settings: ' in lines[0] and says in lines[0]


def test_an_outputs_folder_that_is_not_the_proofs_is_left_alone(tmp_path):
    out = tmp_path / 'mine'
    out.mkdir()
    (out / 'thesis.tex').write_text('keep me')
    proc = subprocess.run([str(ROOT / 'tests' / 'gpu' / 'proof.sh')], env={'PATH': '/usr/bin:/bin', 'GPU_PROOF_OUT': str(out)},
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 1
    assert (proc.stdout + proc.stderr).splitlines() == [
        'gpu-proof: GPU_PROOF_OUT %s is not empty and is not an earlier proof\'s folder: choose another' % out]
    assert (out / 'thesis.tex').read_text() == 'keep me'


def make_bundle(root, python_version='3.12', required=()):
    files = {'mpi/openmpi-4.1.4-ucx-1.13.1-cuda-0123456789ab.tar.gz': b'mpi', 'wheels/pip-1-py3-none-any.whl': b'pip'}
    manifest = {'python_version': python_version, 'files': {},
                'mpi_package': {'system_libraries': {'required': list(required), 'optional': []}}}
    for name, content in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(content)
        manifest['files'][name] = {'sha256': hashlib.sha256(content).hexdigest(), 'bytes': len(content)}
    (root / 'manifest.json').write_text(json.dumps(manifest))
    return root


def test_a_bundle_as_made_checks_out(tmp_path):
    assert preflight.bundle_problems(str(make_bundle(tmp_path)), '3.12') == []


def test_a_changed_or_missing_bundle_file_is_named(tmp_path):
    bundle = make_bundle(tmp_path)
    (bundle / 'mpi' / 'openmpi-4.1.4-ucx-1.13.1-cuda-0123456789ab.tar.gz').write_bytes(b'tampered')
    (bundle / 'wheels' / 'pip-1-py3-none-any.whl').unlink()
    assert preflight.bundle_problems(str(bundle), '3.12') == [
        'bundle %s lacks wheels/pip-1-py3-none-any.whl' % bundle,
        'bundle %s: mpi/openmpi-4.1.4-ucx-1.13.1-cuda-0123456789ab.tar.gz changed since it was made (sha256 differs '
        'from manifest.json)' % bundle]


def test_a_bundle_for_another_python_says_how_to_rebuild(tmp_path):
    bundle = make_bundle(tmp_path, python_version='3.11')
    assert preflight.bundle_problems(str(bundle), '3.12') == [
        'bundle %s holds wheels for Python 3.11, the GPU Python is 3.12: rebuild it with GPU_PROOF_PYVER=3.12 '
        'make gpu-proof-bundle' % bundle]


def test_an_nvcc_wrapper_outside_the_toolkit_is_not_taken_for_it(tmp_path, monkeypatch):
    wrapper = tmp_path / 'bin' / 'nvcc'
    wrapper.parent.mkdir()
    wrapper.write_text('#!/bin/sh\nexec /opt/cuda-13.0/bin/nvcc "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv('PATH', str(wrapper.parent))
    assert preflight.find_cuda_home() == '/usr/local/cuda'
    toolkit = tmp_path / 'cuda'
    (toolkit / 'bin').mkdir(parents=True)
    (toolkit / 'include').mkdir()
    (toolkit / 'include' / 'cuda.h').write_text('')
    (toolkit / 'bin' / 'nvcc').write_text('#!/bin/sh\n')
    (toolkit / 'bin' / 'nvcc').chmod(0o755)
    wrapper.unlink()
    wrapper.symlink_to(toolkit / 'bin' / 'nvcc')
    assert preflight.find_cuda_home() == str(toolkit)


# `ldconfig -p` as Debian 12 prints it (abridged to three entries)
LDCONFIG = """3 libs found in cache `/etc/ld.so.cache'
\tlibz.so.1 (libc6,x86-64) => /lib/x86_64-linux-gnu/libz.so.1
\tlibnuma.so.1 (libc6,x86-64) => /lib/x86_64-linux-gnu/libnuma.so.1
\tlibc.so.6 (libc6,x86-64, OS ABI: Linux 3.2.0) => /lib/x86_64-linux-gnu/libc.so.6
"""


def test_the_libraries_the_package_leaves_to_the_node_are_looked_up_in_the_loader_cache_and_path(tmp_path, monkeypatch):
    monkeypatch.setenv('LD_LIBRARY_PATH', str(tmp_path))
    (tmp_path / 'libudev.so.1').write_text('')
    assert preflight.missing_libraries(['libc.so.6', 'libnuma.so.1', 'libudev.so.1', 'libibverbs.so.1'], LDCONFIG) == [
        'libibverbs.so.1']


def test_a_node_without_a_library_the_package_needs_is_told_which(tmp_path, monkeypatch):
    monkeypatch.setattr(preflight, 'missing_libraries', lambda sonames: [s for s in sonames if s == 'libnuma.so.1'])
    bundle = make_bundle(tmp_path, required=['libc.so.6', 'libnuma.so.1'])
    assert preflight.library_problems(str(bundle)) == [
        "the bundle's Open MPI and UCX need libnuma.so.1, which this node lacks (Debian/Ubuntu: libnuma.so.1 is "
        "libnuma1, libz.so.1 zlib1g)"]


@pytest.mark.parametrize('nccl, engines, note', [
    ({'ok': True, 'version': 23001}, ['ring', 'mpi', 'ipc', 'nccl'], None),
    # PyTorch 2.11's NCCL on the H200 node of issue 32
    ({'ok': True, 'version': 22809}, ['ring', 'mpi', 'ipc'],
     'NCCL 2.28.9 in the GPU Python refuses two ranks on one GPU ("Duplicate GPU detected"; 2.30 and later allow '
     'it); the bundle carries no NCCL wheel'),
    ({'ok': False, 'error': 'CuPy finds no NCCL library'}, ['ring', 'mpi', 'ipc'],
     'no NCCL in the GPU Python (CuPy finds no NCCL library); the bundle carries no NCCL wheel'),
])
def test_nccl_runs_only_where_it_lets_two_ranks_share_the_gpu(nccl, engines, note):
    assert preflight.engines_for({'modules': {'cupy.cuda.nccl': nccl}}) == (engines, note)
