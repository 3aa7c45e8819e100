# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The roles that read the cluster model, run on this machine against a copy of inventories/example as shipped.

Every example node connects locally, so the roles' own tasks (the model's read-only probes included) run for real;
the GPUs are injected with hpcfabric.cluster.gpu_topology_facts on recorded nvidia-smi output, as a node with a
driver would have gathered them before the hostfile is written.
"""
from __future__ import annotations

import re
import sys

import pytest
import yaml

from checkout import ROOT

TOPO = ROOT / 'tests' / 'unit' / 'fixtures' / 'nvidia-smi-topo'


def local_nodes(inventory):
    """Connect every example node to this machine, with the Python running the tests."""
    def mutate(data):
        data['ansible_connection'] = 'local'
        data['ansible_python_interpreter'] = sys.executable
    inventory.edit('group_vars/gpu_nodes.yml', mutate)


def write_play(tmp_path, text):
    path = tmp_path / 'play.yml'
    path.write_text(text)
    return path


def mpi_checks_play(tmp_path, role_vars):
    """The mpi role's checks (the model included) on every node, then each node's job environment."""
    return write_play(tmp_path, """
- hosts: gpu_nodes
  gather_facts: false
  tasks:
    - ansible.builtin.include_role:
        name: hpcfabric.cluster.mpi
        tasks_from: assert.yml
      vars: {%s}
    - ansible.builtin.debug:
        msg: "JOBENV {{ inventory_hostname }} {{ cluster_model_plan.nodes[inventory_hostname].job_env | to_json }}"
""" % role_vars)


def role_checks_play(tmp_path, role):
    """A role's own first checks (tasks/assert.yml) on every node; the storage role's read its per-OS variables."""
    return write_play(tmp_path, """
- hosts: gpu_nodes
  gather_facts: false
  tasks:
    - ansible.builtin.include_role:
        name: hpcfabric.cluster.%s
        tasks_from: "{{ item }}"
        public: true
      loop: %s
""" % (role, '[set_vars.yml, assert.yml]' if role == 'storage' else '[assert.yml]'))


def test_mpi_role_checks_pass_on_the_example_inventory_as_shipped(inventory, playbook, tmp_path):
    """mpi_ucx_tls is unset in the example (the role default, null): the role's checks must not crash on it."""
    local_nodes(inventory)
    rc, out = playbook(inventory.path, str(mpi_checks_play(tmp_path, '')))
    assert rc == 0, out
    assert 'failed=0' in out
    # no RDMA device on this machine: the example's netdev names, which to UCX mean TCP
    assert '"UCX_NET_DEVICES": "enp1as0np0,enp3cs0np0,enp4ds0np0' in out


def test_cuda_aware_example_with_ucx_tls_lacking_cuda_is_refused_before_any_change(inventory, playbook, tmp_path):
    local_nodes(inventory)
    inventory.edit('group_vars/gpu_nodes.yml', lambda data: data.update(mpi_ucx_tls=['rc', 'sm']))
    rc, out = playbook(inventory.path, 'check_inventory.yml')
    assert rc != 0
    assert ('mpi_ucx_tls on b300-01: rc,sm lacks cuda_copy, cuda_ipc; CUDA buffers would be staged through host '
            'memory or fail') in ' '.join(out.split())


HOSTFILE_PLAY = """
- hosts: gpu_nodes
  gather_facts: false
  tasks:
    - name: The GPUs the node's driver shows (recorded nvidia-smi topo -m)
      hpcfabric.cluster.gpu_topology_facts:
        output: "{{ lookup('ansible.builtin.file', topo ~ '/' ~ gpus[inventory_hostname]) }}"
      when: inventory_hostname in gpus
    - ansible.builtin.include_role:
        name: hpcfabric.cluster.mpi_hostfile
"""


def hostfile_run(inventory, playbook, tmp_path, gpus):
    local_nodes(inventory)
    inventory.edit('group_vars/gpu_nodes.yml', lambda data: data.pop('mpi_hostfile_slots'))
    # a model input: a host variable, as the cluster model reads it
    for host in ('b300-01', 'b300-02'):
        inventory.edit('host_vars/%s.yml' % host,
                       lambda data, host=host: data.update(mpi_hostfile_path='%s/%s/hostfile' % (tmp_path, host)))
    play = write_play(tmp_path, HOSTFILE_PLAY)
    extra = yaml.safe_dump({'topo': str(TOPO), 'gpus': gpus}, default_flow_style=True).strip()
    return playbook(inventory.path, str(play), '-e', extra)


