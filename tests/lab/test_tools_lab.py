# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""tools/lab keeps its promises: what the molecule scenarios and `make demo` assume of a lab before any role runs.

The settings checks run anywhere. The lifecycle (up, status, the nodes' state, down) needs root, podman and the
lab's Debian packages (`make setup`), and takes a minute or two: it runs when HPCFABRIC_LAB_TEST=1, as the molecule
stage of tools/run.sh sets it, on a lab of its own (LAB_NAME labtest, management 10.77.15.0/24, the default two rails on 10.78.15.0/24 and
10.79.15.0/24).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
LAB = ROOT / 'tools' / 'lab'
LIVE = os.environ.get('HPCFABRIC_LAB_TEST') == '1'


def lab(*args, env=None, check=False, timeout=1800):
    run = subprocess.run([str(LAB), *args], env=dict(os.environ, **(env or {})), capture_output=True, text=True,
                         timeout=timeout, check=False)
    if check and run.returncode != 0:
        raise AssertionError('tools/lab %s exit %d:\n%s\n%s' % (' '.join(args), run.returncode, run.stdout, run.stderr))
    return run


# every command but a usage error wants root before it reads its settings
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason='tools/lab runs as root')


def test_an_unknown_command_is_a_usage_error():
    run = lab('sideways')
    assert run.returncode == 2
    assert 'usage: tools/lab up N | down | status | inventory | purge' in run.stderr


@pytest.mark.parametrize('env, message', [
    ({'LAB_NAME': 'Lab-1'}, "LAB_NAME must be 1-10 lowercase letters or digits, starting with a letter (got 'Lab-1')"),
    ({'LAB_SUITE': 'sid'}, "LAB_SUITE must be one of: bookworm trixie (got 'sid')"),
    ({'LAB_MGMT_SUBNET': '10.77.0.0/16'}, "lab subnets must be IPv4 /24 networks like 10.77.0.0/24 (got '10.77.0.0/16')"),
    ({'LAB_MGMT_SUBNET': '10.99.0.0/24', 'LAB_FABRIC_SUBNET': '10.99.0.0/24'},
     "LAB_MGMT_SUBNET must differ from the rails' subnets"),
    # rail 1 of 10.98.0.0/24 is 10.99.0.0/24
    ({'LAB_MGMT_SUBNET': '10.99.0.0/24', 'LAB_FABRIC_SUBNET': '10.98.0.0/24'},
     "LAB_MGMT_SUBNET must differ from the rails' subnets"),
    ({'LAB_RAILS': '9'}, "LAB_RAILS must be a number of rails from 1 to 8 (got '9')"),
    ({'LAB_FABRIC_SUBNET': '10.254.0.0/24', 'LAB_RAILS': '3'},
     "LAB_FABRIC_SUBNET's second octet plus LAB_RAILS - 1 must stay below 256"),
    ({'LAB_PROXY_PORT': '99999'}, "LAB_PROXY_PORT must be a TCP port number (got '99999')"),
    ({'LAB_MIRROR': 'ftp://mirror'}, "LAB_MIRROR must be an http:// URL (got 'ftp://mirror')"),
    ({'LAB_EXTRA_PORTS': '3142'}, 'LAB_EXTRA_PORTS must be TCP port numbers separated by spaces, other than LAB_PROXY_PORT'),
    ({'LAB_INVENTORY': 'relative/inv'}, 'LAB_INVENTORY must be an absolute path'),
    ({'LAB_SWITCH': 'yes'}, "LAB_SWITCH must be 0 (no switch) or 1 (switch01, a SONiC stand-in) (got 'yes')"),
], ids=['name', 'suite', 'subnet', 'same-subnets', 'mgmt-on-rail1', 'rails', 'rail-subnets', 'proxy-port', 'mirror', 'extra-port',
        'inventory', 'switch'])
@needs_root
def test_bad_settings_are_refused_naming_the_variable(tmp_path, env, message):
    run = lab('status', env=dict({'LAB_DIR': str(tmp_path / 'lab')}, **env))
    assert run.returncode == 1, run.stdout + run.stderr
    assert message in run.stderr


@needs_root
def test_a_lab_dir_that_is_not_a_plain_absolute_path_is_refused():
    run = lab('status', env={'LAB_DIR': 'lab dir'})
    assert run.returncode == 1
    assert "LAB_DIR must be an absolute path of letters, digits and ._/+@- (got 'lab dir')" in run.stderr


@pytest.fixture(scope='module')
def live_lab(tmp_path_factory):
    if not LIVE:
        pytest.skip('needs root and podman: set HPCFABRIC_LAB_TEST=1 (the molecule stage does)')
    base = tmp_path_factory.mktemp('labtest')
    env = {'LAB_DIR': str(ROOT / '.cache' / 'lab-test'), 'LAB_NAME': 'labtest', 'LAB_SUITE': 'bookworm',
           'LAB_MGMT_SUBNET': '10.77.15.0/24',
           'LAB_FABRIC_SUBNET': '10.78.15.0/24', 'LAB_PROXY_PORT': '3155', 'LAB_INVENTORY': str(base / 'inventory')}
    lab('down', env=env, check=True)
    lab('up', '2', env=env, check=True)
    try:
        yield env
    finally:
        lab('down', env=env)


