# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The qos_plan filter: one lossless RoCE policy across nodes and switches, checked once."""
from __future__ import annotations

from ansible_collections.hpcfabric.cluster.plugins.module_utils.qos_plan import check_qos
from ansible_collections.hpcfabric.cluster.plugins.plugin_utils.filters import as_filter

DOCUMENTATION = r"""
name: qos_plan
short_description: Check that compute nodes and fabric switches carry one lossless RoCE policy
version_added: 0.1.0
author: hpcfabric maintainers (@hpcfabric)
description:
  - Resolves every node's C(roce_qos_policy) and every switch's C(switch_qos_policy) (which defaults to its
    C(roce_qos_policy)) over the collection's default policy, and returns the problems - invalid policies, nodes and
    switches whose trust mode, RoCE or CNP DSCP/priority or PFC priorities differ, fabric MTUs above the switch port
    MTU, and C(fabric_network_mtu) different from the policy's host MTU.
  - Linear in the number of hosts; call it once per play.
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
"""

EXAMPLES = r"""
- name: One RoCE policy on both ends of every link
  ansible.builtin.assert:
    that: __problems | length == 0
    fail_msg: "{{ __problems | join('; ') }}"
  vars:
    __problems: "{{ hostvars | hpcfabric.cluster.qos_plan(groups['gpu_nodes'], groups['fabric_switches'] | default([])) }}"
"""

RETURN = r"""
_value:
  description: One message per problem, naming the variable and the host; empty when nodes and switches agree.
  type: list
  elements: str
"""


class FilterModule:
    """hpcfabric.cluster QoS plan filter."""

    def filters(self):
        return {'qos_plan': as_filter('qos_plan', check_qos)}
