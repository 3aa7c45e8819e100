# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""node_problems: which checks run for which roles, what is read from the inventory and what from the defaults."""
from __future__ import annotations

from ansible_collections.hpcfabric.cluster.plugins.module_utils.node_settings import node_problems

OPTIONS = {
    'validate_work_dir': {'type': 'path', 'default': '/var/tmp/hpcfabric-validate'},
    'ssh_trust_key_dir': {'type': 'path'},
    'ssh_trust_authorized_from': {'type': 'list'},
    'os_base_memlock': {'default': 'unlimited'}, 'os_base_nofile': {'default': 1048576},
    'os_base_sysctl': {'default': {'vm.swappiness': 10}}, 'os_base_sysctl_extra': {'default': {}},
    'os_base_ntp_servers': {'default': []},
    'rdma_doca_repo_url': {'type': 'str'}, 'rdma_doca_repo_key_url': {'type': 'str'},
    'rdma_allow_http': {'type': 'bool', 'default': False},
    'mpi_hpcx_url': {'type': 'str'}, 'mpi_source_ucx_url': {'type': 'str'}, 'mpi_source_ompi_url': {'type': 'str'},
    'mpi_allow_http': {'type': 'bool', 'default': False},
}


def test_nothing_set_is_nothing_wrong():
    assert node_problems({'n1': {}, 'n2': {}}, ['n1', 'n2'], OPTIONS) == []


def test_each_problem_names_variable_and_host_in_node_order():
    variables = {'n1': {'ssh_trust_key_dir': '/tmp/k'},
                 'n2': {'validate_work_dir': '/', 'os_base_nofile': 0, 'ssh_trust_authorized_from': ['10.0.0.0/8', '*']}}
    problems = node_problems(variables, ['n1', 'n2'], OPTIONS)
    assert [p.split(':')[0] for p in problems] == [
        'ssh_trust_key_dir on n1', 'os_base on n2', 'validate_work_dir on n2', 'ssh_trust_authorized_from[1] on n2']


def test_extra_kernel_parameters_are_checked_with_the_base_ones():
    problems = node_problems({'n1': {'os_base_sysctl_extra': {'vm.swappiness': '1\n'}}}, ['n1'], OPTIONS)
    assert problems == ['os_base on n1: kernel parameter vm.swappiness: "1\\n" holds a line break or control character']


def test_a_role_that_does_not_run_is_not_checked():
    without_os_base = {k: v for k, v in OPTIONS.items() if not k.startswith('os_base')}
    assert node_problems({'n1': {'os_base_nofile': 0}}, ['n1'], without_os_base) == []
    assert node_problems({'n1': {'mpi_hpcx_prefix': '/'}}, ['n1'], OPTIONS) == []


def test_urls_are_checked_with_the_nodes_own_allowance_of_plain_http():
    variables = {'n1': {'rdma_doca_repo_url': 'http://mirror/doca/', 'rdma_doca_repo_key_url': 'https://mirror/key.pub'},
                 'n2': {'rdma_doca_repo_url': 'http://mirror/doca/', 'rdma_allow_http': True},
                 'n3': {'rdma_doca_repo_url': 'http://mirror/doca/', 'rdma_allow_http': 'false',
                        'mpi_source_ompi_url': 'ftp://mirror/ompi.tar.xz', 'mpi_allow_http': True}}
    assert node_problems(variables, ['n1', 'n2', 'n3'], OPTIONS) == [
        "rdma_doca_repo_url on n1: 'http://mirror/doca/' is plain HTTP: what it serves could be replaced on the way; "
        "use https://, or set rdma_allow_http: true for a mirror on a private network without TLS",
        "rdma_doca_repo_url on n3: 'http://mirror/doca/' is plain HTTP: what it serves could be replaced on the way; "
        "use https://, or set rdma_allow_http: true for a mirror on a private network without TLS",
        "mpi_source_ompi_url on n3: 'ftp://mirror/ompi.tar.xz' is not an http:// or https:// URL with a host, nor a "
        "file: URL of a path on the node"]


def test_urls_of_a_role_that_does_not_run_are_not_checked():
    without_rdma = {k: v for k, v in OPTIONS.items() if not k.startswith('rdma_')}
    variables = {'n1': {'rdma_doca_repo_url': 'http://mirror/doca/', 'nvidia_driver_repo_url': 'http://mirror/cuda/'}}
    assert node_problems(variables, ['n1'], without_rdma) == []
    assert node_problems({'n1': {'mpi_hpcx_url': None}}, ['n1'], OPTIONS) == []
