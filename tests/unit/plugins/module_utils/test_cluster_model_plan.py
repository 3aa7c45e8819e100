# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The fabric plan part of the cluster model (addresses, rails, MTU, names) on good and bad inventories."""
from __future__ import annotations
import copy

import pytest

from ansible_collections.hpcfabric.cluster.plugins.module_utils.cluster_model import build_model

RAILS = [{'name': 'rail0', 'subnet': '10.78.0.0/24'}, {'name': 'rail1', 'subnet': '10.78.1.0/24'}]


def cluster(n=3):
    return {
        'node%02d' % i: {'fabric_network_interfaces': [
            {'name': 'fab0', 'address': '10.78.0.%d/24' % (10 + i), 'rail': 0},
            {'name': 'fab1', 'address': '10.78.1.%d/24' % (10 + i), 'rail': 1},
        ]}
        for i in range(1, n + 1)
    }


def fabric_plan(hostvars, hosts, rails, mtu=9000):
    """The model of ``hosts`` with the rails and default MTU set for the group, as an inventory would."""
    hostvars = dict((h, dict({'fabric_network_rails': rails, 'fabric_network_mtu': mtu}, **hostvars[h])) for h in hostvars)
    model = build_model(hostvars, hosts)
    model['primary_names'] = dict((h, n['primary_name']) for h, n in model['nodes'].items())
    model['aliases'] = dict((h, n['known_hosts_names']) for h, n in model['nodes'].items())
    return model


def plan(hostvars, rails=None, mtu=9000):
    return fabric_plan(hostvars, sorted(hostvars), RAILS if rails is None else rails, mtu)


def test_good_cluster_has_no_problems_and_lists_every_interface():
    result = plan(cluster(3))
    assert result['problems'] == []
    assert result['hosts_entries'][:2] == ['10.78.0.11 node01-rail0', '10.78.1.11 node01-rail1']
    assert len(result['hosts_entries']) == 6
    assert result['primary_names'] == {'node01': 'node01-rail0', 'node02': 'node02-rail0', 'node03': 'node03-rail0'}


def test_aliases_list_every_name_and_address_once():
    hv = cluster(2)
    hv['node01']['ansible_host'] = '10.77.0.11'
    hv['node02']['ansible_host'] = 'node02'
    result = plan(hv)
    assert result['aliases']['node01'] == ['node01', '10.77.0.11', 'node01-rail0', '10.78.0.11', 'node01-rail1', '10.78.1.11']
    assert result['aliases']['node02'] == ['node02', 'node02-rail0', '10.78.0.12', 'node02-rail1', '10.78.1.12']


def test_hostname_override_is_used_for_hosts_and_primary_name():
    hv = cluster(1)
    hv['node01']['fabric_network_interfaces'][0]['hostname'] = 'gpu1-ib'
    result = plan(hv)
    assert result['hosts_entries'][0] == '10.78.0.11 gpu1-ib'
    assert result['primary_names'] == {'node01': 'gpu1-ib'}


def test_duplicate_address_names_both_hosts():
    hv = cluster(2)
    hv['node02']['fabric_network_interfaces'][0]['address'] = '10.78.0.11/24'
    assert plan(hv)['problems'] == [
        'fabric_network_interfaces[0].address on node02: 10.78.0.11 is already used by node01 (fab0)']


def test_address_outside_rail_subnet():
    hv = cluster(1)
    hv['node01']['fabric_network_interfaces'][1]['address'] = '10.78.0.99/24'
    assert plan(hv)['problems'] == [
        'fabric_network_interfaces[1].address on node01: 10.78.0.99/24 is outside rail 1 subnet 10.78.1.0/24']


def test_prefix_must_match_the_rail():
    hv = cluster(1)
    hv['node01']['fabric_network_interfaces'][0]['address'] = '10.78.0.11/16'
    assert 'outside rail 0 subnet 10.78.0.0/24' in plan(hv)['problems'][0]


# 1280 (IPv6's minimum) and 1499 are below the RoCE fabric's 1500, the range roce_policy.MTU_RANGE holds for both
@pytest.mark.parametrize('mtu', [100000, 500, 1280, 1499, 9217, '9000', True])
def test_mtu_out_of_range_or_not_an_int(mtu):
    hv = cluster(1)
    hv['node01']['fabric_network_interfaces'][0]['mtu'] = mtu
    assert plan(hv)['problems'] == ['fabric_network_interfaces[0].mtu on node01: %s is outside 1500-9216' % mtu]


