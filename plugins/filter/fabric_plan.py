"""The fabric_plan filter: the cluster's fabric addressing plan, checked and rendered once."""

from ansible.errors import AnsibleFilterError
from ansible_collections.hpcfabric.cluster.plugins.module_utils.fabric_plan import (
    check_plan, host_aliases, hosts_entries, primary_names,
)

DOCUMENTATION = r"""
name: fabric_plan
short_description: Check a cluster's fabric addresses and build its /etc/hosts entries in one pass
version_added: 0.1.0
author: hpcfabric maintainers (@hpcfabric)
description:
  - Reads every host's C(fabric_network_interfaces) and returns the problems found across the whole cluster
    (duplicate addresses, addresses outside their rail subnet, duplicate or clashing fabric hostnames,
    overlapping rail subnets, MTU out of range, interfaces listed twice) together with the /etc/hosts lines,
    each host's primary fabric name and each host's aliases.
  - When there are problems, the other keys are empty.
  - Work is linear in the number of interfaces, so it is meant to be called once per play (C(run_once)).
  - A fabric interface's names are its C(hostname) when set, otherwise C(<inventory name>-<rail name>).
options:
  _input:
    description: The C(hostvars) mapping.
    type: dict
    required: true
  hosts:
    description: Inventory names of the hosts in the plan, in the order /etc/hosts should list them.
    type: list
    elements: str
    required: true
  rails:
    description: The rails, C(fabric_network_rails) (list of dicts with C(name) and C(subnet)); an interface's C(rail) indexes it.
    type: list
    elements: dict
    required: true
  mtu:
    description: MTU of interfaces that give none and whose host sets no C(fabric_network_mtu).
    type: int
    default: 9000
"""

EXAMPLES = r"""
- name: Check the fabric plan of every compute node
  ansible.builtin.assert:
    that: __plan.problems | length == 0
    fail_msg: "{{ __plan.problems | join('; ') }}"
  vars:
    __plan: "{{ hostvars | hpcfabric.cluster.fabric_plan(groups['gpu_nodes'], fabric_network_rails) }}"
  run_once: true
"""

RETURN = r"""
_value:
  description: The plan.
  type: dict
  contains:
    problems:
      description: One message per problem, naming the variable and the host.
      type: list
      elements: str
    hosts_entries:
      description: C(<address> <name>) lines, one per fabric interface, in host order.
      type: list
      elements: str
    primary_names:
      description: Each host's fabric name on its first fabric interface (the name MPI launches over).
      type: dict
    aliases:
      description:
        - Per host, every name and address peers may use for it - inventory name, C(ansible_host), fabric names
          and fabric addresses - without repeats (what a known_hosts line lists).
      type: dict
"""


def fabric_plan(hostvars, hosts, rails, mtu=9000):
    """Return problems, /etc/hosts lines and primary names for the given hosts."""
    if not isinstance(rails, list):
        raise AnsibleFilterError('fabric_plan: rails (fabric_network_rails) must be a list, got %s' % type(rails).__name__)
    problems = check_plan(hostvars, hosts, rails, mtu)
    if problems:
        return {'problems': problems, 'hosts_entries': [], 'primary_names': {}, 'aliases': {}}
    return {
        'problems': [],
        'hosts_entries': hosts_entries(hostvars, hosts, rails),
        'primary_names': primary_names(hostvars, hosts, rails),
        'aliases': host_aliases(hostvars, hosts, rails),
    }


class FilterModule:
    """hpcfabric.cluster fabric plan filter."""

    def filters(self):
        return {'fabric_plan': fabric_plan}
