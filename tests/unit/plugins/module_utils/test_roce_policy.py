# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The shared RoCE policy: defaults, merging, and validation messages that name the variable."""
from __future__ import annotations
import pytest

from ansible_collections.hpcfabric.cluster.plugins.module_utils import roce_policy
from ansible_collections.hpcfabric.cluster.plugins.module_utils.roce_policy import DEFAULT_POLICY, PolicyError, resolve_policy


def errors(overrides):
    with pytest.raises(PolicyError) as error:
        resolve_policy(overrides)
    return error.value.errors


def test_defaults_are_the_lossless_roce_profile():
    policy = resolve_policy({})
    assert policy == DEFAULT_POLICY and policy is not DEFAULT_POLICY
    assert policy['roce'] == {'dscp': 26, 'priority': 3}
    assert policy['cnp'] == {'dscp': 48, 'priority': 6}
    assert policy['pfc']['priorities'] == [3]
    assert policy['ecn']['min_threshold_bytes'] == 150000
    assert policy['mtu'] == {'host': 9000, 'switch': 9214}
    assert resolve_policy(None) == DEFAULT_POLICY


def test_partial_override_merges_and_leaves_the_defaults_alone():
    policy = resolve_policy({'ecn': {'min_threshold_bytes': 200000}, 'mtu': {'switch': 9216}})
    assert policy['ecn'] == {'min_threshold_bytes': 200000, 'max_threshold_bytes': 1500000, 'probability_percent': 100}
    assert policy['mtu'] == {'host': 9000, 'switch': 9216}
    policy['pfc']['priorities'].append(5)
    assert DEFAULT_POLICY['pfc']['priorities'] == [3]


def test_lists_replace_the_default():
    policy = resolve_policy({'roce': {'priority': 4}, 'pfc': {'priorities': [4]},
                             'ets': {'bandwidth_percent': [40, 0, 0, 0, 60, 0, 0, 0]}})
    assert policy['pfc']['priorities'] == [4]
    assert roce_policy.dscp_to_priority(policy) == [(26, 4), (48, 6)]
    assert roce_policy.ets_classes(policy) == [(0, 40), (4, 60)]


def test_roce_priority_without_pfc_is_rejected():
    assert errors({'roce': {'priority': 4}, 'ets': {'bandwidth_percent': [50, 0, 0, 0, 50, 0, 0, 0]}}) == [
        'roce_qos_policy.roce.priority: RoCE DSCP 26 maps to priority 4, which has no PFC (roce_qos_policy.pfc.priorities: [3]), '
        'so RoCE traffic would be dropped under congestion']


def test_cnp_priority_must_not_be_paused():
    assert errors({'pfc': {'priorities': [3, 6]}}) == [
        'roce_qos_policy.cnp.priority: 6 is a PFC priority (roce_qos_policy.pfc.priorities: [3, 6]), '
        'but congestion notifications must not be paused']


@pytest.mark.parametrize('overrides, message', [
    ({'roce': {'dscp': 64}}, 'roce_qos_policy.roce.dscp: DSCP 64 is outside 0-63'),
    ({'cnp': {'dscp': -1}}, 'roce_qos_policy.cnp.dscp: DSCP -1 is outside 0-63'),
    ({'cnp': {'dscp': 26}}, 'roce_qos_policy.cnp.dscp: 26 is also the RoCE DSCP (roce_qos_policy.roce.dscp), and CNPs need their own code point'),
    ({'cnp': {'priority': 8}, 'ets': {'strict_classes': []}, 'pfc': {'priorities': [3]}},
     'roce_qos_policy.cnp.priority: priority 8 is outside 0-7'),
    ({'pfc': {'priorities': [3, 3]}}, 'roce_qos_policy.pfc.priorities: [3, 3] lists a priority twice'),
    ({'pfc': {'priorities': []}}, 'roce_qos_policy.pfc.priorities: must list at least the RoCE priority 3'),
    ({'ets': {'bandwidth_percent': [50, 0, 0, 40, 0, 0, 0, 0]}}, 'roce_qos_policy.ets.bandwidth_percent: shares sum to 90, must be 100'),
    ({'ets': {'bandwidth_percent': [50, 0, 0, 50]}},
     'roce_qos_policy.ets.bandwidth_percent: needs one share per traffic class 0-7 (8 values), got 4'),
    ({'ets': {'bandwidth_percent': [40, 0, 0, 50, 0, 0, 10, 0]}},
     'roce_qos_policy.ets.bandwidth_percent[6]: traffic class 6 is strict (roce_qos_policy.ets.strict_classes), its share must be 0'),
    ({'ets': {'strict_classes': []}},
     'roce_qos_policy.ets.bandwidth_percent[6]: CNP traffic class 6 is neither strict (roce_qos_policy.ets.strict_classes) nor given a share'),
    ({'ecn': {'max_threshold_bytes': 150000}},
     'roce_qos_policy.ecn.max_threshold_bytes: 150000 must be above roce_qos_policy.ecn.min_threshold_bytes (150000)'),
    ({'ecn': {'probability_percent': 0}}, 'roce_qos_policy.ecn.probability_percent: probability 0 is outside 1-100'),
    ({'mtu': {'host': 9500}}, 'roce_qos_policy.mtu.host: MTU 9500 is outside 1500-9216'),
    ({'mtu': {'switch': 1500}},
     'roce_qos_policy.mtu.switch: 1500 is below roce_qos_policy.mtu.host (9000), so switch ports would drop full-size host frames'),
    ({'trust': 'pcp'}, "roce_qos_policy.trust: 'pcp' is not supported (choices: dscp)"),
])
def test_each_rule_names_the_variable(overrides, message):
    assert message in errors(overrides)


@pytest.mark.parametrize('overrides, message', [
    ({'roce': {'dscp': '26'}}, "roce_qos_policy.roce.dscp: must be an integer, got '26'"),
    ({'roce': {'priority': True}}, 'roce_qos_policy.roce.priority: must be an integer, got True'),
    ({'pfc': {'priorities': 3}}, 'roce_qos_policy.pfc.priorities: must be a list of integers, got 3'),
    ({'rocee': {'dscp': 26}}, 'roce_qos_policy.rocee: unknown key (known: cnp, ecn, ets, mtu, pfc, roce, trust)'),
    ({'roce': {'tos': 106}}, 'roce_qos_policy.roce.tos: unknown key (known: dscp, priority)'),
    ({'roce': 26}, 'roce_qos_policy.roce: must be a dictionary, got int'),
    ([26], 'roce_qos_policy: must be a dictionary, got list'),
])
def test_shape_errors(overrides, message):
    assert errors(overrides) == [message]


def test_all_problems_are_reported_at_once():
    found = errors({'roce': {'dscp': 70, 'priority': 5}, 'mtu': {'host': 100}})
    assert [message.split(':')[0] for message in found] == [
        'roce_qos_policy.roce.dscp', 'roce_qos_policy.roce.priority', 'roce_qos_policy.ets.bandwidth_percent[5]', 'roce_qos_policy.mtu.host']
    assert str(PolicyError(found)) == '; '.join(found) and str(PolicyError(found)).count('; ') == 3