@pytest.mark.parametrize('mtu', [1500, 4200, 9216])
def test_mtu_at_the_ends_of_the_range_passes(mtu):
    hv = cluster(1)
    hv['node01']['fabric_network_interfaces'][0]['mtu'] = mtu
    assert plan(hv)['problems'] == []


def test_host_mtu_variable_is_checked_too():
    hv = cluster(1)
    hv['node01']['fabric_network_mtu'] = 100000
    assert len(plan(hv)['problems']) == 2


def test_duplicate_fabric_hostname():
    hv = cluster(2)
    hv['node01']['fabric_network_interfaces'][0]['hostname'] = 'shared'
    hv['node02']['fabric_network_interfaces'][0]['hostname'] = 'shared'
    assert plan(hv)['problems'] == ['fabric_network_interfaces[0] on node02: fabric hostname shared is already used by node01']


def test_fabric_hostname_may_not_be_another_inventory_host():
    hv = cluster(2)
    hv['node01']['fabric_network_interfaces'][0]['hostname'] = 'node02'
    assert plan(hv)['problems'] == ['fabric_network_interfaces[0] on node01: fabric hostname node02 is already used by node02']


def test_interface_listed_twice_and_missing_name():
    hv = cluster(1)
    hv['node01']['fabric_network_interfaces'][1]['name'] = 'fab0'
    hv['node01']['fabric_network_interfaces'].append({'address': '10.78.1.50/24', 'rail': 1})
    assert plan(hv)['problems'] == [
        'fabric_network_interfaces[1] on node01: interface fab0 is listed twice',
        'fabric_network_interfaces[2] on node01: give the interface a name or a mac',
        'fabric_network_interfaces[2].rail on node01: rail 1 already has fabric_network_interfaces[1]; a node has one '
        'NIC per rail (two addresses in one subnet answer ARP for each other and route replies out of either)',
    ]


def test_unknown_rail_and_bad_address():
    hv = cluster(1)
    hv['node01']['fabric_network_interfaces'][0].update(rail=7, address='10.78.0.300/24')
    problems = plan(hv)['problems']
    assert problems[0] == 'fabric_network_interfaces[0].rail on node01: 7 is not an index of fabric_network_rails (0-1)'
    assert problems[1].startswith('fabric_network_interfaces[0].address on node01: 10.78.0.300/24 is not an address')


def test_network_address_is_rejected():
    hv = cluster(1)
    hv['node01']['fabric_network_interfaces'][0]['address'] = '10.78.0.0/24'
    assert plan(hv)['problems'] == [
        'fabric_network_interfaces[0].address on node01: 10.78.0.0 is the network or broadcast address of 10.78.0.0/24']


def test_overlapping_rails():
    rails = copy.deepcopy(RAILS) + [{'name': 'rail2', 'subnet': '10.78.0.128/25'}]
    assert plan(cluster(1), rails)['problems'] == [
        'fabric_network_rails[2].subnet 10.78.0.128/25 overlaps fabric_network_rails[0].subnet 10.78.0.0/24']


def test_rails_must_be_a_list():
    problems = fabric_plan(cluster(1), ['node01'], {'subnet': '10.0.0.0/8'})['problems']
    assert problems[0] == 'fabric_network_rails on node01: must be a list of {name, subnet}, got dict'


def test_host_without_fabric_interfaces_keeps_its_inventory_name():
    hv = cluster(1)
    hv['login01'] = {}
    result = fabric_plan(hv, ['node01', 'login01'], RAILS)
    assert result['problems'] == []
    assert result['primary_names']['login01'] == 'login01'


def test_thousand_nodes_in_one_pass():
    hv = {
        'node%04d' % i: {'fabric_network_interfaces': [
            {'name': 'fab%d' % r, 'address': '10.%d.%d.%d/16' % (100 + r, i // 250, i % 250 + 1), 'rail': r} for r in range(8)]}
        for i in range(1000)
    }
    rails = [{'name': 'rail%d' % r, 'subnet': '10.%d.0.0/16' % (100 + r)} for r in range(8)]
    result = fabric_plan(hv, sorted(hv), rails)
    assert result['problems'] == []
    assert len(result['hosts_entries']) == 8000
