# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Each fabric interface one NIC of its own and a name of its own: the identity rules of the cluster model's plan
(fabric_plan.check_plan), with and without the hosts' network facts."""
from __future__ import annotations

import pytest

from ansible_collections.hpcfabric.cluster.plugins.module_utils.cluster_model import build_model

RAILS = [{'name': 'rail0', 'subnet': '10.78.0.0/24'}, {'name': 'rail1', 'subnet': '10.78.1.0/24'}]
MANAGEMENT_MAC = '52:54:00:aa:00:01'


def cluster(n=2):
    return dict(('node%02d' % i, {'fabric_network_rails': RAILS, 'fabric_network_interfaces': [
        {'name': 'fab0', 'address': '10.78.0.%d/24' % (10 + i), 'rail': 0},
        {'name': 'fab1', 'address': '10.78.1.%d/24' % (10 + i), 'rail': 1},
    ]}) for i in range(1, n + 1))


def facts(fab0_mac='58:a2:e1:00:00:01', fab1_mac='58:a2:e1:00:00:02'):
    """Network facts as ansible.builtin.setup gathers them: the management NIC eth0 and the two fabric NICs."""
    return {'interfaces': ['lo', 'eth0', 'fab0', 'fab1'], 'lo': {'device': 'lo'},
            'eth0': {'device': 'eth0', 'macaddress': MANAGEMENT_MAC},
            'fab0': {'device': 'fab0', 'macaddress': fab0_mac}, 'fab1': {'device': 'fab1', 'macaddress': fab1_mac}}


def problems(hostvars):
    return build_model(hostvars, sorted(hostvars))['problems']


@pytest.mark.parametrize('name', ['localhost', 'LocalHost', 'localhost.localdomain', 'localhost4', 'localhost6',
                                  'localhost6.localdomain6', 'ip6-localhost', 'ip6-loopback', 'rail0.localhost'])
def test_a_fabric_name_of_the_loopback_is_refused(name):
    hostvars = cluster()
    hostvars['node02']['fabric_network_interfaces'][1]['hostname'] = name
    assert problems(hostvars) == [
        'fabric_network_interfaces[1].hostname on node02: fabric hostname %s resolves locally on every node (/etc/hosts\' '
        'loopback and IPv6 names, .localhost), so no peer would reach this node by it' % name]


@pytest.mark.parametrize('name', ['localhost-fab', 'mylocalhost', 'localhost0', 'localhost.example.com'])
def test_names_that_only_look_local_pass(name):
    hostvars = cluster()
    hostvars['node01']['fabric_network_interfaces'][0]['hostname'] = name
    assert problems(hostvars) == []


def test_one_mac_on_two_interfaces_of_a_node_is_refused_in_any_case():
    hostvars = cluster()
    hostvars['node01']['fabric_network_interfaces'][0]['mac'] = '58:a2:e1:00:00:01'
    hostvars['node01']['fabric_network_interfaces'][1] = {
        'mac': '58:A2:E1:00:00:01', 'address': '10.78.1.11/24', 'rail': 1}
    assert problems(hostvars) == [
        'fabric_network_interfaces[1].mac on node01: 58:a2:e1:00:00:01 is also the MAC of fabric_network_interfaces[0] on '
        'node01; a MAC names one NIC (an entry copied with its MAC?)']


def test_one_mac_on_two_nodes_is_refused_on_the_second():
    hostvars = cluster(3)
    hostvars['node01']['fabric_network_interfaces'][1]['mac'] = '58:a2:e1:00:00:02'
    hostvars['node03']['fabric_network_interfaces'][1]['mac'] = '58:a2:e1:00:00:02'
    assert problems(hostvars) == [
        'fabric_network_interfaces[1].mac on node03: 58:a2:e1:00:00:02 is also the MAC of fabric_network_interfaces[1] on '
        'node01; a MAC names one NIC (an entry copied with its MAC?)']


def test_distinct_macs_pass():
    hostvars = cluster()
    for host, index in (('node01', 1), ('node02', 2)):
        for rail, entry in enumerate(hostvars[host]['fabric_network_interfaces']):
            entry['mac'] = '58:a2:e1:00:%02x:%02x' % (index, rail)
    assert problems(hostvars) == []


def test_two_interfaces_of_a_node_on_one_rail_are_refused():
    hostvars = cluster()
    hostvars['node02']['fabric_network_interfaces'][1].update(rail=0, address='10.78.0.99/24')
    assert problems(hostvars) == [
        'fabric_network_interfaces[1].rail on node02: rail 0 already has fabric_network_interfaces[0]; a node has one NIC '
        'per rail (two addresses in one subnet answer ARP for each other and route replies out of either)']


def test_an_entry_without_a_rail_is_on_rail_0():
    hostvars = cluster()
    del hostvars['node01']['fabric_network_interfaces'][1]['rail']
    assert 'fabric_network_interfaces[1].rail on node01: rail 0 already has fabric_network_interfaces[0]' in \
        problems(hostvars)[-1]


def test_a_name_and_the_management_nic_s_mac_are_refused_where_facts_know_the_nics():
    """netplan's set-name would match eth0 by its MAC and rename it fab0: the node would leave the network."""
    hostvars = cluster()
    hostvars['node01']['ansible_facts'] = facts()
    hostvars['node01']['fabric_network_interfaces'][0]['mac'] = MANAGEMENT_MAC
    assert problems(hostvars) == [
        'fabric_network_interfaces[0] on node01: name fab0 and mac %s are two NICs (fab0 has MAC 58:a2:e1:00:00:01; %s '
        'is the MAC of eth0): the entry would match the MAC\'s NIC and rename it fab0' % (MANAGEMENT_MAC, MANAGEMENT_MAC)]


def test_a_name_with_a_mac_no_nic_has_is_refused_where_facts_know_the_name():
    hostvars = cluster()
    hostvars['node02']['ansible_facts'] = facts()
    hostvars['node02']['fabric_network_interfaces'][1]['mac'] = '58:a2:e1:00:00:99'
    assert problems(hostvars) == [
        'fabric_network_interfaces[1] on node02: name fab1 and mac 58:a2:e1:00:00:99 are two NICs (fab1 has MAC '
        '58:a2:e1:00:00:02): the entry would match the MAC\'s NIC and rename it fab1']


def test_a_name_and_its_own_mac_pass_with_facts_and_any_pair_passes_without():
    hostvars = cluster()
    hostvars['node01']['ansible_facts'] = facts()
    hostvars['node01']['fabric_network_interfaces'][0]['mac'] = '58:A2:E1:00:00:01'
    hostvars['node02']['fabric_network_interfaces'][0]['mac'] = MANAGEMENT_MAC
    assert problems(hostvars) == []
