# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The roce_switch_config filter: what the switch_qos role templates get."""
from __future__ import annotations
import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.hpcfabric.cluster.plugins.filter.roce_switch_config import FilterModule

roce_switch_config = FilterModule().filters()['roce_switch_config']


def test_registered_under_its_file_name():
    assert list(FilterModule().filters()) == ['roce_switch_config']


@pytest.mark.parametrize('platform, extension, first_line', [
    ('cumulus', 'nv', 'nv set qos roce enable on'),
    ('sonic', 'json', '{'),
    ('eos', 'cfg', 'qos map dscp 26 to traffic-class 3'),
])
def test_each_platform_renders_text_to_write(platform, extension, first_line):
    result = roce_switch_config({}, platform, ['p1'])
    assert result['extension'] == extension
    assert result['text'].splitlines()[0] == first_line
    assert result['intent']['pfc_priorities'] == [3] and result['intent']['ports'] == ['p1']


def test_running_config_gives_the_sonic_patch():
    result = roce_switch_config({}, 'sonic', ['Ethernet0'], running={'PORT': {'Ethernet0': {'mtu': '9100'}}})
    assert {'op': 'replace', 'path': '/PORT/Ethernet0/mtu', 'value': '9214'} in result['patch']


def test_eos_queue_keyword():
    blocks = roce_switch_config({}, 'eos', ['Ethernet1'], eos_queue='tx-queue')['blocks']
    assert [block['parents'][-1] for block in blocks[2:]] == ['tx-queue 0', 'tx-queue 3', 'tx-queue 6']


@pytest.mark.parametrize('args, message', [
    (({'pfc': {'priorities': [4]}}, 'sonic', ['Ethernet0']),
     'cannot render the RoCE QoS policy for sonic: roce_qos_policy.roce.priority: RoCE DSCP 26 maps to priority 3, which has no PFC'),
    (({}, 'eos', []), 'cannot render the RoCE QoS policy for eos: switch_qos_ports: must be a non-empty list'),
    (({}, 'eos', ['Ethernet1'], {'PORT': {}}), 'cannot render the RoCE QoS policy for eos: running: not used for eos'),
])
def test_errors_name_the_variable(args, message):
    with pytest.raises(AnsibleFilterError) as error:
        roce_switch_config(*args)
    assert str(error.value).startswith('roce_switch_config: ' + message)


def test_running_config_is_read_back_naming_the_switch():
    result = roce_switch_config({}, 'sonic', ['Ethernet0'], running={'PORT': {'Ethernet0': {'mtu': '9100'}}},
                                switch='leaf02')
    assert 'leaf02: Ethernet0: MTU is 9100, expected 9214' in result['mismatches']
    assert result['state']['ports']['Ethernet0']['mtu'] == 9100