def test_gpu_nodes_without_slots_get_their_gpu_count_on_the_first_run(inventory, playbook, tmp_path):
    rc, out = hostfile_run(inventory, playbook, tmp_path, {'b300-01': 'dgx-a100-8gpu-nv12-nic-legend.txt',
                                                           'b300-02': 'rtx4090-5gpu-spaces.txt'})
    assert rc == 0, out
    for host in ('b300-01', 'b300-02'):
        assert (tmp_path / host / 'hostfile').read_text() == 'b300-01-rail0 slots=8\nb300-02-rail0 slots=5\n'


def test_a_node_with_neither_slots_nor_gpus_stops_the_hostfile(inventory, playbook, tmp_path):
    rc, out = hostfile_run(inventory, playbook, tmp_path, {'b300-01': 'dgx-a100-8gpu-nv12-nic-legend.txt'})
    assert rc != 0
    assert 'mpi_hostfile_slots: no slot count for b300-02: set mpi_hostfile_slots' in ' '.join(out.split())
    assert not (tmp_path / 'b300-01' / 'hostfile').exists()


def test_a_model_input_set_as_a_role_variable_is_refused_not_ignored(inventory, playbook, tmp_path):
    """The model reads host variables; a role parameter it cannot see would give roles two answers."""
    local_nodes(inventory)
    rc, out = playbook(inventory.path, str(mpi_checks_play(tmp_path, 'mpi_ucx_tls: [rc, sm, cuda_copy, cuda_ipc]')))
    assert rc != 0
    assert 'mpi_ucx_tls on b300-01: set as a play or role variable, which the cluster model every role reads cannot ' \
           'see' in ' '.join(out.split())


def test_roles_used_alone_refuse_directories_they_would_take_over(inventory, playbook, tmp_path):
    """What check_inventory.yml refuses, the roles refuse on their own too, with the same rule, before any change."""
    local_nodes(inventory)
    inventory.edit('host_vars/b300-02.yml', lambda data: data.update(
        validate_work_dir='/tmp', ssh_trust_key_dir='/tmp/cluster-key', ssh_trust_authorized_from=['10.0.0.0/8', '*']))
    said = {}
    for role in ('validate', 'ssh_trust'):
        rc, out = playbook(inventory.path, str(role_checks_play(tmp_path, role)))
        assert rc != 0, out
        said[role] = ' '.join(out.split())
        assert re.search(r'b300-01 *: ok=\d+ .*failed=0', out), out
        assert re.search(r'b300-02 *: ok=\d+ .*failed=1', out), out
    assert "validate_work_dir on b300-02: '/tmp' is a system directory" in said['validate']
    assert ("ssh_trust_key_dir on b300-02: '/tmp/cluster-key' is under a directory every user can write to, which no "
            "secret belongs in; ssh_trust_authorized_from[1] on b300-02: '*' is not an address") in said['ssh_trust']


@pytest.mark.parametrize('role, values, message', [
    ('ssh_trust', {'ssh_trust_user': 'root'},
     "ssh_trust_user on b300-02: 'root' would let every node's root log in to every other without a password; run "
     "MPI jobs as an ordinary account, or set ssh_trust_allow_root: true"),
    ('storage', {'storage_lnet_networks': ['o2ib0(ib0)"\ninstall lnet /bin/sh']},
     "storage_lnet_networks[0] on b300-02: 'o2ib0(ib0)\"\\ninstall lnet /bin/sh' is not an LNet network"),
    ('mpi', {'mpi_mca_params_extra': {'btl': 'tcp\nplm_rsh_agent = /tmp/x'}},
     "mpi_mca_params_extra on b300-02: btl: the value 'tcp\\nplm_rsh_agent = /tmp/x' is empty or holds a line break"),
    ('validate', {'validate_allreduce_min_busbw_gbs': 0},
     'b300-02: validate_allreduce_min_busbw_gbs=0 lets any bandwidth pass; set validate_allow_zero_threshold: true'),
    ('validate', {'validate_dcgmi_diag_level': 7},
     'validate_dcgmi_diag_level on b300-02: must be 1, 2, 3 or 4 (dcgmi diag -r N), or null for no diagnostic; got 7'),
], ids=['ssh_trust root', 'storage LNet', 'mpi MCA', 'validate zero threshold', 'validate dcgmi level'])
def test_roles_used_alone_refuse_strings_and_values_check_inventory_refuses(
        inventory, playbook, tmp_path, role, values, message):
    local_nodes(inventory)
    if role == 'ssh_trust':
        inventory.edit('group_vars/gpu_nodes.yml', lambda data: data.update(values))
    else:
        inventory.edit('host_vars/b300-02.yml', lambda data: data.update(values))
    rc, out = playbook(inventory.path, str(role_checks_play(tmp_path, role)))
    assert rc != 0, out
    assert message in ' '.join(out.split()), out
