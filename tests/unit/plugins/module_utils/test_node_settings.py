# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""host_problems: the roles' own rules on each host, the inventory's values over the roles' defaults."""
from __future__ import annotations

from ansible_collections.hpcfabric.cluster.plugins.module_utils.node_settings import host_problems, role_settings

TEMPLATED = {'validate_work_dir': '/var/tmp/hpcfabric-validate', 'validate_checkpoint_dir': '{{ validate_work_dir }}/checkpoints'}
DEFAULTS = {
    'mpi_hostfile': {'mpi_hostfile_path': '/etc/hpcfabric/hostfile', 'mpi_hostfile_slots': None},
    'ssh_trust': {'ssh_trust_user': 'mpiuser', 'ssh_trust_allow_root': False,
                  'ssh_trust_key_dir': "{{ lookup('ansible.builtin.env', 'HOME') }}/.ansible/hpcfabric/ssh_trust",
                  'ssh_trust_authorized_from': None},
    'os_base': {'os_base_memlock': 'unlimited', 'os_base_nofile': 1048576, 'os_base_sysctl': {'vm.swappiness': 10},
                'os_base_sysctl_extra': {}, 'os_base_ntp_servers': []},
    'rdma': {'rdma_stack': 'inbox', 'rdma_doca_repo_url': None, 'rdma_doca_repo_key_url': None,
             'rdma_doca_repo_key_src': None, 'rdma_allow_http': False, 'rdma_roce_modules': ['mlx5_ib']},
}


def test_the_defaults_alone_are_nothing_wrong():
    assert host_problems({'n1': {}, 'n2': {}}, ['n1', 'n2'], DEFAULTS) == []


def test_a_setting_is_the_inventorys_value_else_the_default_and_a_template_default_is_unset():
    settings = role_settings({'validate_work_dir': '/scratch/v', 'other_role_var': 1}, TEMPLATED)
    assert settings == {'validate_work_dir': '/scratch/v', 'validate_checkpoint_dir': None}
    # an explicit null takes the default, as the role's defaults/main.yml would
    assert role_settings({'validate_work_dir': None}, TEMPLATED)['validate_work_dir'] == '/var/tmp/hpcfabric-validate'


def test_each_problem_names_variable_and_host_in_host_then_role_order():
    variables = {'n1': {'ssh_trust_key_dir': '/tmp/k'},
                 'n2': {'mpi_hostfile_path': '/etc/host file', 'os_base_nofile': 0, 'ssh_trust_authorized_from': ['10.0.0.0/8', '*']}}
    problems = host_problems(variables, ['n1', 'n2'], DEFAULTS)
    assert [p.split(':')[0] for p in problems] == [
        'ssh_trust_key_dir on n1', 'mpi_hostfile_path on n2', 'ssh_trust_authorized_from[1] on n2', 'os_base on n2']


def test_a_role_that_does_not_run_is_not_checked():
    without_os_base = dict((role, defaults) for role, defaults in DEFAULTS.items() if role != 'os_base')
    assert host_problems({'n1': {'os_base_nofile': 0}}, ['n1'], without_os_base) == []
    assert host_problems({'n1': {'os_base_nofile': 0}}, ['n1'], DEFAULTS) == [
        'os_base on n1: os_base_nofile 0 is not a number of files from 1 to 1073741816']


def test_urls_are_checked_with_the_nodes_own_allowance_of_plain_http():
    doca = {'rdma_stack': 'doca', 'rdma_doca_repo_key_src': '/srv/doca.pub', 'rdma_doca_packages': ['doca-ofed']}
    variables = {'n1': dict(doca, rdma_doca_repo_url='http://mirror/doca/'),
                 'n2': dict(doca, rdma_doca_repo_url='http://mirror/doca/', rdma_allow_http=True)}
    assert host_problems(variables, ['n1', 'n2'], {'rdma': dict(DEFAULTS['rdma'], rdma_doca_packages=[])}) == [
        "rdma_doca_repo_url on n1: 'http://mirror/doca/' is plain HTTP: what it serves could be replaced on the way; "
        "use https://, or set rdma_allow_http: true for a mirror on a private network without TLS"]


def test_ansible_host_is_one_field_of_known_hosts():
    problems = host_problems({'n1': {'ansible_host': '10.0.0.1 evil'}, 'n2': {'ansible_host': '10.0.0.2'}}, ['n1', 'n2'], {})
    assert len(problems) == 1 and problems[0].startswith('ansible_host on n1: ')
