# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Reading an Arista EOS running configuration back against the rendered policy (module_utils/switch_qos_eos.py).

The running configurations under fixtures/switch_qos/eos_running are written for these tests in the layout EOS prints
(Arista EOS User Manual: ``show running-config`` with three spaces a level and ``!`` between sections, transmit queue
sections under the interface, several DSCPs of one traffic class on one ``qos map dscp`` line; the same layout as the
device configurations in aristanetworks/avd's eos_cli_config_gen documentation). The DSCP map EOS starts from is the
manual's default table (DSCP 0-7 to traffic class 1, 8-15 to 0, 16-23 to 2, ... 56-63 to 7).
"""
from __future__ import annotations

import re

import pytest

from ansible_collections.hpcfabric.cluster.plugins.module_utils import switch_qos_eos as eos
from ansible_collections.hpcfabric.cluster.plugins.module_utils.switch_qos_render import render

PORTS = ['Ethernet1/1', 'Ethernet2/1']
SECRETS = ('$6$leaf1salt$not-a-real-hash-but-a-secret', '070C285F4D06')
PRIORITY_4 = {'roce': {'dscp': 24, 'priority': 4}, 'pfc': {'priorities': [4]},
              'ets': {'bandwidth_percent': [50, 0, 0, 0, 50, 0, 0, 0]}}
# a port holding the default policy, written out as EOS prints it
PORT_TEXT = """interface Ethernet1/1
   mtu 9214
   qos trust dscp
   priority-flow-control on
   priority-flow-control priority 3 no-drop
   !
   uc-tx-queue 0
      no priority
      bandwidth percent 50
   !
   uc-tx-queue 3
      no priority
      bandwidth percent 50
      random-detect ecn minimum-threshold 150000 bytes maximum-threshold 1500000 bytes max-mark-probability 100
!
"""


@pytest.fixture
def running(fixture_text):
    def read(name):
        return fixture_text('switch_qos', 'eos_running/%s.cfg' % name)
    return read


def rendered(policy=None, ports=None, queue='uc-tx-queue'):
    return render('eos', policy or {}, ports or PORTS, eos_queue=queue)


def mismatches(text, policy=None, ports=None, queue='uc-tx-queue'):
    return eos.read_back('leaf1', rendered(policy, ports, queue), text)['mismatches']


def test_a_switch_that_holds_the_policy_has_no_mismatch(running):
    # DSCP 26 and 48 are in their default class (no line), thresholds in kbytes on one port, queues in another
    # order, queue 6 strict by default on one port and written out on the other
    assert mismatches(running('applied')) == []


def test_drift_names_switch_port_and_setting(running):
    result = mismatches(running('drifted'))
    assert result == ['leaf1: global: DSCP 26 traffic class is 2, expected 3',
                      'leaf1: Ethernet2/1: PFC priorities is none, expected 3']
    assert not any(secret in line for line in result for secret in SECRETS)


def test_the_state_is_what_the_switch_holds(running):
    state = eos.read_back('leaf1', rendered(), running('drifted'))['state']
    # the explicit map lines, and the policy's DSCPs with EOS's default for them
    explicit = dict.fromkeys(range(8), 0)
    explicit.update({10: 2, 24: 2, 25: 2, 26: 2, 27: 2, 48: 6})
    assert state['global']['dscp_map'] == explicit
    assert state['ports']['Ethernet1/1'] == {
        'trust': 'dscp', 'dscp_map': state['global']['dscp_map'], 'pfc': [3], 'mtu': 9214,
        'ecn': {3: {'enabled': True, 'min_threshold_bytes': 150000, 'max_threshold_bytes': 1500000,
                    'probability_percent': 100}},
        'scheduler': {0: 'DWRR 50%', 1: 'strict', 2: 'strict', 3: 'DWRR 50%', 4: 'strict', 5: 'strict', 6: 'strict',
                      7: 'strict'}}
    # PFC off: no priority is paused, whatever no-drop lines are left
    assert state['ports']['Ethernet2/1']['pfc'] == []


def test_the_rendered_text_itself_has_no_mismatch():
    for policy in ({}, PRIORITY_4):
        result = rendered(policy)
        assert eos.read_back('leaf1', result, result['text'])['mismatches'] == []


def test_every_setting_of_a_port_is_compared():
    text = """interface Ethernet1/1
   mtu 9000
   qos trust cos
   priority-flow-control on
   priority-flow-control priority 4 no-drop
   !
   uc-tx-queue 3
      no priority
      bandwidth percent 40
      random-detect ecn minimum-threshold 100 kbytes maximum-threshold 1500000 bytes
   !
   uc-tx-queue 6
      no priority
!
"""
    assert mismatches(text, ports=['Ethernet1/1']) == [
        'leaf1: Ethernet1/1: trust is cos, expected dscp',
        'leaf1: Ethernet1/1: PFC priorities is 4, expected 3',
        'leaf1: Ethernet1/1: ECN minimum threshold (bytes) on traffic class 3 is 100000, expected 150000',
        'leaf1: Ethernet1/1: ECN marking probability (%) on traffic class 3 is missing, expected 100',
        'leaf1: Ethernet1/1: traffic class 0 scheduling is strict, expected DWRR 50%',
        'leaf1: Ethernet1/1: traffic class 3 scheduling is DWRR 40%, expected DWRR 50%',
        'leaf1: Ethernet1/1: traffic class 6 scheduling is DWRR, expected strict',
        'leaf1: Ethernet1/1: MTU is 9000, expected 9214',
    ]


def test_ecn_off_and_thresholds_in_other_units():
    without = re.sub(r'random-detect ecn minimum-threshold .*', 'random-detect ecn count', PORT_TEXT)
    assert mismatches(without, ports=['Ethernet1/1']) == [
        'leaf1: Ethernet1/1: ECN on traffic class 3 is off, expected on']
    segments = PORT_TEXT.replace('150000 bytes', '100 segments').replace('1500000 bytes', '1000 segments')
    assert mismatches(segments, ports=['Ethernet1/1']) == [
        'leaf1: Ethernet1/1: ECN minimum threshold (bytes) on traffic class 3 is 100 segments, expected 150000',
        'leaf1: Ethernet1/1: ECN maximum threshold (bytes) on traffic class 3 is 1000 segments, expected 1500000']
    units = PORT_TEXT.replace('150000 bytes', '150 kbytes').replace('1500000 bytes', '1 mbytes')
    assert mismatches(units, ports=['Ethernet1/1']) == [
        'leaf1: Ethernet1/1: ECN maximum threshold (bytes) on traffic class 3 is 1000000, expected 1500000']


def test_pfc_on_without_no_drop_and_no_drop_without_pfc_on():
    no_drop_only = PORT_TEXT.replace('   priority-flow-control on\n', '')
    assert mismatches(no_drop_only, ports=['Ethernet1/1']) == ['leaf1: Ethernet1/1: PFC priorities is none, expected 3']
    on_only = PORT_TEXT.replace('   priority-flow-control priority 3 no-drop\n', '')
    assert mismatches(on_only, ports=['Ethernet1/1']) == ['leaf1: Ethernet1/1: PFC priorities is none, expected 3']


def test_a_port_missing_from_the_configuration_is_named_once(running):
    assert mismatches(running('applied'), ports=['Ethernet1/1', 'Ethernet9/1']) == [
        'leaf1: Ethernet9/1: port is missing, expected present']


def test_sections_read_one_by_one_compare_as_the_whole_configuration(running):
    whole = running('applied')
    sections = [section for section in whole.split('\n!\n') if section.startswith(('qos map', 'interface Ethernet'))]
    assert mismatches('\n!\n'.join(sections)) == []
    assert mismatches('\n!\n'.join(sections[1:])) == []   # no qos map line: all defaults


def test_dscp_map_lines_list_several_values_and_override_the_default():
    assert eos.settings('qos map dscp 24 25 26 27 to traffic-class 1\nqos map dscp 48 to traffic-class 6\n')['dscp'] == \
        {24: 1, 25: 1, 26: 1, 27: 1, 48: 6}
    assert mismatches('qos map dscp 26 48 to traffic-class 5\n' + PORT_TEXT, ports=['Ethernet1/1']) == [
        'leaf1: global: DSCP 26 traffic class is 5, expected 3', 'leaf1: global: DSCP 48 traffic class is 5, expected 6']


@pytest.mark.parametrize('dscp, tc', [(0, 1), (7, 1), (8, 0), (15, 0), (16, 2), (26, 3), (46, 5), (48, 6), (63, 7)])
def test_eos_default_dscp_map(dscp, tc):
    assert eos.DEFAULT_DSCP_TC[dscp] == tc


def test_tx_queue_platforms_read_their_own_keyword(running):
    result = mismatches(running('applied'), queue='tx-queue')
    assert 'leaf1: Ethernet1/1: traffic class 3 scheduling is strict, expected DWRR 50%' in result
    assert eos.queue_keyword(rendered(queue='tx-queue')['blocks']) == 'tx-queue'
    assert mismatches(PORT_TEXT.replace('uc-tx-queue', 'tx-queue'), ports=['Ethernet1/1'], queue='tx-queue') == []


@pytest.mark.parametrize('name, canonical', [
    ('Et1/1', 'Ethernet1/1'), ('eth2/1', 'Ethernet2/1'), ('Ethernet3/1/1', 'Ethernet3/1/1'), ('po10', 'Port-Channel10'),
    ('Port-Channel10', 'Port-Channel10'), ('swp1', 'swp1'),
])
def test_interface_names_as_eos_prints_them(name, canonical):
    assert eos.canonical_interface(name) == canonical


def test_abbreviated_ports_are_read_under_the_names_eos_prints(running):
    result = eos.read_back('leaf1', rendered(ports=['Et1/1', 'et2/1']), running('applied'))
    assert result['mismatches'] == [] and sorted(result['state']['ports']) == ['Et1/1', 'et2/1']


def test_parse_config_nests_by_indentation_and_drops_comments():
    tree = eos.parse_config('! Command: show running-config\ninterface Ethernet1\n   mtu 9214\n   !\n   uc-tx-queue 3\n'
                            '      !! a comment\n      no priority\n!\nend\n')
    assert tree == [('interface Ethernet1', [('mtu 9214', []), ('uc-tx-queue 3', [('no priority', [])])])]


@pytest.mark.parametrize('bad_running, bad_rendered', [(None, None), ({'a': 1}, None), ('', {}), ('', {'intent': {}})])
def test_wrong_input_is_a_type_error(bad_running, bad_rendered):
    with pytest.raises(TypeError):
        eos.read_back('leaf1', rendered() if bad_rendered is None else bad_rendered, bad_running)
