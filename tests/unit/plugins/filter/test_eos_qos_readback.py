# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The eos_qos_readback filter: the read-back, and a message naming the filter for wrong input."""
from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.hpcfabric.cluster.plugins.filter.eos_qos_readback import FilterModule
from ansible_collections.hpcfabric.cluster.plugins.module_utils.switch_qos_render import render

FILTER = FilterModule().filters()['eos_qos_readback']


def test_filter_returns_state_and_mismatches():
    rendered = render('eos', {}, ['Ethernet1/1'])
    result = FILTER(rendered['text'], rendered, 'leaf1')
    assert result['mismatches'] == [] and result['state']['ports']['Ethernet1/1']['mtu'] == 9214
    assert 'leaf1: Ethernet1/1: MTU is 1500, expected 9214' in FILTER(
        'interface Ethernet1/1\n   mtu 1500\n', rendered, 'leaf1')['mismatches']


@pytest.mark.parametrize('running, rendered, message', [
    (['show running-config'], None, 'the running configuration must be the text'),
    ('', {'blocks': []}, 'rendered must be what roce_switch_config renders for eos'),
])
def test_wrong_input_names_the_filter(running, rendered, message):
    rendered = render('eos', {}, ['Ethernet1/1']) if rendered is None else rendered
    with pytest.raises(AnsibleFilterError, match='^eos_qos_readback: ' + message):
        FILTER(running, rendered, 'leaf1')
