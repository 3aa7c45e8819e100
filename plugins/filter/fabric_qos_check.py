# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The fabric_qos_check filter: the hosts' and the switches' lossless RoCE read-backs, compared with each other."""
from __future__ import annotations

from ansible_collections.hpcfabric.cluster.plugins.module_utils.fabric_qos import check_fabric
from ansible_collections.hpcfabric.cluster.plugins.plugin_utils.filters import as_filter

DOCUMENTATION = r"""
name: fabric_qos_check
short_description: Compare what the hosts' RoCE NICs and the switches' ports hold, read back in this run
version_added: 0.1.0
author: hpcfabric maintainers (@hpcfabric)
description:
  - Reads the facts the C(roce_qos) role (C(roce_qos_readback)) and the C(switch_qos) role (C(switch_qos_readback))
    publish after reading the NICs and switches back, and compares the two sides as the traffic sees them - every
    device maps each RoCE and CNP DSCP of the policy to the same priority, pauses the same (lossless) priorities, and
    every switch port carries the largest frame a host sends (the host MTU plus O(overhead) bytes).
  - Hosts and switches without a read-back in this run are left out and named in the summary; hosts without a RoCE
    NIC (the lab) contribute their MTU only.
  - Linear in the number of hosts and ports; call it once per play.
options:
  _input:
    description: The C(hostvars) mapping.
    type: dict
    required: true
  nodes:
    description: Inventory names of the compute nodes.
    type: list
    elements: str
    required: true
  switches:
    description: Inventory names of the fabric switches.
    type: list
    elements: str
    required: true
  overhead:
    description: Bytes a host's MTU-sized packet gains on the wire (Ethernet header, an 802.1Q tag, FCS).
    type: int
    default: 22
"""

EXAMPLES = r"""
- name: Hosts and switches agree on DSCP to priority, lossless priorities and MTU
  ansible.builtin.assert:
    that: __fabric.problems | length == 0
    fail_msg: "{{ __fabric.problems | join('; ') }}"
    success_msg: "{{ __fabric.summary }}"
  vars:
    __fabric: "{{ hostvars | hpcfabric.cluster.fabric_qos_check(groups['gpu_nodes'], groups['fabric_switches']) }}"
"""

RETURN = r"""
_value:
  description: The comparison.
  type: dict
  contains:
    problems:
      description:
        - "One message per disagreement naming the devices on each side, the commonest value first, e.g.
          C(DSCP 26 maps to different priorities: 3 on node01 mlx5_0/ens1f0np0, leaf01 swp1; 1 on leaf02 Ethernet8)."
      type: list
      elements: str
    summary:
      description: What was compared, and what was not read back in this run.
      type: str
"""


class FilterModule:
    """hpcfabric.cluster fabric-wide QoS read-back check."""

    def filters(self):
        return {'fabric_qos_check': as_filter('fabric_qos_check', check_fabric)}
