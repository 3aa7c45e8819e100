# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Switch renderers: golden files per vendor, exact diffs for a changed policy, rejection before rendering."""
from __future__ import annotations
import difflib
import json
from pathlib import Path

import pytest

from ansible_collections.hpcfabric.cluster.plugins.module_utils import switch_qos_render as render_mod
from ansible_collections.hpcfabric.cluster.plugins.module_utils.roce_policy import PolicyError

GOLDEN = Path(__file__).resolve().parents[2] / 'fixtures' / 'switch_qos' / 'golden'
PORTS = {'cumulus': ['swp1', 'swp2'], 'sonic': ['Ethernet0', 'Ethernet8'], 'eos': ['Ethernet1/1', 'Ethernet2/1']}
# RoCE moved to DSCP 24 on priority 4: PFC and the ETS share move with it
PRIORITY_4 = {'roce': {'dscp': 24, 'priority': 4}, 'pfc': {'priorities': [4]},
              'ets': {'bandwidth_percent': [50, 0, 0, 0, 50, 0, 0, 0]}}


def rendered(platform, policy=None):
    return render_mod.render(platform, policy or {}, PORTS[platform])


def changed_lines(platform):
    """(removed, added) lines between the default render and the priority-4 render."""
    diff = list(difflib.ndiff(rendered(platform)['text'].splitlines(), rendered(platform, PRIORITY_4)['text'].splitlines()))
    return [line[2:] for line in diff if line.startswith('- ')], [line[2:] for line in diff if line.startswith('+ ')]


@pytest.mark.parametrize('platform, golden', [('cumulus', 'cumulus.nv'), ('sonic', 'sonic.json'), ('eos', 'eos.cfg')])
def test_render_matches_reviewed_golden_file(platform, golden):
    result = rendered(platform)
    assert result['text'] == (GOLDEN / golden).read_text()
    assert golden.endswith('.' + result['extension'])


def test_cumulus_rest_body_matches_golden_and_the_commands():
    result = rendered('cumulus')
    assert json.dumps(result['body'], indent=2, sort_keys=True) + '\n' == (GOLDEN / 'cumulus.nvue.json').read_text()
    assert result['commands'] == render_mod.nvue_commands(result['body'])
    assert result['text'].splitlines()[-1] == 'nv config apply'


def test_cumulus_changed_policy_changes_exactly_these_lines():
    removed, added = changed_lines('cumulus')
    assert removed == [
        'nv set qos mapping default-global dscp 26 switch-priority 3',
        'nv set qos pfc default-global switch-priority 3',
        'nv set qos egress-queue-mapping default-global switch-priority 3 traffic-class 3',
        'nv set qos congestion-control default-global traffic-class 3 ecn enable',
        'nv set qos congestion-control default-global traffic-class 3 min-threshold 150000',
        'nv set qos congestion-control default-global traffic-class 3 max-threshold 1500000',
        'nv set qos congestion-control default-global traffic-class 3 probability 100',
        'nv set qos egress-scheduler default-global traffic-class 3 mode dwrr',
        'nv set qos egress-scheduler default-global traffic-class 3 bw-percent 50',
    ]
    assert added == [line.replace('dscp 26', 'dscp 24').replace(' 3', ' 4') for line in removed]


def test_sonic_changed_policy_changes_exactly_these_lines():
    removed, added = changed_lines('sonic')
    # DSCP map, pfc_enable of both ports, the queue holding the WRED/ECN profile, the lossless priority group
    assert removed == ['            "26": "3",', '            "pfc_enable": "3",', '            "pfc_enable": "3",',
                       '        "Ethernet0|3": {', '        "Ethernet8|3": {', '            "3": "3",', '            "4": "0",']
    assert added == ['            "24": "4",', '            "pfc_enable": "4",', '            "pfc_enable": "4",',
                     '        "Ethernet0|4": {', '        "Ethernet8|4": {', '            "3": "0",', '            "4": "4",']


def test_eos_changed_policy_changes_exactly_these_lines():
    removed, added = changed_lines('eos')
    assert removed == ['qos map dscp 26 to traffic-class 3'] + [
        '   priority-flow-control priority 3 no-drop', '   uc-tx-queue 3'] * 2
    assert added == ['qos map dscp 24 to traffic-class 4'] + [
        '   priority-flow-control priority 4 no-drop', '   uc-tx-queue 4'] * 2


def test_sonic_overrides_the_default_dscp_26_to_tc_1_map():
    config = rendered('sonic')['config_db']
    assert config['DSCP_TO_TC_MAP'] == {'AZURE': {'26': '3', '48': '6'}}
    assert config['PORT_QOS_MAP']['Ethernet8']['pfc_enable'] == '3'
    assert config['WRED_PROFILE']['ROCE_LOSSLESS']['ecn'] == 'ecn_all'
    assert config['QUEUE']['Ethernet0|3'] == {'scheduler': 'ROCE_DWRR_50', 'wred_profile': 'ROCE_LOSSLESS'}
    assert config['PORT']['Ethernet0'] == {'mtu': '9214'}


