# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
from __future__ import annotations

DOCUMENTATION = r"""
name: roce_switch_config
short_description: Render the lossless RoCE policy for a Cumulus, SONiC or Arista EOS switch
version_added: 0.1.0
author: hpcfabric maintainers (@hpcfabric)
description:
  - Renders the same policy the hosts use (see the P(hpcfabric.cluster.roce_qos_policy#filter) filter) for one switch
    and its RoCE-facing ports, as pure data, so the C(switch_qos) role only has to push it.
  - C(cumulus) gives the NVUE configuration tree (the REST API PATCH body for C(/nvue_v1/)) and the equivalent
    C(nv set) commands (RoCE lossless mode, DSCP trust and map, PFC, ECN, ETS, port MTU).
  - C(sonic) gives a CONFIG_DB fragment (DSCP_TO_TC_MAP overriding the default DSCP 26 to TC 1, TC_TO_PRIORITY_GROUP_MAP,
    PORT_QOS_MAP pfc_enable, an ECN WRED_PROFILE, SCHEDULER, QUEUE bindings, PORT mtu).
  - C(eos) gives C(arista.eos.eos_config) blocks (C(parents) and C(lines)) and the same configuration as CLI text.
  - "With O(running), the switch's current configuration, it also lists the differences and, for SONiC, the JSON patch
    for C(config apply-patch), and reads the configuration back - what the switch holds in a vendor-neutral form and
    every setting that differs from the policy as one line C(<switch>: <port or global>: <setting> is <found>, expected <wanted>)."
  - Fails with a message naming the variable when the policy or the port list is invalid.
options:
  _input:
    description: The policy overrides (the C(roce_qos_policy) variable); C({}) gives the defaults.
    type: dict
    required: true
  platform:
    description: The switch operating system.
    type: str
    choices: [cumulus, sonic, eos]
    required: true
  ports:
    description: The switch ports that carry RoCE traffic (host-facing and fabric links).
    type: list
    elements: str
    required: true
  running:
    description:
      - The switch's current configuration, parsed. For C(cumulus) the NVUE tree from C(GET /nvue_v1/?rev=applied),
        for C(sonic) the CONFIG_DB JSON from C(show runningconfiguration all). Not used for C(eos).
    type: dict
  switch:
    description: The switch's name in the read-back lines (the inventory hostname).
    type: str
    default: switch
  eos_queue:
    description: The EOS transmit queue keyword of the platform (C(uc-tx-queue) on 7050X/7060X/7300X, C(tx-queue) on 7280R/7500R).
    type: str
    choices: [uc-tx-queue, tx-queue]
    default: uc-tx-queue
"""

EXAMPLES = r"""
- name: Render the policy for this switch
  ansible.builtin.set_fact:
    __switch_qos_config: "{{ roce_qos_policy | hpcfabric.cluster.roce_switch_config(switch_qos_platform, switch_qos_ports) }}"

- name: Compute the SONiC JSON patch against the running CONFIG_DB and read it back
  ansible.builtin.set_fact:
    __switch_qos_sonic: >-
      {{ roce_qos_policy | hpcfabric.cluster.roce_switch_config('sonic', ['Ethernet0', 'Ethernet8'],
                                                               running=__running.stdout | from_json,
                                                               switch=inventory_hostname) }}

- name: Fail naming every setting that differs
  ansible.builtin.assert:
    that: __switch_qos_sonic.mismatches | length == 0
    fail_msg: "{{ __switch_qos_sonic.mismatches | join('; ') }}"
"""

RETURN = r"""
_value:
  description: The rendered configuration.
  type: dict
  contains:
    platform:
      description: The platform rendered for.
      type: str
      sample: sonic
    format:
      description: What O(text) holds (C(nvue-commands), C(config_db-json) or C(eos-cli)).
      type: str
    extension:
      description: File name extension for O(text) (C(nv), C(json), C(cfg)).
      type: str
    text:
      description: The configuration to review, as written by the render-only mode of the C(switch_qos) role.
      type: str
    intent:
      description: Vendor-neutral summary (DSCP map, PFC priorities, ECN, ETS, MTU, ports) every render implements.
      type: dict
    body:
      description: NVUE REST API PATCH body (cumulus only).
      type: dict
    commands:
      description: The C(nv set) commands (cumulus only).
      type: list
      elements: str
    config_db:
      description: CONFIG_DB fragment (sonic only).
      type: dict
    blocks:
      description: C(arista.eos.eos_config) blocks, each with C(parents) and C(lines) (eos only).
      type: list
      elements: dict
    changes:
      description: Leaves of the rendered configuration that O(running) lacks or holds with another value (C(path), C(current), C(desired)).
      type: list
      elements: dict
    patch:
      description: With O(running) - RFC 6902 operations for SONiC C(config apply-patch), the NVUE body to send for Cumulus (empty when nothing differs).
      type: raw
    state:
      description:
        - With O(running) - what the switch holds, vendor-neutral - C(global) (the switch-wide profiles or maps the role
          writes) and C(ports) (what each port uses through its own profile or binding), each with C(trust), C(dscp_map)
          (DSCP to traffic class), C(pfc) (lossless priorities), C(ecn) (per traffic class), C(scheduler) and C(mtu)
          where the platform holds them at that level.
      type: dict
    mismatches:
      description:
        - "With O(running) - every setting that differs from the policy, as
          C(<switch>: <port or global>: <setting> is <found>, expected <wanted>); empty when the switch matches."
        - Also names what the role does not write but changes the result (a port bound to another PFC profile or DSCP
          map, an extra lossless priority).
      type: list
      elements: str
      sample: ["leaf02: Ethernet8: PFC priorities is none, expected 3", "leaf02: global: DSCP 26 traffic class is 1, expected 3"]
"""

from ansible_collections.hpcfabric.cluster.plugins.module_utils.roce_policy import PolicyError
from ansible_collections.hpcfabric.cluster.plugins.module_utils.switch_qos_render import render
from ansible_collections.hpcfabric.cluster.plugins.plugin_utils.filters import as_filter


def roce_switch_config(policy, platform, ports, running=None, eos_queue='uc-tx-queue', switch='switch'):
    """Render ``policy`` for ``platform`` on ``ports``; see DOCUMENTATION."""
    try:
        return render(platform, policy, ports, running=running, eos_queue=eos_queue, switch=switch)
    except PolicyError as exc:
        raise ValueError('cannot render the RoCE QoS policy for %s: %s' % (platform, exc)) from exc


class FilterModule(object):
    """Switch renderers of the lossless RoCE policy."""

    def filters(self):
        return {'roce_switch_config': as_filter('roce_switch_config', roce_switch_config)}
