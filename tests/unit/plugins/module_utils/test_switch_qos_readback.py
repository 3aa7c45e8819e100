# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Switch read-back: a switch's configuration against the policy rendered for it, one line per differing setting."""
from __future__ import annotations
import copy
import json
from pathlib import Path

import pytest

from ansible_collections.hpcfabric.cluster.plugins.module_utils import switch_qos_readback as readback
from ansible_collections.hpcfabric.cluster.plugins.module_utils.switch_qos_render import render

GOLDEN = Path(__file__).resolve().parents[2] / 'fixtures' / 'switch_qos' / 'golden'
SONIC_PORTS = ['Ethernet0', 'Ethernet8']
NVUE_PORTS = ['swp1', 'swp2']
PRIORITY_4 = {'roce': {'dscp': 24, 'priority': 4}, 'pfc': {'priorities': [4]},
              'ets': {'bandwidth_percent': [50, 0, 0, 0, 50, 0, 0, 0]}}


def applied(platform, policy=None):
    """The configuration a switch holds once the render is applied, plus what a real one has besides."""
    if platform == 'cumulus':
        tree = copy.deepcopy(render('cumulus', policy or {}, NVUE_PORTS)['body'])
        tree['interface']['swp3'] = {'link': {'mtu': 1500}}
        return tree
    db = copy.deepcopy(render('sonic', policy or {}, SONIC_PORTS)['config_db'])
    for port in SONIC_PORTS:
        db['PORT'][port].update(speed='400000', admin_status='up')
    db['DSCP_TO_TC_MAP']['AZURE'].update({'0': '0', '46': '5'})
    db['TACPLUS'] = {'global': {'passkey': 'secret'}}
    return db


def mismatches(platform, running, policy=None):
    ports = NVUE_PORTS if platform == 'cumulus' else SONIC_PORTS
    return render(platform, policy or {}, ports, running=running, switch='leaf')['mismatches']


def test_the_line_names_switch_scope_setting_found_and_wanted():
    assert readback.mismatch_line('leaf02', 'Ethernet8', 'PFC priorities', [], [3]) == \
        'leaf02: Ethernet8: PFC priorities is none, expected 3'
    assert readback.mismatch_line('leaf02', 'global', 'ECN on traffic class 3', False, True) == \
        'leaf02: global: ECN on traffic class 3 is off, expected on'
    assert readback.mismatch_line('leaf02', 'Ethernet0', 'MTU', None, 9214) == 'leaf02: Ethernet0: MTU is missing, expected 9214'
    assert readback.show([3, 4]) == '3,4'


@pytest.mark.parametrize('platform', ['cumulus', 'sonic'])
@pytest.mark.parametrize('policy', [{}, PRIORITY_4], ids=['default', 'priority-4'])
def test_an_applied_render_reads_back_without_a_mismatch(platform, policy):
    assert mismatches(platform, applied(platform, policy), policy) == []


def test_the_golden_nvue_body_reads_back_clean_and_in_neutral_form():
    tree = json.loads((GOLDEN / 'cumulus.nvue.json').read_text())
    result = render('cumulus', {}, NVUE_PORTS, running=tree, switch='leaf01')
    assert result['mismatches'] == []
    port = result['state']['ports']['swp1']
    assert port == {'trust': 'dscp', 'dscp_map': {26: 3, 48: 6}, 'pfc': [3],
                    'ecn': {3: {'enabled': True, 'min_threshold_bytes': 150000, 'max_threshold_bytes': 1500000,
                                'probability_percent': 100}},
                    'scheduler': {0: 'DWRR 50%', 3: 'DWRR 50%', 6: 'strict'}, 'mtu': 9214}


# --- SONiC -------------------------------------------------------------------------------------------------------

def test_sonic_dscp_26_mapped_to_another_traffic_class_is_named_once_for_the_switch():
    running = applied('sonic')
    running['DSCP_TO_TC_MAP']['AZURE']['26'] = '1'
    assert mismatches('sonic', running) == ['leaf: global: DSCP 26 traffic class is 1, expected 3']


