# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""One policy drives both ends: what the hosts are told and what every switch render says must agree.

The switch configurations are parsed back from their rendered text (NVUE commands, CONFIG_DB JSON,
EOS CLI); the host side is read from the commands the mlnx_qos and dcb backends would run on a NIC
that still has the driver defaults.
"""
from __future__ import annotations
import json
import re

import pytest

from ansible_collections.hpcfabric.cluster.plugins.module_utils import roce_host
from ansible_collections.hpcfabric.cluster.plugins.module_utils import switch_qos_render as render_mod
from ansible_collections.hpcfabric.cluster.plugins.module_utils.roce_policy import resolve_policy

POLICIES = {
    'default': {},
    'priority 4': {'roce': {'dscp': 24, 'priority': 4}, 'pfc': {'priorities': [4]},
                   'ets': {'bandwidth_percent': [50, 0, 0, 0, 50, 0, 0, 0]}},
    'two lossless': {'roce': {'dscp': 34, 'priority': 5}, 'cnp': {'dscp': 46, 'priority': 7}, 'pfc': {'priorities': [3, 5]},
                     'ets': {'bandwidth_percent': [20, 0, 0, 30, 0, 50, 0, 0], 'strict_classes': [7]},
                     'ecn': {'min_threshold_bytes': 100000, 'max_threshold_bytes': 400000, 'probability_percent': 20}},
}
PORTS = {'cumulus': ['swp1', 'swp2'], 'sonic': ['Ethernet0', 'Ethernet4'], 'eos': ['Ethernet1', 'Ethernet2']}
UNTOUCHED_NIC = {'trust': 'pcp', 'dscp2prio': None, 'pfc': [], 'prio_tc': [1, 0, 2, 3, 4, 5, 6, 7],
                 'tsa': dict((tc, 'vendor') for tc in range(8)), 'tcbw': {}}


def host_side(policy):
    """DSCP map, PFC priorities and ECN/ETS as the host backends would program them."""
    desired = roce_host.desired_qos(policy)
    mlnx = roce_host.MlnxQos('mlnx_qos', None).plan('ens1f0np0', UNTOUCHED_NIC, desired)
    dcb = roce_host.Dcb('dcb', None).plan('ens1f0np0', dict(UNTOUCHED_NIC, dscp2prio={}), desired)
    pfc_vector = mlnx[0][mlnx[0].index('--pfc') + 1].split(',')
    dscp_sets = [arg.split(',')[1:] for arg in mlnx[1] if arg.startswith('set,')]
    dcb_app = [arg.split(':') for arg in dcb[0][6:]]
    dcb_pfc = [arg.split(':') for arg in dcb[1][6:]]
    views = [
        {'dscp': dict((int(d), int(p)) for d, p in dscp_sets), 'pfc': [i for i, bit in enumerate(pfc_vector) if bit == '1']},
        {'dscp': dict((int(d), int(p)) for d, p in dcb_app), 'pfc': [int(p) for p, state in dcb_pfc if state == 'on']},
    ]
    assert views[0] == views[1]
    return views[0]


def cumulus_side(text):
    dscp = dict((int(d), int(p)) for d, p in re.findall(r'^nv set qos mapping default-global dscp (\d+) switch-priority (\d+)$', text, re.M))
    pfc = sorted(int(p) for p in re.findall(r'^nv set qos pfc default-global switch-priority (\d+)$', text, re.M))
    assert 'nv set qos mapping default-global trust l3' in text.splitlines()
    return {'dscp': dscp, 'pfc': pfc}


def sonic_side(text):
    config = json.loads(text)
    pfc = set(config['PORT_QOS_MAP'][port]['pfc_enable'] for port in config['PORT_QOS_MAP'])
    assert len(pfc) == 1
    return {'dscp': dict((int(d), int(tc)) for d, tc in config['DSCP_TO_TC_MAP']['AZURE'].items()),
            'pfc': sorted(int(p) for p in pfc.pop().split(','))}


def eos_side(text):
    dscp = dict((int(d), int(tc)) for d, tc in re.findall(r'^qos map dscp (\d+) to traffic-class (\d+)$', text, re.M))
    per_port = re.split(r'^interface ', text, flags=re.M)[1:]
    pfc = set(tuple(sorted(int(p) for p in re.findall(r'priority-flow-control priority (\d+) no-drop', block))) for block in per_port)
    assert len(pfc) == 1 and all('qos trust dscp' in block for block in per_port)
    return {'dscp': dscp, 'pfc': list(pfc.pop())}


PARSERS = {'cumulus': cumulus_side, 'sonic': sonic_side, 'eos': eos_side}


@pytest.mark.parametrize('name', sorted(POLICIES))
def test_hosts_and_every_switch_agree_on_dscp_priority_and_pfc(name):
    policy = resolve_policy(POLICIES[name])
    hosts = host_side(policy)
    assert hosts['dscp'] == {policy['roce']['dscp']: policy['roce']['priority'], policy['cnp']['dscp']: policy['cnp']['priority']}
    for platform, parse in PARSERS.items():
        switch = parse(render_mod.render(platform, POLICIES[name], PORTS[platform])['text'])
        assert switch == hosts, platform


@pytest.mark.parametrize('name', sorted(POLICIES))
def test_switch_ecn_and_mtu_fit_the_host_side(name):
    policy = resolve_policy(POLICIES[name])
    for platform in PARSERS:
        intent = render_mod.render(platform, POLICIES[name], PORTS[platform])['intent']
        assert intent['ecn']['traffic_class'] == policy['roce']['priority']
        assert policy['roce']['priority'] in intent['pfc_priorities']
        assert intent['mtu'] >= policy['mtu']['host']
        assert policy['cnp']['priority'] in intent['strict_classes']
    ecn = policy['ecn']
    eos = render_mod.render('eos', POLICIES[name], PORTS['eos'])['text']
    assert eos.count('random-detect ecn minimum-threshold %d bytes maximum-threshold %d bytes max-mark-probability %d'
                     % (ecn['min_threshold_bytes'], ecn['max_threshold_bytes'], ecn['probability_percent'])) == 2
    assert 'traffic-class %d min-threshold %d' % (policy['roce']['priority'], ecn['min_threshold_bytes']) \
        in render_mod.render('cumulus', POLICIES[name], PORTS['cumulus'])['text']
