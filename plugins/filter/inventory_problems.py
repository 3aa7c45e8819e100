# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The inventory_problems filter: the whole of check_inventory.yml's checks, every host read once."""

from __future__ import annotations

DOCUMENTATION = r'''
name: inventory_problems
short_description: Check an inventory against the collection's roles, the cluster model and the RoCE policy
version_added: 0.2.0
author: hpcfabric maintainers (@hpcfabric)
description:
  - Reads, once per host, the variables the collection's roles declare in their argument specs (and
    C(ansible_host)), then checks them in three steps, each only when the one before found nothing
    - C(arguments) - every node's variables against the specs of O(node_roles) and every switch's against those of
      O(switch_roles), with the validator C(ansible.builtin.validate_argument_spec) uses (a host in both groups gets
      both); each message ends C(found in <host>). A variable that starts with a role's name and C(_) but that no
      role declares (a misspelt setting such as C(fabric_network_mtus)) is reported here too, with the closest
      declared name.
    - C(cluster_model) - the problems of the cluster model (M(hpcfabric.cluster.cluster_model)) of O(nodes).
    - C(roce_policy) - one lossless RoCE policy on nodes and switches, compatible MTUs (M(hpcfabric.cluster.qos_plan)).
    - C(node_settings) - every host's settings by the input rules of the roles that run on it.
  - Reading a host's variables is what a large inventory costs, so each is read once; the work is linear in the
    number of hosts. C(playbooks/check_inventory.yml) is its caller.
positional: _input, nodes, switches, node_roles, switch_roles
options:
  _input:
    description: The C(hostvars) mapping.
    type: dict
    required: true
  nodes:
    description: Inventory names of the compute nodes, in inventory order.
    type: list
    elements: str
    required: true
  switches:
    description: Inventory names of the fabric switches.
    type: list
    elements: str
    required: true
  node_roles:
    description: Names of this collection's roles that run on the nodes.
    type: list
    elements: str
    required: true
  switch_roles:
    description: Names of this collection's roles that run on the switches.
    type: list
    elements: str
    required: true
'''

EXAMPLES = r'''
- name: Check the inventory
  ansible.builtin.set_fact:
    __problems: >-
      {{ hostvars | hpcfabric.cluster.inventory_problems(groups['gpu_nodes'], groups['fabric_switches'] | default([]),
                                                         ['fabric_network', 'mpi', 'roce_qos'], ['switch_qos']) }}

- name: Every node's variables have the documented types and choices
  ansible.builtin.assert:
    that: __problems.arguments | length == 0
    fail_msg: "{{ __problems.arguments | join('; ') }}"
'''

RETURN = r'''
_value:
  description: The problems of each step; a step after one with problems is not run and stays empty.
  type: dict
  contains:
    arguments:
      description: Type, choice and required-option problems, e.g. C(value of mpi_flavour must be one of - distro,
        hpcx, source, got - spack found in b300-02).
      type: list
      elements: str
    cluster_model:
      description: The cluster model's problems, each naming the variable and the host.
      type: list
      elements: str
    roce_policy:
      description: RoCE policy and MTU problems between nodes and switches.
      type: list
      elements: str
    node_settings:
      description:
        - Each host's settings checked by the input rules of every role that runs on it, the rules the role's own
          C(tasks/assert.yml) applies (P(hpcfabric.cluster.role_settings_problems#filter)), e.g. C(storage_mounts on
          b300-01 - [0].src ...), C(nvidia_driver_branch on b300-01 - '58' is not a driver branch ...),
          C(validate_work_dir on b300-01 - '/' is a system directory ...); and each host's C(ansible_host). Run
          whenever the arguments step found nothing.
        - A setting is the inventory's value, else the role's default; a default that is a Jinja template reads as
          unset here, and the role checks it resolved.
      type: list
      elements: str
'''

from ansible_collections.hpcfabric.cluster.plugins.module_utils.cluster_model import build_model
from ansible_collections.hpcfabric.cluster.plugins.module_utils.inventory_spec import (
    read_variables, spec_problems, undeclared_problems)
from ansible_collections.hpcfabric.cluster.plugins.module_utils.qos_plan import check_qos
from ansible_collections.hpcfabric.cluster.plugins.module_utils.node_settings import host_problems
from ansible_collections.hpcfabric.cluster.plugins.plugin_utils.filters import as_filter
from ansible_collections.hpcfabric.cluster.plugins.plugin_utils.role_specs import role_defaults, role_options

# what the model and the RoCE check read besides the roles' own variables
_EXTRA = ['ansible_host']
# the facts roles set for later roles and for users: variables with a role's prefix that no spec declares
ROLE_FACTS = ('cluster_model_plan', 'nvidia_driver_status', 'rdma_device_names', 'roce_qos_readback', 'switch_qos_readback')


def _names(value, what):
    if isinstance(value, (str, dict)) or not hasattr(value, '__iter__'):
        raise ValueError('%s must be a list, got %s' % (what, type(value).__name__))
    return list(value)


def _defaults_by_role(roles):
    return dict((role, role_defaults(role, 'inventory_problems')) for role in roles)


def inventory_problems(hostvars, nodes, switches, node_roles, switch_roles):
    """See DOCUMENTATION."""
    nodes, switches = _names(nodes, 'nodes'), _names(switches, 'switches')
    node_options = role_options(node_roles, 'inventory_problems')
    switch_options = role_options(switch_roles, 'inventory_problems')
    names = list(node_options) + [n for n in switch_options if n not in node_options] + _EXTRA
    hosts = list(dict.fromkeys(nodes + switches))
    variables = read_variables(lambda host: hostvars.get(host, {}), hosts, names)
    result = {'arguments': spec_problems(node_options, nodes, variables.get)
              + spec_problems(switch_options, switches, variables.get)
              + undeclared_problems(lambda host: hostvars.get(host, {}), hosts, set(names) | set(ROLE_FACTS),
                                    [role + '_' for role in list(node_roles) + list(switch_roles)]),
              'cluster_model': [], 'roce_policy': []}
    if not result['arguments']:
        node_set = set(nodes)
        others = dict((host, (hostvars.get(host) or {}).get('ansible_host')) for host in hostvars if host not in node_set)
        result['cluster_model'] = build_model(variables, nodes, others)['problems']
    if not result['arguments'] and not result['cluster_model']:
        result['roce_policy'] = check_qos(variables, nodes, switches)
    result['node_settings'] = [] if result['arguments'] else list(dict.fromkeys(
        host_problems(variables, nodes, _defaults_by_role(node_roles))
        + host_problems(variables, switches, _defaults_by_role(switch_roles))))
    return result


class FilterModule(object):
    """hpcfabric.cluster inventory check filter."""

    def filters(self):
        return {'inventory_problems': as_filter('inventory_problems', inventory_problems)}
