# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
from __future__ import annotations

DOCUMENTATION = r"""
name: eos_qos_readback
short_description: Read an Arista EOS running configuration back against the rendered RoCE QoS policy
version_added: 0.1.0
author: hpcfabric maintainers (@hpcfabric)
description:
  - Reads the text of C(show running-config) (or of its sections) of an Arista EOS switch for the RoCE QoS settings
    the P(hpcfabric.cluster.roce_switch_config#filter) filter renders for C(eos) - the DSCP to traffic class map, and
    per port DSCP trust, PFC and its no-drop priorities, the scheduling, ETS share and ECN thresholds of each transmit
    queue, MTU - and compares them with the policy.
  - Returns what the switch holds in the vendor-neutral form the Cumulus and SONiC read-backs use (C(state)), and one
    line per setting that differs (C(mismatches)), worded as theirs.
  - What EOS leaves out of its running configuration is read as EOS's default (a DSCP without a C(qos map dscp) line
    is in its default traffic class, a queue without C(no priority) is strict priority, PFC is off without
    C(priority-flow-control on)); MTU, trust and ECN thresholds are C(missing) when their line is.
  - Thresholds compare by value (C(150 kbytes) is C(150000) bytes); interface names by EOS's own spelling (C(Et1/1) is
    C(Ethernet1/1)).
  - Nothing else of the configuration, and so none of its secrets, reaches the result.
options:
  _input:
    description: The text of C(show running-config) of the switch.
    type: str
    required: true
  rendered:
    description: What P(hpcfabric.cluster.roce_switch_config#filter) rendered for this switch (C(intent) and C(blocks)).
    type: dict
    required: true
  switch:
    description: The name the lines give the switch, usually C(inventory_hostname).
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Compare the running configuration with the policy
  ansible.builtin.set_fact:
    __switch_qos_compared: >-
      {{ __running.stdout[0] | hpcfabric.cluster.eos_qos_readback(__switch_qos_config, inventory_hostname) }}
"""

RETURN = r"""
_value:
  description: The read-back.
  type: dict
  contains:
    state:
      description:
        - What the switch holds, vendor-neutral - C(global) (the switch-wide DSCP map) and C(ports) (per port C(trust),
          C(dscp_map), C(pfc), C(ecn) and C(scheduler) per traffic class, C(mtu)); a port without a section is left out.
      type: dict
    mismatches:
      description:
        - 'Every setting that differs from the policy, as C(<switch>: <port or global>: <setting> is <found>, expected
          <wanted>); empty when the switch holds the policy.'
      type: list
      elements: str
      sample: ["leaf1: global: DSCP 26 traffic class is 1, expected 3", "leaf1: Ethernet2/1: PFC priorities is none, expected 3"]
"""

from ansible_collections.hpcfabric.cluster.plugins.module_utils.switch_qos_eos import read_back
from ansible_collections.hpcfabric.cluster.plugins.plugin_utils.filters import as_filter


def eos_qos_readback(running, rendered, switch):
    """See DOCUMENTATION."""
    return read_back(switch, rendered, running)


class FilterModule(object):
    """Read-back of the RoCE QoS policy on Arista EOS."""

    def filters(self):
        return {'eos_qos_readback': as_filter('eos_qos_readback', eos_qos_readback)}
