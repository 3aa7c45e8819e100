# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
from __future__ import annotations

DOCUMENTATION = r"""
name: roce_qos_policy
short_description: Resolve and validate the lossless RoCE policy shared by hosts and switches
version_added: 0.1.0
author: hpcfabric maintainers (@hpcfabric)
description:
  - Merges a (partial) C(roce_qos_policy) over the collection's default policy and validates the result, so both the
    C(roce_qos) and the C(switch_qos) role work from the same complete policy.
  - Dictionaries merge key by key; lists and values replace the default.
  - Fails before anything is rendered when the policy cannot work, naming the variable path, for example a RoCE DSCP
    that maps to a priority without PFC (C(roce_qos_policy.roce.priority)), a CNP priority that is a PFC priority,
    DSCP outside 0-63, priorities outside 0-7, ETS shares that do not sum to 100 or a switch MTU below the host MTU.
  - The defaults (RoCE DSCP 26 on lossless priority 3, CNP DSCP 48 on strict priority 6, ECN, ETS, MTU) are defined
    once, in C(plugins/module_utils/roce_policy.py); docs/roce_qos.md lists them. Priority N is carried by traffic class N.
options:
  _input:
    description: The policy overrides (the C(roce_qos_policy) variable); C({}) gives the defaults.
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Resolve the policy once, fail early when it cannot work
  ansible.builtin.set_fact:
    __roce_qos_policy: "{{ roce_qos_policy | hpcfabric.cluster.roce_qos_policy }}"

- name: RoCE on DSCP 24 and priority 4 (PFC and the ETS share move with it)
  ansible.builtin.debug:
    msg: >-
      {{ {'roce': {'dscp': 24, 'priority': 4}, 'pfc': {'priorities': [4]},
          'ets': {'bandwidth_percent': [50, 0, 0, 0, 50, 0, 0, 0]}} | hpcfabric.cluster.roce_qos_policy }}
"""

RETURN = r"""
_value:
  description: The complete policy.
  type: dict
  contains:
    trust:
      description: Priority trust mode of NICs and switch ports.
      type: str
      sample: dscp
    roce:
      description: DSCP and priority of RoCE traffic (keys C(dscp), C(priority)).
      type: dict
      sample: {dscp: 26, priority: 3}
    cnp:
      description: DSCP and priority of congestion notification packets (keys C(dscp), C(priority)).
      type: dict
      sample: {dscp: 48, priority: 6}
    pfc:
      description: Priorities with PFC (key C(priorities)).
      type: dict
      sample: {priorities: [3]}
    ecn:
      description: Switch ECN marking on the RoCE traffic class (C(min_threshold_bytes), C(max_threshold_bytes), C(probability_percent)).
      type: dict
      sample: {min_threshold_bytes: 150000, max_threshold_bytes: 1500000, probability_percent: 100}
    ets:
      description: ETS share per traffic class 0-7 (C(bandwidth_percent)) and strict classes (C(strict_classes)).
      type: dict
      sample: {bandwidth_percent: [50, 0, 0, 50, 0, 0, 0, 0], strict_classes: [6]}
    mtu:
      description: MTU of the host netdevs (C(host)) and of the switch ports (C(switch)).
      type: dict
      sample: {host: 9000, switch: 9214}
"""

from ansible_collections.hpcfabric.cluster.plugins.module_utils.roce_policy import PolicyError, resolve_policy
from ansible_collections.hpcfabric.cluster.plugins.plugin_utils.filters import as_filter


def roce_qos_policy(overrides):
    """Return the complete, validated RoCE policy for ``overrides``."""
    try:
        return resolve_policy(overrides)
    except PolicyError as exc:
        raise ValueError('invalid RoCE QoS policy: %s' % exc) from exc


class FilterModule(object):
    """The lossless RoCE policy filter."""

    def filters(self):
        return {'roce_qos_policy': as_filter('roce_qos_policy', roce_qos_policy)}