def on_node(env, address, command):
    """Run a command on a node as the roles' connection does: root, the lab's key, host key checked."""
    lab_dir = Path(env['LAB_DIR'])
    return subprocess.run(
        ['ssh', '-i', str(lab_dir / 'ssh' / 'id_ed25519'), '-o', 'IdentitiesOnly=yes', '-o', 'BatchMode=yes',
         '-o', 'UserKnownHostsFile=%s' % (lab_dir / 'known_hosts'), '-o', 'StrictHostKeyChecking=yes',
         '-o', 'ConnectTimeout=10', 'root@%s' % address, command],
        capture_output=True, text=True, timeout=120, check=False)


def inventory_hosts(env):
    hosts = yaml.safe_load((Path(env['LAB_INVENTORY']) / 'hosts.yml').read_text())
    return hosts['all']['children']['hpc_cluster']['children']['gpu_nodes']['children']['lab_nodes']['hosts']


def host_variables(inventory, host):
    run = subprocess.run([str(Path(sys.executable).parent / 'ansible-inventory'), '-i', str(inventory), '--host', host],
                         capture_output=True, text=True, timeout=120, check=True)
    return json.loads(run.stdout)


def test_the_inventory_lists_each_node_with_a_fabric_interface_per_rail(live_lab):
    hosts = inventory_hosts(live_lab)
    assert sorted(hosts) == ['node01', 'node02']
    assert [hosts[h]['ansible_host'] for h in sorted(hosts)] == ['10.77.15.11', '10.77.15.12']
    assert [hosts[h]['fabric_network_interfaces'] for h in sorted(hosts)] == [
        [{'name': 'fab0', 'address': '10.78.15.%d/24' % i, 'rail': 0},
         {'name': 'fab1', 'address': '10.79.15.%d/24' % i, 'rail': 1}] for i in (1, 2)]


# what tools/lab writes of its own: how Ansible reaches the nodes, their fabric addresses, where reports go, and one
# MPI slot per rail
LAB_OWN = {'ansible_host', 'ansible_user', 'ansible_python_interpreter', 'ansible_ssh_private_key_file',
           'ansible_ssh_common_args', 'fabric_network_interfaces', 'fabric_network_rails', 'validate_report_dir',
           'mpi_hostfile_slots'}


def lab_overrides(suite):
    """What a lab of that suite sets over the example: tools/lab-overrides.yml, then the suite's own file."""
    overrides = yaml.safe_load((ROOT / 'tools' / 'lab-overrides.yml').read_text())
    suite_file = ROOT / 'tools' / ('lab-overrides-%s.yml' % suite)
    if suite_file.exists():
        overrides.update(yaml.safe_load(suite_file.read_text()))
    return overrides


SUITE_OVERRIDES = sorted((ROOT / 'tools').glob('lab-overrides-*.yml'))


@pytest.mark.parametrize('path', SUITE_OVERRIDES, ids=[p.stem for p in SUITE_OVERRIDES])
def test_a_suite_overrides_file_changes_what_the_example_sets_and_repeats_no_common_override(path):
    """tools/lab appends both files to one YAML file, where a repeated key would be a duplicate."""
    suite = path.stem[len('lab-overrides-'):]
    assert suite in ('bookworm', 'trixie')
    common = yaml.safe_load((ROOT / 'tools' / 'lab-overrides.yml').read_text())
    own = yaml.safe_load(path.read_text())
    assert own and not set(own) & set(common)
    example = host_variables(ROOT / 'inventories' / 'example', 'b300-01')
    assert [name for name in own if example.get(name) == own[name]] == []


def test_the_inventory_sets_what_the_example_does_but_for_the_overrides_file(live_lab):
    example = host_variables(ROOT / 'inventories' / 'example', 'b300-01')
    node = host_variables(live_lab['LAB_INVENTORY'], 'node01')
    overrides = lab_overrides(live_lab['LAB_SUITE'])
    assert not LAB_OWN & set(overrides)
    missing = object()
    differ = {name: (example.get(name, missing), node.get(name, missing))
              for name in set(example) | set(node) if name not in LAB_OWN
              and node.get(name, missing) != overrides.get(name, example.get(name, missing))}
    assert differ == {}
    # each override changes something: a line the example already agrees with is not an override
    assert [name for name in overrides if example.get(name, missing) == overrides[name]] == []
    assert node['fabric_network_rails'] == [{'name': 'rail0', 'subnet': '10.78.15.0/24'},
                                            {'name': 'rail1', 'subnet': '10.79.15.0/24'}]
    # a rank per rail, as a real node runs a rank per GPU on its own rail
    assert node['mpi_hostfile_slots'] == 2


def test_status_says_up_with_exit_0(live_lab):
    run = lab('status', env=live_lab)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "lab 'labtest'" in run.stdout and 'up, 2 nodes (Debian bookworm)' in run.stdout


