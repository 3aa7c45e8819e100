# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The qos_plan filter: nodes and switches agree on one RoCE policy and compatible MTUs."""
from __future__ import annotations
from ansible_collections.hpcfabric.cluster.plugins.filter.qos_plan import FilterModule

qos_plan = FilterModule().filters()['qos_plan']


def cluster():
    return {
        'node01': {'fabric_network_interfaces': [{'name': 'fab0', 'address': '10.0.0.1/24'}]},
        'node02': {'fabric_network_interfaces': [{'name': 'fab0', 'address': '10.0.0.2/24'}]},
        'leaf01': {},
        'leaf02': {},
    }


def run(hv):
    return qos_plan(hv, ['node01', 'node02'], ['leaf01', 'leaf02'])


def test_defaults_agree():
    assert run(cluster()) == []


def test_one_override_for_everyone_agrees():
    hv = cluster()
    for host in hv.values():
        host['roce_qos_policy'] = {'roce': {'dscp': 24, 'priority': 4}, 'pfc': {'priorities': [4]},
                                   'ets': {'bandwidth_percent': [50, 0, 0, 0, 50, 0, 0, 0]}}
    assert run(hv) == []


def test_switch_with_other_pfc_priority_is_named():
    hv = cluster()
    hv['leaf02']['switch_qos_policy'] = {'roce': {'dscp': 26, 'priority': 4}, 'pfc': {'priorities': [4]},
                                         'ets': {'bandwidth_percent': [50, 0, 0, 0, 50, 0, 0, 0]}}
    assert run(hv) == ['RoCE policy (trust, roce, cnp, pfc) differs: node01, node02, leaf01 use one policy, leaf02 another']


def test_ecn_tuning_per_switch_is_not_a_disagreement():
    hv = cluster()
    hv['leaf01']['switch_qos_policy'] = {'ecn': {'min_threshold_bytes': 200000}}
    assert run(hv) == []


def test_invalid_policy_names_variable_and_host():
    hv = cluster()
    hv['node02']['roce_qos_policy'] = {'roce': {'priority': 4}}
    problems = run(hv)
    assert problems[0].startswith('roce_qos_policy.roce.priority: RoCE DSCP 26 maps to priority 4, which has no PFC')
    assert all(p.endswith(' on node02') for p in problems)


def test_interface_mtu_above_switch_mtu():
    hv = cluster()
    hv['node01']['fabric_network_interfaces'][0]['mtu'] = 9216
    hv['node01']['roce_qos_policy'] = {'mtu': {'switch': 9214}}
    assert run(hv) == ['fabric_network_interfaces[0].mtu on node01: 9216 is above the switch port MTU 9214 (roce_qos_policy.mtu.switch)']


def test_fabric_mtu_differs_from_policy_host_mtu():
    hv = cluster()
    hv['node02']['fabric_network_mtu'] = 4200
    assert run(hv) == ['fabric_network_mtu on node02: 4200 differs from roce_qos_policy.mtu.host 9000']
