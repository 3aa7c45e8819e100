# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The proof's playbook where it can run without a GPU (its offline package check), and the bundle's own checks."""
from __future__ import annotations
import json
import os
import subprocess
import sys

import pytest

import bundle
from proof_paths import FIXTURES, HERE, ROOT

ANSIBLE_PLAYBOOK = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')


def play(tmp_path, *args):
    inventory = tmp_path / 'inventory.json'
    inventory.write_text(json.dumps({'all': {'children': {'gpu_nodes': {'hosts': {'gpunode': {
        'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable}}}}}}))
    env = dict(os.environ, ANSIBLE_NOCOLOR='1', ANSIBLE_CONFIG=str(ROOT / 'ansible.cfg'))
    proc = subprocess.run([ANSIBLE_PLAYBOOK, '-i', str(inventory), str(HERE / 'proof.yml'), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    return proc.returncode, proc.stdout + proc.stderr


def test_the_playbook_parses(tmp_path):
    rc, out = play(tmp_path, '--syntax-check')
    assert rc == 0, out


def test_missing_os_packages_are_named_before_the_build(tmp_path):
    # the real check on this machine, with a package no OS has added to the role's list; tar is always installed
    rc, out = play(tmp_path, '--tags', 'packages', '-e', 'gpu_proof_out=%s' % tmp_path,
                   '-e', '{"__gpu_proof_packages": ["tar", "hpcfabric-no-such-package"]}')
    assert rc != 0, out
    failed = (tmp_path / 'failed.txt').read_text()
    assert failed.startswith('missing OS packages that the mpi role installs and this offline node cannot download: '
                             'hpcfabric-no-such-package')
    assert ' tar' not in failed.split('(')[0]


def test_the_pinned_checksums_are_the_ones_debian_publishes():
    for key, dsc in (('ompi', 'openmpi_5.0.7-1.dsc'), ('ucx', 'ucx_1.13.1-1.dsc')):
        spec = bundle.DEFAULT_SOURCES[key]
        assert os.path.basename(spec['dsc']) == dsc
        assert bundle.dsc_sha256((FIXTURES / dsc).read_text(), os.path.basename(spec['url'])) == spec['sha256']


def test_a_dsc_without_the_file_gives_none():
    assert bundle.dsc_sha256((FIXTURES / 'ucx_1.13.1-1.dsc').read_text(), 'ucx_1.18.1+ds.orig.tar.xz') is None


@pytest.mark.parametrize('argv, says', [
    (['--ucx', '/tmp/ucx-1.19.0.tar.gz'], '--ucx and --ucx-sha256 go together'),
    (['--ompi-sha256', 'ab' * 32], '--ompi and --ompi-sha256 go together'),
    (['--ucx', 'x.tar.gz', '--ucx-sha256', 'not-hex'], '--ucx-sha256 must be 64 hex digits'),
    (['--python-version', '312'], '--python-version must be X.Y'),
])
def test_bad_bundle_arguments_are_refused(argv, says, capsys):
    with pytest.raises(SystemExit) as stop:
        bundle.main(argv)
    assert stop.value.code == 2
    assert says in capsys.readouterr().err


def test_the_ucx_snapshot_loses_its_test_apps_and_nothing_else(tmp_path):
    # the SUBDIRS block as UCX 1.13.1's Makefile.am writes it (tabs, continuation backslashes)
    makefile_am = tmp_path / 'Makefile.am'
    makefile_am.write_text('SUBDIRS += \\\n\tsrc/tools/perf \\\n\tbindings/java \\\n\ttest/apps \\\n\texamples \\\n\tcmake\n')
    bundle.drop_test_apps(str(makefile_am))
    assert makefile_am.read_text() == 'SUBDIRS += \\\n\tsrc/tools/perf \\\n\tbindings/java \\\n\texamples \\\n\tcmake\n'


def test_a_ucx_that_lists_its_test_apps_otherwise_is_refused(tmp_path):
    makefile_am = tmp_path / 'Makefile.am'
    makefile_am.write_text('SUBDIRS = src/ucs src/uct test/apps\n')
    with pytest.raises(SystemExit, match='does not list test/apps in SUBDIRS'):
        bundle.drop_test_apps(str(makefile_am))
