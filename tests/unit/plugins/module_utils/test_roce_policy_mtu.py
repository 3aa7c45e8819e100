# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""One MTU range for the fabric's netdevs and the RoCE policy: 1500-9216, checked the same at both places."""
from __future__ import annotations

import pytest

from ansible_collections.hpcfabric.cluster.plugins.module_utils import fabric_plan
from ansible_collections.hpcfabric.cluster.plugins.module_utils.roce_policy import MTU_RANGE, PolicyError, resolve_policy

RAILS = [{'name': 'rail0', 'subnet': '10.78.0.0/24'}]


def interface_problems(mtu):
    hostvars = {'node01': {'fabric_network_interfaces': [{'name': 'fab0', 'address': '10.78.0.11/24', 'rail': 0}]}}
    return fabric_plan.check_plan(hostvars, ['node01'], RAILS, mtu)


def policy_problems(mtu):
    try:
        resolve_policy({'mtu': {'host': mtu, 'switch': max(mtu, 9216)}})
    except PolicyError as error:
        return error.errors
    return []


def test_the_range_is_ethernet_s_1500_to_the_switches_9216():
    assert MTU_RANGE == (1500, 9216)


@pytest.mark.parametrize('mtu, fits', [(1280, False), (1499, False), (1500, True), (4200, True), (9000, True),
                                       (9216, True), (9217, False)])
def test_the_fabric_and_the_policy_agree_on_every_mtu(mtu, fits):
    """IPv6's 1280 is refused at both places: a RoCE port below 1500 runs an IB MTU of 1024 or less."""
    assert (interface_problems(mtu) == []) is fits
    assert (policy_problems(mtu) == []) is fits
    if not fits:
        assert interface_problems(mtu) == ['fabric_network_interfaces[0].mtu on node01: %d is outside 1500-9216' % mtu]
        assert policy_problems(mtu)[0] == 'roce_qos_policy.mtu.host: MTU %d is outside 1500-9216' % mtu


def test_the_switch_end_has_the_same_range():
    with pytest.raises(PolicyError, match=r'roce_qos_policy.mtu.switch: MTU 9300 is outside 1500-9216'):
        resolve_policy({'mtu': {'switch': 9300}})
