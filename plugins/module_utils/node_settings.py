# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The checks of each node's own strings that reach files, trust stores and commands, and of the URLs it fetches
repositories, keys and tarballs from, for check_inventory.yml.

They run on the controller after the argument specs (so every value has its declared type) and before any host is
touched. Each message reads ``<variable> on <host>: <what is wrong>``. Only values the inventory sets are checked:
the roles' defaults are the collection's own.
"""
from __future__ import annotations

from ansible_collections.hpcfabric.cluster.plugins.module_utils.input_syntax import (
    address_or_hostname_problem, named_problems, path_problem, url_problem)
from ansible_collections.hpcfabric.cluster.plugins.module_utils.os_tuning import settings_problems as tuning_problems
from ansible_collections.hpcfabric.cluster.plugins.module_utils.storage_mounts import mount_problems
from ansible_collections.hpcfabric.cluster.plugins.module_utils.validate.thresholds import threshold_inputs

# directories on the nodes that a role creates, chowns, empties or installs into
OWNED_DIRS = ('mpi_download_dir', 'mpi_modulefiles_dir', 'mpi_hpcx_prefix', 'mpi_source_prefix', 'mpi_source_build_dir',
              'roce_qos_script_dir', 'bench_env_dir', 'validate_bench_dir', 'validate_work_dir',
              'validate_checkpoint_dir', 'validate_report_dir')
# files a role writes
OWNED_FILES = ('mpi_hostfile_path', 'roce_qos_config_path')
# directories on the controller that hold the cluster's private key
PRIVATE_DIRS = ('ssh_trust_key_dir',)
# the URLs the nodes fetch repositories, signing keys and tarballs from, by the role setting that allows plain HTTP
URLS = {'rdma_allow_http': ('rdma_doca_repo_url', 'rdma_doca_repo_key_url'),
        'nvidia_driver_allow_http': ('nvidia_driver_repo_url', 'nvidia_driver_keyring_url'),
        'mpi_allow_http': ('mpi_hpcx_url', 'mpi_source_ucx_url', 'mpi_source_ompi_url', 'mpi_source_package_url')}


def _path_and_url_problems(own, setting, options):
    """``(variable, rule or None)`` for each directory, file and URL of the roles in ``options`` that the node sets."""
    for names, owned, private in ((OWNED_DIRS, True, False), (OWNED_FILES, False, False), (PRIVATE_DIRS, True, True)):
        for name in names:
            if name in options and own.get(name) is not None:
                yield name, path_problem(own[name], owned=owned, private=private)
    for allow, names in URLS.items():
        for name in names:
            if name in options and own.get(name) is not None:
                # plain HTTP as the node's setting allows it (the inventory's, else the role's default: false)
                yield name, url_problem(own[name], setting(allow) or False, allow)


def _string_problems(own, setting, options):
    """``(variable, rule)`` for the LNet networks, the MPI account, the strings the mpi role writes to the MCA file
    and the job environment (profile.d, the modulefile, mpirun's environment list), and the key's sources."""
    named = []
    if 'storage_lnet_networks' in options:
        named += named_problems({'storage_lnet_networks': setting('storage_lnet_networks')}, 'lnet_network')
    if 'ssh_trust_user' in options:
        named += named_problems({'ssh_trust_user': setting('ssh_trust_user')}, 'account',
                                allow_root=setting('ssh_trust_allow_root'), allow_variable='ssh_trust_allow_root')
    if 'ssh_trust_authorized_from' in options:
        named += named_problems({'ssh_trust_authorized_from': own.get('ssh_trust_authorized_from')}, 'from_pattern')
    if 'mpi_ucx_tls' in options:
        named += named_problems({'mpi_ucx_net_devices': setting('mpi_ucx_net_devices')}, 'ucx_device')
        named += named_problems({'mpi_ucx_tls': setting('mpi_ucx_tls')}, 'ucx_transport')
        named += named_problems({'mpi_mca_params': setting('mpi_mca_params'),
                                 'mpi_mca_params_extra': setting('mpi_mca_params_extra')}, 'mca_param')
    return named


def _validate_problems(setting, options):
    # the validate role's settings by the names its argument spec declares, as its own first check reads them
    settings = dict((name, setting(name)) for name in options if name.startswith('validate_'))
    try:
        return threshold_inputs(settings)['problems']
    except ValueError as error:
        return [str(error)]


def node_problems(variables, nodes, options):
    """Every problem of the nodes' strings, in node order; ``variables`` ``{host: {name: value}}`` as the inventory
    sets them, ``options`` the roles' merged argument-spec options (which roles run decides what is checked)."""
    problems = []
    for host in nodes:
        own = variables.get(host) or {}

        def setting(name, own=own):
            value = own.get(name)
            return (options.get(name) or {}).get('default') if value is None else value

        if 'storage_mounts' in options:
            problems.extend('storage_mounts on %s: %s' % (host, p) for p in mount_problems(
                setting('storage_mounts') or [], setting('storage_nfs_options'), setting('storage_lustre_options'),
                setting('storage_lustre_packages') or []))
        if 'os_base_sysctl' in options:
            sysctl = dict(setting('os_base_sysctl') or {}, **(setting('os_base_sysctl_extra') or {}))
            problems.extend('os_base on %s: %s' % (host, p) for p in tuning_problems(
                setting('os_base_memlock'), setting('os_base_nofile'), sysctl, setting('os_base_ntp_servers') or []))
        problems.extend('%s on %s: %s' % (name, host, problem) for name, problem in _path_and_url_problems(own, setting, options)
                        if problem)
        problems.extend('%s on %s: %s' % (name, host, problem) for name, problem in _string_problems(own, setting, options))
        # peers' known_hosts lists the node under it: one field of a line
        if own.get('ansible_host') is not None and address_or_hostname_problem(own['ansible_host']):
            problems.append('ansible_host on %s: %s' % (host, address_or_hostname_problem(own['ansible_host'])))
        if 'validate_iters' in options:
            problems.extend('validate on %s: %s' % (host, p) for p in _validate_problems(setting, options))
    return problems
