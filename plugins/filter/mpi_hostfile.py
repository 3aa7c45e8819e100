# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers

from __future__ import annotations

DOCUMENTATION = r'''
name: mpi_hostfile
short_description: Render an Open MPI hostfile
version_added: 0.1.0
author: hpcfabric maintainers (@hpcfabric)
description:
  - Returns Open MPI hostfile text with one C(name slots=N) line per host, in input order, ending
    with a newline.
  - O(_input) is a list of host names, which all get O(slots), or a list of dicts C({name, slots})
    so that each host gets its own slot count (for example its GPU count). Both forms can be mixed;
    a dict without C(slots) gets O(slots).
  - Fails naming the host for an empty or blank name, a name with whitespace, a duplicate name, a
    missing slot count or a slot count below 1.
  - Work is linear in the number of hosts, so it suits clusters of thousands of nodes.
positional: _input
options:
  _input:
    description: Host names, or dicts with C(name) and optional C(slots).
    type: list
    elements: raw
    required: true
  slots:
    description:
      - Slot count for plain host names and for dicts without C(slots).
      - Required when any host has no slot count of its own.
    type: int
  name_key:
    description: Key of the dicts in O(_input) that holds the host name (for example C(host) in the cluster model's
      C(hostfile) entries, whose C(name) is the fabric name).
    type: str
    default: name
    version_added: 0.2.0
'''

EXAMPLES = r'''
- name: Eight ranks per node for every compute node
  ansible.builtin.copy:
    dest: /etc/mpi/hostfile
    content: "{{ groups['compute'] | hpcfabric.cluster.mpi_hostfile(slots=8) }}"
    mode: "0644"
  # node01 slots=8
  # node02 slots=8

- name: One slot per GPU, from hpcfabric.cluster.gpu_topology_facts gathered on every node
  ansible.builtin.copy:
    dest: /etc/mpi/hostfile
    content: "{{ __hosts | hpcfabric.cluster.mpi_hostfile }}"
    mode: "0644"
  vars:
    __hosts: >-
      {{ dict(groups['compute']
              | zip(groups['compute'] | map('extract', hostvars, ['ansible_facts', 'gpu_topology', 'gpu_count'])))
         | dict2items(key_name='name', value_name='slots') }}

- name: The cluster model's hostfile, by inventory name instead of fabric name
  ansible.builtin.debug:
    msg: "{{ cluster_model_plan.hostfile | hpcfabric.cluster.mpi_hostfile(name_key='host') }}"

- name: Explicit per-host slot counts
  ansible.builtin.debug:
    msg: "{{ [{'name': 'node01', 'slots': 8}, {'name': 'node02', 'slots': 4}] | hpcfabric.cluster.mpi_hostfile }}"
  # => "node01 slots=8\nnode02 slots=4\n"
'''

RETURN = r'''
_value:
  description: Hostfile text, one C(name slots=N) line per host.
  type: str
  sample: "node01 slots=8\nnode02 slots=8\n"
'''

from ansible_collections.hpcfabric.cluster.plugins.module_utils.mpi_hostfile import mpi_hostfile
from ansible_collections.hpcfabric.cluster.plugins.plugin_utils.filters import as_filter


class FilterModule(object):
    """Open MPI hostfile filter."""

    def filters(self):
        return {'mpi_hostfile': as_filter('mpi_hostfile', mpi_hostfile)}
