# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""mpi_facts module: saved texts, fake ompi_info/ucx_info on PATH, missing commands, and the real tools."""

from __future__ import annotations

import os
import shutil
import stat

import pytest

from ansible_collections.hpcfabric.cluster.plugins.modules import mpi_facts

CUDA_BUILD_TRANSPORTS = ['cma', 'cuda_copy', 'cuda_ipc', 'dc_mlx5', 'gdr_copy', 'posix', 'rc_mlx5', 'rc_verbs',
                         'self', 'sysv', 'tcp', 'ud_mlx5', 'ud_verbs']
DEBIAN_MPI = {
    'implementation': 'Open MPI', 'version': '4.1.4', 'cuda_aware': False,
    'coll_components': ['adapt', 'basic', 'han', 'inter', 'libnbc', 'monitoring', 'self', 'sm', 'sync', 'tuned'],
    'ucx': {'version': '1.13.1', 'configured_with_cuda': False, 'transports': ['cma', 'posix', 'self', 'sysv', 'tcp']},
}


def _script(path, body):
    path.write_text('#!/bin/sh\n' + body, encoding='utf-8')
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


@pytest.fixture
def fake_bin(tmp_path, monkeypatch):
    """A PATH holding only the fake tools a test writes into it."""
    bindir = tmp_path / 'bin'
    bindir.mkdir()
    monkeypatch.setenv('PATH', str(bindir))
    return bindir


def _fake_ompi_info(bindir, fixture_path, name='debian12-openmpi-4.1.4-parsable-all.txt'):
    cat = shutil.which('cat', path='/usr/bin:/bin')
    return _script(bindir / 'ompi_info', 'exec %s "%s"\n' % (cat, fixture_path('ompi_info', name)))


def _fake_ucx_info(bindir, fixture_path, version='ucx-1.16.0-cuda-v.txt', devices='ucx-1.16.0-cuda-d.txt'):
    cat = shutil.which('cat', path='/usr/bin:/bin')
    return _script(bindir / 'ucx_info',
                   'case "$1" in\n'
                   '  -v) exec %s "%s" ;;\n'
                   '  -d) exec %s "%s" ;;\n'
                   'esac\nexit 2\n' % (cat, fixture_path('ucx_info', version), cat, fixture_path('ucx_info', devices)))


@pytest.mark.parametrize('check_mode', [False, True])
def test_given_texts(run_module, fixture_text, check_mode):
    result = run_module(mpi_facts, {
        'ompi_info_output': fixture_text('ompi_info', 'debian12-openmpi-4.1.4-parsable-all.txt'),
        'ucx_info_output': fixture_text('ucx_info', 'debian12-ucx-1.13.1-v.txt'),
        'ucx_devices_output': fixture_text('ucx_info', 'debian12-ucx-1.13.1-d.txt'),
    }, check_mode=check_mode)
    assert result['changed'] is False
    assert result['ansible_facts']['mpi'] == DEBIAN_MPI
    assert result['warnings'] == []


def test_given_text_runs_no_command(run_module, fixture_text, fake_bin):
    # nothing on PATH: had the module looked for ompi_info it would have failed
    result = run_module(mpi_facts, {
        'ompi_info_output': fixture_text('ompi_info', 'openmpi-docs-cuda-aware-check.txt'),
    })
    mpi = result['ansible_facts']['mpi']
    assert mpi['cuda_aware'] is True
    assert mpi['version'] is None
    assert mpi['ucx'] == {'version': None, 'configured_with_cuda': None, 'transports': []}
    assert result['warnings'] == ['ompi_info --parsable --all: no ompi:version:full line; version unknown']


def test_only_ucx_texts(run_module, fixture_text, fake_bin):
    result = run_module(mpi_facts, {
        'ucx_info_output': fixture_text('ucx_info', 'ucx-1.17.0-hpcx-v.txt'),
        'ucx_devices_output': fixture_text('ucx_info', 'ucx-1.17.0-hpcx-d-grep-transport.txt'),
    }, check_mode=True)
    mpi = result['ansible_facts']['mpi']
    assert mpi['implementation'] is None
    assert mpi['ucx'] == {'version': '1.17.0', 'configured_with_cuda': True, 'transports': CUDA_BUILD_TRANSPORTS}


def test_unparseable_text_fails_naming_command_and_line(run_module):
    result = run_module(mpi_facts, {'ompi_info_output': 'bash: ompi_info: command not found\n'})
    assert result['failed'] is True
    assert 'ompi_info --parsable --all' in result['msg']
    assert 'bash: ompi_info: command not found' in result['msg']