def test_sonic_pfc_off_on_one_port_names_that_port():
    running = applied('sonic')
    running['PORT_QOS_MAP']['Ethernet8']['pfc_enable'] = ''
    assert mismatches('sonic', running) == ['leaf: Ethernet8: PFC priorities is none, expected 3']
    del running['PORT_QOS_MAP']['Ethernet8']['pfc_enable']
    assert mismatches('sonic', running) == ['leaf: Ethernet8: PFC priorities is none, expected 3']


def test_sonic_an_extra_lossless_priority_is_a_mismatch():
    running = applied('sonic')
    running['PORT_QOS_MAP']['Ethernet0']['pfc_enable'] = '3,4'
    assert mismatches('sonic', running) == ['leaf: Ethernet0: PFC priorities is 3,4, expected 3']


def test_sonic_a_port_bound_to_another_dscp_map_is_named_with_what_that_map_says():
    running = applied('sonic')
    running['DSCP_TO_TC_MAP']['LEGACY'] = {'26': '1', '48': '6'}
    running['PORT_QOS_MAP']['Ethernet0']['dscp_to_tc_map'] = 'LEGACY'
    assert mismatches('sonic', running) == ['leaf: Ethernet0: DSCP 26 traffic class is 1, expected 3']


def test_sonic_ecn_mtu_and_scheduler_per_port():
    running = applied('sonic')
    del running['QUEUE']['Ethernet0|3']['wred_profile']
    running['QUEUE']['Ethernet8|6']['scheduler'] = 'ROCE_DWRR_50'
    running['PORT']['Ethernet8']['mtu'] = '9100'
    running['WRED_PROFILE']['ROCE_LOSSLESS']['ecn'] = 'ecn_green'
    assert mismatches('sonic', running) == [
        'leaf: global: ECN on traffic class 3 is ecn_green, expected on',
        'leaf: Ethernet0: ECN on traffic class 3 is off, expected on',
        'leaf: Ethernet8: traffic class 6 scheduling is DWRR 50%, expected strict',
        'leaf: Ethernet8: MTU is 9100, expected 9214',
    ]


def test_sonic_queue_ranges_are_read_per_traffic_class():
    running = applied('sonic')
    running['QUEUE']['Ethernet0|0-6'] = running['QUEUE'].pop('Ethernet0|6')
    del running['QUEUE']['Ethernet0|0'], running['QUEUE']['Ethernet0|3']
    assert readback._sonic_queues(running['QUEUE'])['Ethernet0'][3] == {'scheduler': 'ROCE_STRICT'}
    assert 'leaf: Ethernet0: traffic class 3 scheduling is strict, expected DWRR 50%' in mismatches('sonic', running)


def test_sonic_plumbing_outside_the_neutral_form_is_named_by_its_config_db_path():
    running = applied('sonic')
    running['TC_TO_QUEUE_MAP']['AZURE']['3'] = '1'
    running['PORT_QOS_MAP']['Ethernet8']['tc_to_pg_map'] = 'OTHER'
    # in CONFIG_DB table order
    assert mismatches('sonic', running) == ['leaf: Ethernet8: tc_to_pg_map is OTHER, expected AZURE',
                                            'leaf: global: TC_TO_QUEUE_MAP|AZURE 3 is 1, expected 3']


def test_sonic_a_port_the_switch_does_not_have_is_named():
    running = applied('sonic')
    del running['PORT']['Ethernet8']
    assert mismatches('sonic', running) == ['leaf: Ethernet8: port is missing, expected present']


def test_sonic_image_defaults_send_dscp_26_to_tc_1():
    default_qos = {'DSCP_TO_TC_MAP': {'AZURE': {'26': '1', '46': '5', '48': '6'}},
                   'PORT': dict((port, {'mtu': '9100'}) for port in SONIC_PORTS)}
    lines = mismatches('sonic', default_qos)
    assert 'leaf: global: DSCP 26 traffic class is 1, expected 3' in lines
    assert 'leaf: Ethernet0: PFC priorities is missing, expected 3' in lines
    assert 'leaf: Ethernet8: MTU is 9100, expected 9214' in lines


