# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The slurm role's plan on a copy of inventories/example whose nodes connect to this machine: its filters wired to
the cluster model and the facts the role gathers, every node rendered under --limit, bad layouts refused by name."""
from __future__ import annotations

import json
import sys

PLAY = """
- hosts: slurm_controllers:gpu_nodes
  gather_facts: false
  tasks:
    - ansible.builtin.include_role:
        name: hpcfabric.cluster.cluster_model
    - ansible.builtin.include_role:
        name: hpcfabric.cluster.slurm
        tasks_from: "{{ __task_file }}"
      loop: [set_vars.yml, plan.yml]
      loop_control:
        loop_var: __task_file
    - ansible.builtin.copy:
        content: "{{ __slurm_files | to_json }}"
        dest: "%s"
        mode: "0600"
      delegate_to: localhost
      run_once: true
"""


def _slurm_inventory(inventory, **group_vars):
    def local(data):
        data['ansible_connection'] = 'local'
        data['ansible_python_interpreter'] = sys.executable
        data.update(group_vars)
    inventory.edit('group_vars/gpu_nodes.yml', local)

    def controllers(data):
        data['hpc_cluster']['children']['slurm_controllers'] = {'hosts': {'b300-01': None}}
    inventory.edit('hosts.yml', controllers)


def _files(path):
    return json.loads(path.read_text())


def test_every_node_is_rendered_even_under_limit(inventory, playbook, tmp_path):
    _slurm_inventory(inventory)
    play = tmp_path / 'play.yml'
    play.write_text(PLAY % (tmp_path / 'files.json'))
    for args in ((), ('--limit', 'b300-01')):
        (tmp_path / 'files.json').unlink(missing_ok=True)
        rc, out = playbook(inventory.path, play, *args)
        assert rc == 0, out[-3000:]
        conf = _files(tmp_path / 'files.json')['slurm.conf'].splitlines()
        nodes = [line for line in conf if line.startswith('NodeName=')]
        # both example nodes are this machine: one node line for both, with this machine's CPU count
        assert len(nodes) == 1 and nodes[0].startswith('NodeName=b300-[01-02] CPUs='), (args, nodes)
        assert 'SlurmctldHost=b300-01' in conf and 'SlurmctldParameters=enable_configless' in conf
        assert [line for line in conf if line.startswith('PartitionName=')][0].startswith(
            'PartitionName=gpu Nodes=ALL Default=YES')


def test_a_partition_naming_an_unknown_node_stops_the_role_naming_it(inventory, playbook, tmp_path):
    _slurm_inventory(inventory, slurm_partitions=[{'name': 'gpu', 'nodes': 'b300-0[1-3]', 'default': True}])
    play = tmp_path / 'play.yml'
    play.write_text(PLAY % (tmp_path / 'files.json'))
    rc, out = playbook(inventory.path, play)
    assert rc != 0
    assert 'slurm_partitions[0] (gpu): names b300-03, not in slurm_compute_group' in ' '.join(out.split())
