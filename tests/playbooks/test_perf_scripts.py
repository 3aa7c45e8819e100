# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The scripts under tests/perf without a lab: they parse, answer --help, read an inventory laid out as the lab's
(`make perf` runs them on the lab itself), and what needs no node runs for real on small inputs."""
from __future__ import annotations
import os
import shutil
import subprocess

import pytest
import yaml

from checkout import ROOT

PERF = ROOT / 'tests' / 'perf'
SCRIPTS = sorted(PERF.glob('*.sh'))
SYSTEM_PYTHON = '/usr/bin/python3'


def run(*cmd, timeout=300):
    env = dict(os.environ, ANSIBLE_NOCOLOR='1', ANSIBLE_FORCE_COLOR='0')
    proc = subprocess.run([str(c) for c in cmd], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout,
                          check=False)
    return proc.returncode, proc.stdout, proc.stderr


def write_inventory(path, hosts_yml, group_vars=None):
    """An inventory directory: hosts.yml and group_vars/<group>.yml, as tools/lab writes one."""
    (path / 'group_vars').mkdir(parents=True)
    (path / 'hosts.yml').write_text(yaml.safe_dump(hosts_yml, sort_keys=False))
    for group, data in (group_vars or {}).items():
        (path / 'group_vars' / (group + '.yml')).write_text(yaml.safe_dump(data))
    return path


def node(n):
    return {'ansible_host': '10.77.0.%d' % (10 + n),
            'fabric_network_interfaces': [{'name': 'fab0', 'address': '10.78.0.%d/24' % (10 + n), 'rail': 0},
                                          {'name': 'fab1', 'address': '10.79.0.%d/24' % (10 + n), 'rail': 1}]}


def test_the_scripts_parse_and_answer_help():
    assert {p.name for p in SCRIPTS} >= {'fabric_efficiency.sh', 'check_inventory_time.sh', 'site_wall_time.sh'}
    for script in SCRIPTS:
        rc, _out, err = run('bash', '-n', script)
        assert rc == 0, '%s: %s' % (script.name, err)
        rc, out, err = run(script, '--help')
        assert rc == 0 and 'Usage: tests/perf/%s' % script.name in out, (script.name, out, err)


def test_fabric_efficiency_reads_the_nodes_from_a_child_group_as_the_lab_keeps_them(tmp_path):
    # the lab's layout (docs/lab.md): the nodes in lab_nodes, a child of gpu_nodes; a switch beside them; the MPI user
    # from group_vars of gpu_nodes, the hostfile path from the child group. Inventory order, not sorted names.
    inv = write_inventory(tmp_path / 'lab', {
        'hpc_cluster': {'children': {
            'gpu_nodes': {'children': {'lab_nodes': {'hosts': {'node07': node(7), 'node03': node(3), 'node05': node(5)}}}},
            'fabric_switches': {'hosts': {'switch01': {'ansible_host': '10.77.0.200'}}}}}},
        {'gpu_nodes': {'ssh_trust_user': 'jobs'}, 'lab_nodes': {'mpi_hostfile_path': '/etc/mpi/lab-hostfile'}})
    rc, out, err = run(PERF / 'fabric_efficiency.sh', '--dry-run', inv)
    assert rc == 0, out + err
    assert ('inventory %s: gpu_nodes 3 nodes; measuring node07 -> node03 (node03\'s first fabric address: 10.78.0.13), '
            'as jobs, hostfile /etc/mpi/lab-hostfile, bench /opt/hpcfabric/bench, work /var/tmp/hpcfabric-validate'
            % inv) in out


def test_fabric_efficiency_takes_the_lab_inventory_from_lab_env(tmp_path):
    # `make perf` passes no inventory: the script finds the one tools/lab recorded in LAB_DIR/lab.env
    inv = write_inventory(tmp_path / 'elsewhere', {'gpu_nodes': {'hosts': {'node01': node(1), 'node02': node(2)}}},
                          {'gpu_nodes': {'validate_work_dir': '/srv/validate'}})
    lab_dir = tmp_path / 'labdir'
    lab_dir.mkdir()
    (lab_dir / 'lab.env').write_text('LAB_NAME=hpclab\nLAB_INVENTORY=%s\nPHASE=up\n' % inv)
    env = dict(os.environ, LAB_DIR=str(lab_dir), ANSIBLE_NOCOLOR='1')
    proc = subprocess.run([str(PERF / 'fabric_efficiency.sh'), '--dry-run'], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert 'inventory %s: gpu_nodes 2 nodes; measuring node01 -> node02' % inv in proc.stdout
    assert 'work /srv/validate' in proc.stdout


@pytest.mark.parametrize('hosts, message', [
    ({'gpu_nodes': {'children': {'lab_nodes': {'hosts': {'node01': node(1)}}}}},
     'need two nodes in gpu_nodes of {inv} (found: node01)'),
    ({'gpu_nodes': {'hosts': {'node01': node(1), 'node02': {'ansible_host': '10.77.0.12'}}}},
     'node02 has no fabric_network_interfaces address in {inv}'),
])
def test_fabric_efficiency_refuses_an_inventory_it_cannot_measure(tmp_path, hosts, message):
    inv = write_inventory(tmp_path / 'inv', hosts)
    rc, _out, err = run(PERF / 'fabric_efficiency.sh', '--dry-run', inv)
    assert rc == 1
    assert message.format(inv=inv) in err


def test_fabric_efficiency_without_an_inventory_says_what_to_do(tmp_path):
    rc, _out, err = run(PERF / 'fabric_efficiency.sh', '--dry-run', tmp_path / 'none')
    assert rc == 1
    assert 'no inventory at %s: start a lab and provision it (make demo)' % (tmp_path / 'none') in err


def test_check_inventory_time_runs_on_a_small_synthetic_inventory():
    rc, out, err = run(PERF / 'check_inventory_time.sh', 2)
    assert rc == 0, out + err
    assert '    2 nodes x 8 rails: check_inventory.yml' in out and 'ratio' in out


def test_mpi_bidir_prints_the_lines_fabric_efficiency_reads():
    if shutil.which('mpirun') is None:
        pytest.skip('mpirun is not installed (Debian: openmpi-bin)')
    if subprocess.run([SYSTEM_PYTHON, '-c', 'import mpi4py, numpy'], capture_output=True, check=False).returncode:
        pytest.skip('%s cannot import mpi4py and numpy (Debian: python3-mpi4py python3-numpy)' % SYSTEM_PYTHON)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT='1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1')
    # one host: shared memory only (as tests/bench runs the bench scripts)
    proc = subprocess.run(['mpirun', '--oversubscribe', '-np', '2', '--mca', 'pml', 'ob1', '--mca', 'btl', 'self,vader',
                           '--mca', 'btl_vader_single_copy_mechanism', 'none', SYSTEM_PYTHON, str(PERF / 'mpi_bidir.py')],
                          env=env, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = [line.split() for line in proc.stdout.splitlines()]
    # "<bytes> <GB/s per pair> <GB/s all pairs> <ms per add>", one line per size; one pair, so both rates are one
    assert [int(fields[0]) for fields in lines] == [16 << 20, 64 << 20]
    for _label, pair, together, add in lines:
        assert float(pair) > 0 and float(together) == pytest.approx(float(pair), rel=0.01) and float(add) > 0
