# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The cluster_model filter: the per-node plan every role reads, computed once."""

from __future__ import annotations

DOCUMENTATION = r'''
name: cluster_model
short_description: Compute the cluster model (fabric plan, names, slots, RoCE policy, job environment) once
version_added: 0.2.0
author: hpcfabric maintainers (@hpcfabric)
description:
  - Reads every host's inventory variables (C(fabric_network_*), C(mpi_cuda), C(mpi_ucx_tls),
    C(mpi_ucx_net_devices), C(mpi_env_extra), C(mpi_hostfile_slots), C(roce_qos_policy)) and the facts gathered
    on it (C(ansible_facts.ib) from M(hpcfabric.cluster.ib_facts), C(ansible_facts.gpu_topology) from
    M(hpcfabric.cluster.gpu_topology_facts), network facts for interfaces given by MAC), and returns the model
    that the collection's roles read instead of computing their own answers.
  - C(playbooks/check_inventory.yml) calls it without facts, so a plan that cannot hold fails before any host is
    touched; the C(hpcfabric.cluster.cluster_model) role calls it once per run after gathering the facts.
  - When there are problems, C(nodes) and C(hosts_entries) are empty.
  - Work is linear in the number of interfaces (call it once, C(run_once)). C(docs/cluster_model.md) describes
    every key and who reads it.
positional: _input, hosts
options:
  _input:
    description: The C(hostvars) mapping.
    type: dict
    required: true
  hosts:
    description: Inventory names of the cluster's nodes, in the order /etc/hosts and the hostfile list them.
    type: list
    elements: str
    required: true
'''

EXAMPLES = r'''
- name: Compute the model of the compute nodes once
  ansible.builtin.set_fact:
    cluster_model_plan: "{{ hostvars | hpcfabric.cluster.cluster_model(groups['gpu_nodes']) }}"
  run_once: true

- name: Show a node's job environment
  ansible.builtin.debug:
    msg: "{{ cluster_model_plan.nodes[inventory_hostname].job_env }}"
  # {"CUDA_DEVICE_ORDER": "PCI_BUS_ID", "NCCL_IB_GID_INDEX": "3", "NCCL_IB_HCA": "=mlx5_0:1,mlx5_1:1",
  #  "NCCL_IB_TC": "106", "NCCL_SOCKET_IFNAME": "=ens1f0np0,ens2f0np0", "UCX_IB_GID_INDEX": "3",
  #  "UCX_IB_TRAFFIC_CLASS": "106", "UCX_NET_DEVICES": "mlx5_0:1,mlx5_1:1"}
'''

RETURN = r'''
_value:
  description: The model.
  type: dict
  contains:
    hosts:
      description: The hosts of the model, in order.
      type: list
      elements: str
    problems:
      description: One message per problem, naming the variable and the host.
      type: list
      elements: str
    warnings:
      description: What holds but deserves a look (RoCE ports without a common GID index, nodes whose job
        environments differ).
      type: list
      elements: str
    hosts_entries:
      description: C(<address> <names>) lines, one per fabric interface, in host order.
      type: list
      elements: str
    nodes:
      description:
        - Per host C(interfaces) (C(name), C(mac), C(rail), C(address), C(mtu), C(names)), C(fabric_names),
          C(primary_name), C(known_hosts_names), C(slots) and C(slots_from) (C(mpi_hostfile_slots), C(gpu_count)
          or null), C(gpu_count), C(rdma_ports), C(roce) (C(traffic_class), C(dscp), C(priority)), C(job_env), and
          C(ranks) - per local rank its GPU, the Active fabric RDMA ports nearest it and its NUMA node (binding
          only, a subset of the job environment's devices).
      type: dict
    member_sources:
      description: The rail subnets and every node's C(ansible_host), where cluster members connect from (what an
        C(authorized_keys) C(from=) option lists).
      type: list
      elements: str
    hostfile:
      description: C({host, name, slots}) per host in order, C(name) the primary fabric name; C(slots) null where
        neither C(mpi_hostfile_slots) nor a gathered GPU count gives it.
      type: list
      elements: dict
'''

from ansible_collections.hpcfabric.cluster.plugins.module_utils.cluster_model import build_model
from ansible_collections.hpcfabric.cluster.plugins.plugin_utils.filters import as_filter


def cluster_model(hostvars, hosts):
    """See DOCUMENTATION."""
    if isinstance(hosts, (str, dict)) or not hasattr(hosts, '__iter__'):
        raise ValueError('hosts must be a list of inventory names, got %s' % type(hosts).__name__)
    return build_model(hostvars, hosts)


class FilterModule(object):
    """hpcfabric.cluster cluster model filter."""

    def filters(self):
        return {'cluster_model': as_filter('cluster_model', cluster_model)}
