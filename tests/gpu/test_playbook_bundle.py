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
from proof_paths import HERE, ROOT

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


@pytest.mark.parametrize('argv, says', [
    (['--mpi-package', '/nonexistent/openmpi.tar.gz'], '--mpi-package /nonexistent/openmpi.tar.gz is not a file'),
    (['--python-version', '312'], '--python-version must be X.Y'),
])
def test_bad_bundle_arguments_are_refused(argv, says, capsys):
    with pytest.raises(SystemExit) as stop:
        bundle.main(argv)
    assert stop.value.code == 2
    assert says in capsys.readouterr().err


def test_without_a_package_the_bundle_says_how_to_make_one(tmp_path):
    with pytest.raises(SystemExit, match='molecule test -s mpi_cuda'):
        bundle.newest_package(str(tmp_path / 'openmpi-*-cuda-*.tar.gz'))


def test_what_the_package_needs_is_sorted_into_runtime_driver_required_and_optional():
    needed_by = {
        'bin/mpirun': ['libopen-rte.so.40', 'libc.so.6'],
        'lib/libucs.so.0.0.0': ['libnuma.so.1', 'libc.so.6'],
        'lib/ucx/libuct_cuda.so.0.0.0': ['libcudart.so.11.0', 'libcuda.so.1', 'libnvidia-ml.so.1', 'libucs.so.0'],
        'lib/ucx/libuct_ib.so.0.0.0': ['libibverbs.so.1', 'libnuma.so.1'],
        'lib/openmpi/mca_btl_openib.so': ['librdmacm.so.1'],
        'lib/libmca_common_verbs.so.40.30.0': ['libibverbs.so.1'],
        'bin/ucx_perftest': ['libgomp.so.1'],
    }
    assert bundle.classify(needed_by, {'libopen-rte.so.40', 'libucs.so.0'}) == {
        'cuda_runtime': ['libcudart.so.11.0'], 'driver': ['libcuda.so.1', 'libnvidia-ml.so.1'],
        'required': ['libc.so.6', 'libnuma.so.1'], 'optional': ['libgomp.so.1', 'libibverbs.so.1', 'librdmacm.so.1']}


def test_the_package_provides_the_sonames_of_its_links(tmp_path):
    (tmp_path / 'lib' / 'ucx').mkdir(parents=True)
    (tmp_path / 'lib' / 'ucx' / 'libuct_ib.so.0.0.0').write_text('')
    (tmp_path / 'lib' / 'ucx' / 'libuct_ib.so.0').symlink_to('libuct_ib.so.0.0.0')
    assert bundle.file_names(str(tmp_path)) == {'libuct_ib.so.0.0.0', 'libuct_ib.so.0'}


def test_the_libraries_an_elf_file_needs_are_read_from_it():
    # this machine's own ls: a real ELF file with a dynamic section
    assert 'libc.so.6' in bundle.needed_libraries('/bin/ls')
    assert bundle.needed_libraries(__file__) == []
