# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The roce_qos_policy filter: resolved defaults, and errors Ansible shows with the variable named."""
from __future__ import annotations
import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.hpcfabric.cluster.plugins.filter.roce_qos_policy import FilterModule

roce_qos_policy = FilterModule().filters()['roce_qos_policy']


def test_registered_under_its_file_name():
    assert list(FilterModule().filters()) == ['roce_qos_policy']


def test_empty_override_gives_the_default_policy():
    policy = roce_qos_policy({})
    assert policy['roce'] == {'dscp': 26, 'priority': 3}
    assert policy['pfc'] == {'priorities': [3]}


def test_invalid_policy_fails_with_the_variable_path():
    with pytest.raises(AnsibleFilterError) as error:
        roce_qos_policy({'roce': {'priority': 2}, 'ets': {'bandwidth_percent': [50, 0, 50, 0, 0, 0, 0, 0]}})
    assert str(error.value).startswith('roce_qos_policy: invalid RoCE QoS policy: roce_qos_policy.roce.priority: RoCE DSCP 26 maps to priority 2, '
                                       'which has no PFC (roce_qos_policy.pfc.priorities: [3])')
