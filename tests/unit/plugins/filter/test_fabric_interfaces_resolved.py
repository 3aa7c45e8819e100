# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""fabric_interfaces_resolved filter: registered, output that is not ip's JSON as a filter error."""
from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.hpcfabric.cluster.plugins.filter.fabric_interfaces_resolved import FilterModule

fabric_interfaces_resolved = FilterModule().filters()['fabric_interfaces_resolved']


def test_filter_is_registered_under_its_file_name():
    assert list(FilterModule().filters()) == ['fabric_interfaces_resolved']


def test_resolves_by_mac(fixture_text):
    resolved = fabric_interfaces_resolved([{'mac': '06:D4:6E:28:2B:B9', 'address': '10.100.0.11/24'}],
                                          fixture_text('ip_link', 'devhost_veth.json'), 9000)
    assert [(i['name'], i['mtu']) for i in resolved['interfaces']] == [('veth35979a5e', 9000)]
    assert resolved['missing'] == []


def test_text_output_is_a_filter_error():
    with pytest.raises(AnsibleFilterError, match='^fabric_interfaces_resolved: ip -json link show printed no JSON'):
        fabric_interfaces_resolved([], '1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536', 9000)
