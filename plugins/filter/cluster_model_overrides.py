# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The cluster_model_overrides filter: model inputs set as play or role variables, which the model cannot see."""

from __future__ import annotations

DOCUMENTATION = r'''
name: cluster_model_overrides
short_description: Name the cluster model's inputs that a play or role sets differently from the host's variables
version_added: 0.2.0
author: hpcfabric maintainers (@hpcfabric)
description:
  - The cluster model (M(hpcfabric.cluster.cluster_model)) reads each node's variables from C(hostvars) - inventory,
    extra vars, facts and C(set_fact) - so it is one answer for every role and every node. A play's C(vars) or a
    role's parameters are not host variables; a model input set there would be silently ignored.
  - Given the values the inputs have where a role runs and the host's own variables, returns the names that differ,
    so the C(hpcfabric.cluster.cluster_model) role can refuse them, naming each.
  - The inputs are C(fabric_network_interfaces), C(fabric_network_rails), C(fabric_network_mtu), C(mpi_cuda),
    C(mpi_ucx_tls), C(mpi_ucx_net_devices), C(mpi_env_extra), C(mpi_hostfile_slots), C(roce_qos_policy).
positional: _input, names, host_variables
options:
  _input:
    description: The inputs' values where the role runs, in the order of O(names), as
      C(lookup('ansible.builtin.vars', *names, default='__unset__')) returns them (C(__unset__) where unset).
    type: list
    elements: raw
    required: true
  names:
    description: The names of the values in O(_input).
    type: list
    elements: str
    required: true
  host_variables:
    description: The host's own variables, C(hostvars[inventory_hostname]).
    type: dict
    required: true
'''

EXAMPLES = r'''
- name: The model's inputs are host variables
  ansible.builtin.assert:
    that: __overridden | length == 0
    fail_msg: "{{ __overridden | join(', ') }} set as play or role variables on {{ inventory_hostname }}"
  vars:
    __names: [mpi_ucx_tls, mpi_cuda]
    __overridden: >-
      {{ lookup('ansible.builtin.vars', *__names, default='__unset__')
         | hpcfabric.cluster.cluster_model_overrides(__names, hostvars[inventory_hostname]) }}
'''

RETURN = r'''
_value:
  description: The names whose value where the role runs differs from the host's own; empty when none does.
  type: list
  elements: str
'''

from ansible_collections.hpcfabric.cluster.plugins.module_utils.cluster_model import overridden_inputs
from ansible_collections.hpcfabric.cluster.plugins.plugin_utils.filters import as_filter

UNSET = '__unset__'


def cluster_model_overrides(values, names, host_variables):
    """See DOCUMENTATION."""
    if not isinstance(values, list) or not isinstance(names, list) or len(values) != len(names):
        raise ValueError('values and names must be lists of the same length')
    return overridden_inputs(dict((n, None if v == UNSET else v) for n, v in zip(names, values)), host_variables)


class FilterModule(object):
    """hpcfabric.cluster cluster model overrides filter."""

    def filters(self):
        return {'cluster_model_overrides': as_filter('cluster_model_overrides', cluster_model_overrides)}