def test_eos_blocks_for_eos_config():
    blocks = rendered('eos')['blocks']
    assert blocks[0] == {'parents': [], 'lines': ['qos map dscp 26 to traffic-class 3', 'qos map dscp 48 to traffic-class 6']}
    assert blocks[1] == {'parents': ['interface Ethernet1/1'], 'lines': [
        'mtu 9214', 'qos trust dscp', 'priority-flow-control on', 'priority-flow-control priority 3 no-drop']}
    assert blocks[3]['parents'] == ['interface Ethernet1/1', 'uc-tx-queue 3']
    assert blocks[3]['lines'][-1] == ('random-detect ecn minimum-threshold 150000 bytes maximum-threshold 1500000 bytes '
                                      'max-mark-probability 100')
    assert len(blocks) == 1 + 2 * 4
    tx_queue = render_mod.render('eos', {}, ['Ethernet1'], eos_queue='tx-queue')['blocks'][2]
    assert tx_queue['parents'] == ['interface Ethernet1', 'tx-queue 0']


@pytest.mark.parametrize('platform', render_mod.PLATFORMS)
def test_policy_without_pfc_on_the_roce_priority_is_rejected_before_rendering(platform):
    with pytest.raises(PolicyError) as error:
        render_mod.render(platform, {'roce': {'dscp': 24, 'priority': 4}}, PORTS[platform])
    assert error.value.errors == [
        'roce_qos_policy.roce.priority: RoCE DSCP 24 maps to priority 4, which has no PFC (roce_qos_policy.pfc.priorities: [3]), '
        'so RoCE traffic would be dropped under congestion',
        'roce_qos_policy.ets.bandwidth_percent[4]: RoCE traffic class 4 needs an ETS share above 0 and must not be strict']


@pytest.mark.parametrize('ports, message', [
    ([], "switch_qos_ports: must be a non-empty list of port names, got []"),
    (['swp1', 'swp1'], 'switch_qos_ports: swp1 listed more than once'),
    (['swp 1'], "switch_qos_ports: 'swp 1' is not a port name"),
])
def test_bad_port_lists(ports, message):
    with pytest.raises(PolicyError) as error:
        render_mod.render('cumulus', {}, ports)
    assert str(error.value) == message


def test_unknown_platform():
    with pytest.raises(PolicyError) as error:
        render_mod.render('junos', {}, ['et-0/0/0'])
    assert str(error.value) == "switch_qos_platform: 'junos' is not one of cumulus, sonic, eos"


def test_sonic_patch_against_a_running_config_db():
    running = {
        'DSCP_TO_TC_MAP': {'AZURE': {'0': '1', '26': '1', '46': '5', '48': '6'}},
        'PORT_QOS_MAP': {'Ethernet0': {'dscp_to_tc_map': 'AZURE', 'pfc_enable': '3,4', 'tc_to_pg_map': 'AZURE',
                                       'tc_to_queue_map': 'AZURE', 'pfc_to_queue_map': 'AZURE'}},
        'PORT': {'Ethernet0': {'mtu': '9100', 'speed': '400000'}, 'Ethernet8': {'mtu': '9214'}},
    }
    result = render_mod.render('sonic', {}, ['Ethernet0'], running=running)
    ops = dict((op['path'], op) for op in result['patch'])
    assert ops['/DSCP_TO_TC_MAP/AZURE/26'] == {'op': 'replace', 'path': '/DSCP_TO_TC_MAP/AZURE/26', 'value': '3'}
    assert '/DSCP_TO_TC_MAP/AZURE/48' not in ops
    assert ops['/PORT_QOS_MAP/Ethernet0/pfc_enable']['value'] == '3'
    assert ops['/PORT/Ethernet0/mtu'] == {'op': 'replace', 'path': '/PORT/Ethernet0/mtu', 'value': '9214'}
    assert ops['/WRED_PROFILE']['op'] == 'add' and 'ROCE_LOSSLESS' in ops['/WRED_PROFILE']['value']
    assert ops['/QUEUE']['value']['Ethernet0|3']['wred_profile'] == 'ROCE_LOSSLESS'
    assert {'path': '/PORT_QOS_MAP/Ethernet0/pfc_enable', 'current': '3,4', 'desired': '3'} in result['changes']


def test_sonic_patch_is_empty_once_applied():
    desired = rendered('sonic')['config_db']
    result = render_mod.render('sonic', {}, PORTS['sonic'], running=json.loads(json.dumps(desired)))
    assert result['patch'] == [] and result['changes'] == []


def test_cumulus_changes_against_the_applied_nvue_tree():
    applied = json.loads((GOLDEN / 'cumulus.nvue.json').read_text())
    assert render_mod.render('cumulus', {}, PORTS['cumulus'], running=applied)['patch'] == {}
    applied['qos']['pfc']['default-global']['switch-priority'] = {'3': {}, '4': {}}
    applied['interface']['swp2']['link']['mtu'] = 9216
    result = render_mod.render('cumulus', {}, PORTS['cumulus'], running=applied)
    assert result['changes'] == [{'path': '/interface/swp2/link/mtu', 'current': 9216, 'desired': 9214}]
    assert result['patch'] == result['body']
    del applied['qos']['congestion-control']
    paths = [change['path'] for change in render_mod.render('cumulus', {}, PORTS['cumulus'], running=applied)['changes']]
    assert '/qos/congestion-control/default-global/traffic-class/3/min-threshold' in paths


def test_json_pointer_escapes():
    assert render_mod.sonic_patch({'T': {'a/b~c': {'f': '1'}}}, {'T': {}}) == [
        {'op': 'add', 'path': '/T/a~1b~0c', 'value': {'f': '1'}}]