def test_up_on_another_suite_is_refused_while_the_lab_is_up(live_lab):
    run = lab('up', '2', env=dict(live_lab, LAB_SUITE='trixie'))
    assert run.returncode == 1, run.stdout + run.stderr
    assert "lab 'labtest' is already up on bookworm, not LAB_SUITE=trixie" in run.stderr


@pytest.mark.parametrize('node', ['10.77.15.11', '10.77.15.12'])
def test_each_node_runs_the_suite_the_lab_was_asked_for(live_lab, node):
    run = on_node(live_lab, node, '. /etc/os-release && echo "$VERSION_CODENAME"')
    assert run.stdout.strip() == 'bookworm', run.stdout + run.stderr


@pytest.mark.parametrize('node', ['10.77.15.11', '10.77.15.12'])
def test_each_node_boots_systemd_and_answers_ssh_with_the_recorded_host_key(live_lab, node):
    run = on_node(live_lab, node, 'systemctl is-system-running --wait')
    assert run.returncode in (0, 1), run.stderr
    assert run.stdout.strip() in ('running', 'degraded'), run.stdout + run.stderr


@pytest.mark.parametrize('node', ['10.77.15.11', '10.77.15.12'])
def test_the_fabric_nics_are_fresh_and_the_files_the_roles_manage_are_plain(live_lab, node):
    """fab0 and fab1 without an address at a new NIC's MTU, and /etc/hosts, hostname, resolv.conf not bind-mounted,
    so the fabric_network role has real work to do and its read-back means something."""
    for nic in ('fab0', 'fab1'):
        assert on_node(live_lab, node, 'ip -4 -o addr show dev %s' % nic).stdout == ''
        assert on_node(live_lab, node, 'cat /sys/class/net/%s/mtu' % nic).stdout.strip() == '1500'
    mounts = on_node(live_lab, node, 'cat /proc/self/mountinfo').stdout.splitlines()
    managed = (' /etc/hosts ', ' /etc/hostname ', ' /etc/resolv.conf ')
    assert [line for line in mounts if any(path in line for path in managed)] == []


def test_nodes_reach_each_other_on_the_management_network(live_lab):
    run = on_node(live_lab, '10.77.15.11', 'ping -c 1 -W 2 10.77.15.12')
    assert run.returncode == 0, run.stdout + run.stderr


def test_each_rail_is_a_network_of_its_own(live_lab):
    """A test subnet on node01's fab1, node02's fab1 and node02's fab0: node01 reaches node02 over rail 1; with
    node02's fab1 down, its fab0 address is out of reach from rail 1 (one bridge for both rails would answer)."""
    nodes = ('10.77.15.11', '10.77.15.12')
    plan = [(nodes[0], 'fab1', '192.168.215.1'), (nodes[1], 'fab1', '192.168.215.2'),
            (nodes[1], 'fab0', '192.168.215.3')]
    try:
        for node, nic, address in plan:
            run = on_node(live_lab, node, 'ip link set %s up && ip addr add %s/24 dev %s' % (nic, address, nic))
            assert run.returncode == 0, run.stderr
        same_rail = on_node(live_lab, nodes[0], 'ping -c 1 -W 2 -I fab1 192.168.215.2')
        assert same_rail.returncode == 0, same_rail.stdout + same_rail.stderr
        assert on_node(live_lab, nodes[1], 'ip link set fab1 down').returncode == 0
        other_rail = on_node(live_lab, nodes[0], 'ping -c 1 -W 2 -I fab1 192.168.215.3')
        assert other_rail.returncode != 0, other_rail.stdout
    finally:
        for node, nic, address in plan:
            on_node(live_lab, node, 'ip addr del %s/24 dev %s; ip link set %s up' % (address, nic, nic))


def test_every_node_sees_one_shared_directory_at_the_lustre_mount_point(live_lab):
    """A file an unprivileged user writes under /lustre/scratch on node01 is there on node02, and in the host
    directory: the stand-in for the shared filesystem the smoke training's restart crosses nodes through."""
    write = on_node(live_lab, '10.77.15.11', 'setpriv --reuid 2001 --regid 2001 --clear-groups '
                    'sh -c "echo from-node01 > /lustre/scratch/labtest-probe"')
    assert write.returncode == 0, write.stderr
    read = on_node(live_lab, '10.77.15.12', 'cat /lustre/scratch/labtest-probe; stat -c %u /lustre/scratch/labtest-probe')
    assert read.stdout.split() == ['from-node01', '2001'], read.stdout + read.stderr
    assert (Path(live_lab['LAB_DIR']) / 'shared' / 'labtest-probe').read_text() == 'from-node01\n'


def test_down_removes_the_lab_and_status_says_down_with_exit_3(live_lab):
    lab('down', env=live_lab, check=True)
    run = lab('status', env=live_lab)
    assert run.returncode == 3, run.stdout + run.stderr
    assert "lab 'labtest'" in run.stdout and ': down' in run.stdout
    assert on_node(live_lab, '10.77.15.11', 'true').returncode != 0
    assert not (Path(live_lab['LAB_DIR']) / 'shared').exists()
