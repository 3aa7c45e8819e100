# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""playbooks/check_inventory.yml accepts the example inventory and stops bad ones, naming variable and host."""
from __future__ import annotations
import re

import pytest


def test_example_inventory_passes(inventory, playbook):
    rc, out = playbook(inventory.path, 'check_inventory.yml')
    assert rc == 0, out
    assert 'failed=0' in out


def set_iface(host, index, **values):
    def mutate(data):
        data['fabric_network_interfaces'][index].update(values)
    return 'host_vars/%s.yml' % host, mutate


@pytest.mark.parametrize('edit, message', [
    (set_iface('b300-02', 0, address='10.100.0.11/24'),
     'fabric_network_interfaces[0].address on b300-02: 10.100.0.11 is already used by b300-01 (enp1as0np0)'),
    (set_iface('b300-01', 3, address='10.100.9.11/24'),
     'fabric_network_interfaces[3].address on b300-01: 10.100.9.11/24 is outside rail 3 subnet 10.100.3.0/24'),
    (set_iface('b300-02', 0, hostname='b300-01-rail0'),
     'fabric_network_interfaces[0] on b300-02: fabric hostname b300-01-rail0 is already used by b300-01'),
    (set_iface('b300-01', 0, mtu=100000),
     'fabric_network_interfaces[0].mtu on b300-01: 100000 is outside 1500-9216'),
], ids=['duplicate-address', 'outside-subnet', 'duplicate-hostname', 'mtu-100000'])
def test_bad_fabric_plan_is_refused(inventory, playbook, edit, message):
    inventory.edit(*edit)
    rc, out = playbook(inventory.path, 'check_inventory.yml')
    assert rc != 0
    assert message in ' '.join(out.split())


def test_wrong_type_and_choice_name_host_and_variable(inventory, playbook):
    def mutate(data):
        data.update(mpi_flavour='spack', os_base_nofile='many')
    inventory.edit('host_vars/b300-02.yml', mutate)
    rc, out = playbook(inventory.path, 'check_inventory.yml')
    assert rc != 0
    flat = ' '.join(out.split())
    assert re.search(r'value of mpi_flavour must be one of: [a-z, ]+, got: spack found in b300-02', flat)
    assert re.search(r"os_base_nofile.*found in b300-02", flat)


def test_node_strings_are_refused_before_any_host_naming_variable_and_host(inventory, playbook):
    def mutate(data):
        data.update(validate_work_dir='/', ssh_trust_authorized_from=['*'], os_base_ntp_servers=['ntp\nallow all'])
    inventory.edit('host_vars/b300-01.yml', mutate)
    rc, out = playbook(inventory.path, 'check_inventory.yml')
    assert rc != 0
    flat = ' '.join(out.split())
    assert "validate_work_dir on b300-01: '/' is a system directory" in flat
    assert "ssh_trust_authorized_from[0] on b300-01: '*' is not an address" in flat
    assert 'os_base on b300-01: os_base_ntp_servers[0]' in flat


def test_empty_compute_group_is_refused(tmp_path, playbook):
    (tmp_path / 'hosts.yml').write_text('all:\n  hosts:\n    lonely: {}\n')
    rc, out = playbook(tmp_path / 'hosts.yml', 'check_inventory.yml')
    assert rc != 0
    assert 'group gpu_nodes is empty or missing' in out


def test_site_yml_stops_before_connecting(inventory, playbook):
    """site.yml runs the same checks first: the example hosts are unreachable, so reaching them would fail differently."""
    inventory.edit(*set_iface('b300-02', 0, address='10.100.0.11/24'))
    rc, out = playbook(inventory.path, '../site.yml')
    assert rc != 0
    assert 'is already used by b300-01' in ' '.join(out.split())
    assert 'UNREACHABLE' not in out


def test_a_driver_branch_typo_stops_site_yml_before_any_host_is_touched(inventory, playbook):
    """The typo the driver role used to catch only after os_base and rdma had changed every host."""
    def mutate(data):
        data.update(nvidia_driver_branch='58O')
    inventory.edit('host_vars/b300-02.yml', mutate)
    rc, out = playbook(inventory.path, '../site.yml')
    flat = ' '.join(out.split())
    assert rc != 0
    assert "nvidia_driver_branch on b300-02: '58O' is not a driver branch" in flat
    assert 'UNREACHABLE' not in out and 'Gathering Facts' not in out


def test_switch_with_another_pfc_priority_is_refused(inventory, playbook):
    def mutate(data):
        data['switch_qos_policy'] = {'roce': {'priority': 4}, 'pfc': {'priorities': [4]},
                                     'ets': {'bandwidth_percent': [50, 0, 0, 0, 50, 0, 0, 0]}}
    inventory.edit('host_vars/leaf02.yml', mutate)
    rc, out = playbook(inventory.path, 'check_inventory.yml')
    assert rc != 0
    assert 'RoCE policy (trust, roce, cnp, pfc) differs: b300-01, b300-02, leaf01 use one policy, leaf02 another' in ' '.join(out.split())


def test_host_mtu_above_switch_port_mtu_is_refused(inventory, playbook):
    inventory.edit(*set_iface('b300-01', 2, mtu=9216))
    rc, out = playbook(inventory.path, 'check_inventory.yml')
    assert rc != 0
    assert 'fabric_network_interfaces[2].mtu on b300-01: 9216 is above the switch port MTU 9214' in ' '.join(out.split())


def test_switch_without_platform_is_refused(inventory, playbook):
    def mutate(data):
        del data['hpc_cluster']['children']['fabric_switches']['hosts']['leaf01']['switch_qos_platform']
    inventory.edit('hosts.yml', mutate)
    rc, out = playbook(inventory.path, 'check_inventory.yml')
    assert rc != 0
    assert 'missing required arguments: switch_qos_platform found in leaf01' in ' '.join(out.split())


def test_a_slurm_partition_naming_a_host_outside_the_compute_group_is_refused(inventory, playbook):
    """With a slurm_controllers group the Slurm layout across hosts is checked before any host is touched."""
    def mutate(data):
        data['hpc_cluster']['children']['slurm_controllers'] = {'hosts': {'b300-01': None}}
    inventory.edit('hosts.yml', mutate)
    rc, out = playbook(inventory.path, 'check_inventory.yml')
    assert rc == 0, out

    def partition(data):
        data['slurm_partitions'] = [{'name': 'gpu', 'default': True, 'nodes': 'b300-0[1-3]'}]
    inventory.edit('group_vars/gpu_nodes.yml', partition)
    rc, out = playbook(inventory.path, 'check_inventory.yml')
    assert rc != 0
    assert 'b300-03' in ' '.join(out.split()) and 'Slurm: ' in out, out
