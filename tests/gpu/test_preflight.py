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
    for part in ('nvidia-smi is not on PATH', 'no CUDA toolkit at %s' % (tmp_path / 'no-cuda'),
                 'GPU Python %s not found' % (tmp_path / 'no-python'), 'no bundle at %s' % (tmp_path / 'nowhere')):
        assert part in lines[0]


@pytest.mark.parametrize('name, value, says', [
    ('GPU_PROOF_RANKS', '1', 'GPU_PROOF_RANKS must be a whole number >= 2'),
    ('GPU_PROOF_MAX_BYTES', '1T', "GPU_PROOF_MAX_BYTES must be bytes or a K, M or G size, got '1T'"),
    ('GPU_PROOF_MIN_BUSBW_GBS', '-3', "GPU_PROOF_MIN_BUSBW_GBS must be a number of GB/s >= 0, got '-3'"),
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


def make_bundle(root, python_version='3.12'):
    files = {'sources/ucx-1.0.tar.gz': b'ucx', 'wheels/pip-1-py3-none-any.whl': b'pip'}
    manifest = {'python_version': python_version, 'files': {}}
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
    (bundle / 'sources' / 'ucx-1.0.tar.gz').write_bytes(b'tampered')
    (bundle / 'wheels' / 'pip-1-py3-none-any.whl').unlink()
    assert preflight.bundle_problems(str(bundle), '3.12') == [
        'bundle %s lacks wheels/pip-1-py3-none-any.whl' % bundle,
        'bundle %s: sources/ucx-1.0.tar.gz changed since it was made (sha256 differs from manifest.json)' % bundle]


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