def test_human_readable_grep_is_read(run_module, fixture_text):
    result = run_module(mpi_facts, {
        'ompi_info_output': fixture_text('ompi_info', 'debian13-openmpi-5.0.7-all-grep-cuda.txt'),
    })
    assert not result.get('failed')
    assert result['ansible_facts']['mpi']['cuda_aware'] is False
    assert result['warnings'] == ["ompi_info (human-readable form): no 'Open MPI:' line; version unknown"]


def test_missing_ompi_info_fails_naming_it(run_module, fake_bin):
    result = run_module(mpi_facts, {})
    assert result['failed'] is True
    assert 'ompi_info not found' in result['msg']


def test_bad_ompi_info_path_fails_naming_it(run_module, tmp_path):
    result = run_module(mpi_facts, {'ompi_info_path': str(tmp_path / 'nope' / 'ompi_info')})
    assert result['failed'] is True
    assert 'ompi_info not found or not executable' in result['msg']


@pytest.mark.parametrize('check_mode', [False, True])
def test_fake_tools_on_path(run_module, fixture_path, fake_bin, check_mode):
    _fake_ompi_info(fake_bin, fixture_path)
    _fake_ucx_info(fake_bin, fixture_path)
    result = run_module(mpi_facts, {}, check_mode=check_mode)
    assert result['changed'] is False
    assert result['ansible_facts']['mpi'] == {
        'implementation': 'Open MPI', 'version': '4.1.4', 'cuda_aware': False,
        'coll_components': DEBIAN_MPI['coll_components'],
        'ucx': {'version': '1.16.0', 'configured_with_cuda': True, 'transports': CUDA_BUILD_TRANSPORTS},
    }


def test_explicit_paths_outside_path(run_module, fixture_path, tmp_path, fake_bin):
    hpcx = tmp_path / 'hpcx'
    hpcx.mkdir()
    ompi_info = _fake_ompi_info(hpcx, fixture_path, name='openmpi-docs-cuda-aware-check.txt')
    ucx_info = _fake_ucx_info(hpcx, fixture_path, version='ucx-1.17.0-hpcx-v.txt',
                              devices='ucx-1.17.0-hpcx-d-grep-transport.txt')
    result = run_module(mpi_facts, {'ompi_info_path': str(ompi_info), 'ucx_info_path': str(ucx_info)})
    mpi = result['ansible_facts']['mpi']
    assert mpi['cuda_aware'] is True
    assert mpi['ucx']['version'] == '1.17.0'
    assert 'gdr_copy' in mpi['ucx']['transports']


def test_missing_ucx_info_is_a_warning(run_module, fixture_path, fake_bin):
    _fake_ompi_info(fake_bin, fixture_path)
    result = run_module(mpi_facts, {})
    assert 'failed' not in result
    mpi = result['ansible_facts']['mpi']
    assert mpi['version'] == '4.1.4'
    assert mpi['ucx'] == {'version': None, 'configured_with_cuda': None, 'transports': []}
    assert any('ucx_info not found' in warning for warning in result['warnings'])


def test_failing_ucx_info_is_a_warning(run_module, fixture_path, fake_bin):
    _fake_ompi_info(fake_bin, fixture_path)
    _script(fake_bin / 'ucx_info', 'echo "ucx_info: error while loading shared libraries: libgdrapi.so.1" >&2\nexit 127\n')
    result = run_module(mpi_facts, {})
    assert result['ansible_facts']['mpi']['ucx'] == {'version': None, 'configured_with_cuda': None, 'transports': []}
    assert any('exited with 127' in warning and 'libgdrapi.so.1' in warning for warning in result['warnings'])


def test_failing_ompi_info_fails(run_module, fake_bin):
    _script(fake_bin / 'ompi_info', 'echo "ompi_info: error while loading shared libraries: libcuda.so.1" >&2\nexit 127\n')
    result = run_module(mpi_facts, {})
    assert result['failed'] is True
    assert 'ompi_info --parsable --all failed (rc=127)' in result['msg']
    assert 'libcuda.so.1' in result['msg']


@pytest.mark.skipif(not os.path.exists('/usr/bin/ompi_info'), reason='Debian openmpi-bin is not installed here')
def test_real_debian_open_mpi(run_module, monkeypatch):
    monkeypatch.setenv('PATH', '/usr/bin:/bin')
    result = run_module(mpi_facts, {})
    mpi = result['ansible_facts']['mpi']
    assert mpi['implementation'] == 'Open MPI'
    assert mpi['version'].startswith('4.1')
    # Debian's Open MPI is not CUDA-aware
    assert mpi['cuda_aware'] is False
    if os.path.exists('/usr/bin/ucx_info'):
        assert mpi['ucx']['configured_with_cuda'] is False
        assert 'self' in mpi['ucx']['transports']
        assert 'cuda_copy' not in mpi['ucx']['transports']
