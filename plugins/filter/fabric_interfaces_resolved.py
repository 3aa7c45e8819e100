# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The fabric_interfaces_resolved filter: a host's fabric interfaces against the links it has."""
from __future__ import annotations

DOCUMENTATION = r'''
name: fabric_interfaces_resolved
short_description: Resolve a host's fabric interfaces to kernel names from its C(ip -json link show) output
version_added: 0.2.0
author: hpcfabric maintainers (@hpcfabric)
description:
  - Gives every entry of C(fabric_network_interfaces) its kernel name - its own C(name), else the name of the link
    whose MAC is its C(mac) (case-insensitive), by the rule of the cluster model
    (M(hpcfabric.cluster.cluster_model)) - its MTU (its own, else O(mtu)) and its routes (none when not set), and
    lists the entries whose interface the host lacks.
  - Also returns the netplan document of those interfaces, as data for a YAML serializer.
  - Fails when O(links) is not the JSON list C(ip -json link show) prints.
positional: _input, links, mtu
options:
  _input:
    description: C(fabric_network_interfaces) of the host.
    type: list
    elements: dict
    required: true
  links:
    description: The standard output of C(ip -json link show) on the host.
    type: str
    required: true
  mtu:
    description: MTU of entries without their own (C(fabric_network_mtu)).
    type: int
    required: true
'''

EXAMPLES = r'''
- name: List this host's links
  ansible.builtin.command: ip -json link show
  register: ip_link
  changed_when: false

- name: Every fabric interface exists on this host
  ansible.builtin.assert:
    that: resolved.missing | length == 0
    fail_msg: "no such interface {{ resolved.missing | join(', ') }} (this host has {{ resolved.present | join(', ') }})"
  vars:
    resolved: "{{ fabric_network_interfaces | hpcfabric.cluster.fabric_interfaces_resolved(ip_link.stdout, 9000) }}"

# [{'mac': '0C:42:A1:00:00:01', 'address': '10.100.0.11/24'}] on a host with ens1f0np0 of MAC 0c:42:a1:00:00:01
# => {'interfaces': [{'mac': '0C:42:A1:00:00:01', 'address': '10.100.0.11/24', 'name': 'ens1f0np0', 'mtu': 9000,
#                     'routes': []}],
#     'missing': [], 'present': ['lo', 'eth0', 'ens1f0np0']}
'''

RETURN = r'''
_value:
  description: The resolved interfaces, the missing ones and the host's links.
  type: dict
  contains:
    interfaces:
      description: The input's entries with C(name) (null where unresolved), C(mtu) and C(routes) set.
      type: list
      elements: dict
    missing:
      description: Per entry whose interface the host lacks, its C(name), else its C(mac), in list order.
      type: list
      elements: str
    present:
      description: The host's link names, in the order ip lists them.
      type: list
      elements: str
    netplan:
      description: The netplan document of the interfaces the host has (static address, MTU, matched by MAC where
        given), as data for C(to_nice_yaml).
      type: dict
'''

from ansible_collections.hpcfabric.cluster.plugins.module_utils.fabric_links import resolve_interfaces
from ansible_collections.hpcfabric.cluster.plugins.plugin_utils.filters import as_filter


class FilterModule:
    """The fabric_network role's filter."""

    def filters(self):
        return {'fabric_interfaces_resolved': as_filter('fabric_interfaces_resolved', resolve_interfaces)}