# --- NVUE --------------------------------------------------------------------------------------------------------

def test_nvue_dscp_26_mapped_to_another_switch_priority():
    running = applied('cumulus')
    running['qos']['mapping']['default-global']['dscp']['26']['switch-priority'] = 1
    assert mismatches('cumulus', running) == ['leaf: global: DSCP 26 traffic class is 1, expected 3']


def test_nvue_pfc_off_on_one_port_through_another_profile():
    running = applied('cumulus')
    running['qos']['pfc']['lossy-ports'] = {'switch-priority': {}, 'tx': 'enable', 'rx': 'enable'}
    running['interface']['swp2']['qos'] = {'pfc': {'profile': 'lossy-ports'}}
    result = render('cumulus', {}, NVUE_PORTS, running=running, switch='leaf')
    assert result['mismatches'] == ['leaf: swp2: PFC priorities is none, expected 3']
    # the role writes no per-port profile, so its patch cannot repair this one: the read-back after applying fails
    assert result['changes'] == []


def test_nvue_an_extra_lossless_priority_and_a_port_mtu():
    running = applied('cumulus')
    running['qos']['pfc']['default-global']['switch-priority']['4'] = {}
    running['interface']['swp2']['link']['mtu'] = 9000
    assert mismatches('cumulus', running) == ['leaf: global: PFC priorities is 3,4, expected 3',
                                              'leaf: swp2: MTU is 9000, expected 9214']


def test_nvue_ecn_off_and_trust_l2():
    running = applied('cumulus')
    running['qos']['congestion-control']['default-global']['traffic-class']['3']['ecn'] = 'disable'
    running['qos']['mapping']['default-global']['trust'] = 'l2'
    assert mismatches('cumulus', running) == ['leaf: global: trust is pcp, expected dscp',
                                              'leaf: global: ECN on traffic class 3 is off, expected on']


def test_nvue_settings_outside_the_neutral_form_are_named_by_their_nv_path():
    running = applied('cumulus')
    running['qos']['roce']['mode'] = 'lossy'
    running['qos']['pfc']['default-global']['tx'] = 'disable'
    assert mismatches('cumulus', running) == ['leaf: global: qos pfc default-global tx is disable, expected enable',
                                              'leaf: global: qos roce mode is lossy, expected lossless']


def test_nvue_a_port_missing_from_the_applied_tree():
    running = applied('cumulus')
    del running['interface']['swp1']
    assert mismatches('cumulus', running) == ['leaf: swp1: port is missing, expected present']


# --- the neutral comparison, as another vendor path (EOS) uses it ----------------------------------------------

def test_compare_state_takes_any_vendor_s_neutral_state():
    intent = render('eos', {}, ['Ethernet1/1', 'Ethernet2/1'])['intent']
    port = {'trust': 'dscp', 'dscp_map': {26: 3, 48: 6}, 'pfc': [3], 'mtu': 9214,
            'ecn': {3: {'enabled': True, 'min_threshold_bytes': 150000, 'max_threshold_bytes': 1500000,
                        'probability_percent': 100}},
            'scheduler': {0: 'DWRR 50%', 3: 'DWRR 50%', 6: 'strict'}}
    state = {'global': {'dscp_map': {26: 1, 48: 6}},
             'ports': {'Ethernet1/1': dict(port, dscp_map={26: 1, 48: 6}), 'Ethernet2/1': dict(port, pfc=[], mtu=1500)}}
    # Ethernet1/1 only uses the global map: named once, as global; Ethernet2/1 has its own differences
    assert readback.compare_state('spine01', intent, state) == [
        'spine01: global: DSCP 26 traffic class is 1, expected 3',
        'spine01: Ethernet2/1: PFC priorities is none, expected 3',
        'spine01: Ethernet2/1: MTU is 1500, expected 9214',
    ]
    del state['ports']['Ethernet2/1']
    assert readback.compare_state('spine01', intent, state)[-1] == 'spine01: Ethernet2/1: port is missing, expected present'
