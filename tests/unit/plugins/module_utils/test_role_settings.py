# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The roles' input rules (module_utils/role_settings/): what each refuses, the label it names, what passes; the mpi
role's layout, which its rules and its vars/main.yml both read."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.hpcfabric.cluster.plugins.module_utils.role_settings import RULES, mpi, role_problems

ROLES = Path(__file__).resolve().parents[4] / 'roles'
SHA = 'sha256:' + 'a' * 64


def defaults(role, **changes):
    """The role's defaults/main.yml with ``changes``: what the role sees when the inventory sets only those (a Jinja
    default unset, as check_inventory reads it)."""
    values = yaml.safe_load((ROLES / role / 'defaults' / 'main.yml').read_text()) or {}
    return dict(dict((name, None if isinstance(value, str) and '{{' in value else value) for name, value in values.items()),
                **changes)


def labels(role, **changes):
    return [label for label, _message in RULES[role](defaults(role, **changes))]


@pytest.mark.parametrize('role', sorted(RULES))
def test_the_defaults_of_each_role_pass_its_rules(role):
    assert RULES[role](defaults(role)) == []


def test_a_line_names_variable_and_host_and_an_unknown_role_is_an_error():
    assert role_problems('nvidia_driver', defaults('nvidia_driver', nvidia_driver_branch='58O'), 'node01') == [
        "nvidia_driver_branch on node01: '58O' is not a driver branch (three digits, e.g. '580'; a full version such as "
        "580.95.05 goes in nvidia_driver_version)"]
    assert role_problems('fabric_network', {}, 'node01') == []
    with pytest.raises(ValueError, match="'slurmd' is not a role of this collection"):
        role_problems('slurmd', {}, 'node01')
    with pytest.raises(ValueError, match='settings must map'):
        role_problems('mpi', ['mpi_flavour'], 'node01')


@pytest.mark.parametrize('changes, label', [
    ({'nvidia_driver_branch': '5800'}, 'nvidia_driver_branch'),
    ({'nvidia_driver_branch': '575', 'nvidia_driver_version': '580.65.06'}, 'nvidia_driver_version'),
    ({'nvidia_driver_branch': '470'}, 'nvidia_driver_open'),
    ({'nvidia_driver_branch': '575', 'nvidia_driver_cuda_versions': ['13.0']}, 'nvidia_driver_cuda_versions'),
    ({'nvidia_driver_packages_extra': ['nvlink5-575']}, 'nvidia_driver_packages_extra'),
    ({'nvidia_driver_repo_url': 'http://mirror/cuda/'}, 'nvidia_driver_repo_url'),
])
def test_the_driver_rules(changes, label):
    assert labels('nvidia_driver', **changes) == [label]


def test_the_driver_rules_that_pass():
    assert labels('nvidia_driver', nvidia_driver_branch='470', nvidia_driver_open=False) == []
    assert labels('nvidia_driver', nvidia_driver_version='580.95.05', nvidia_driver_cuda_versions=['12.8', '13.0']) == []
    assert labels('nvidia_driver', nvidia_driver_repo_url='http://mirror/cuda/', nvidia_driver_allow_http=True) == []


DOCA = {'rdma_stack': 'doca', 'rdma_doca_repo_url': 'https://linux.mellanox.com/public/repo/doca/2.9.1/ubuntu24.04/x86_64/',
        'rdma_doca_repo_key_src': '/srv/GPG-KEY-Mellanox.pub'}


@pytest.mark.parametrize('changes, found', [
    ({'rdma_doca_repo_url': DOCA['rdma_doca_repo_url']}, ['rdma_stack']),
    ({'rdma_stack': 'doca'}, ['rdma_doca_repo_url', 'rdma_doca_repo_key_url']),
    (dict(DOCA, rdma_doca_repo_key_url='https://mirror/key.pub'), ['rdma_doca_repo_key_url']),
    (dict(DOCA, rdma_doca_packages=[]), ['rdma_doca_packages']),
    ({'rdma_roce_modules': ['mlx5_ib', 'rdma_ucm; rm -rf /']}, ['rdma_roce_modules[1]']),
])
def test_the_rdma_rules(changes, found):
    assert labels('rdma', **changes) == found


def test_a_good_doca_setup_passes():
    assert labels('rdma', **DOCA) == []


def test_the_mpi_layout_of_hpcx_follows_the_tarball_the_url_names():
    layout = mpi.layout(defaults('mpi', mpi_flavour='hpcx', mpi_hpcx_checksum=SHA, mpi_hpcx_url=(
        'https://content.mellanox.com/hpc/hpc-x/v2.24/hpcx-v2.24-gcc-doca_ofed-ubuntu24.04-cuda13-x86_64.tbz?x=1')))
    assert (layout['hpcx_tarball'], layout['hpcx_home']) == (
        'hpcx-v2.24-gcc-doca_ofed-ubuntu24.04-cuda13-x86_64.tbz',
        '/opt/hpcx/hpcx-v2.24-gcc-doca_ofed-ubuntu24.04-cuda13-x86_64')
    assert layout['tarballs'] == [{'name': 'mpi_hpcx', 'url': layout['tarballs'][0]['url'], 'src': '', 'checksum': SHA}]


def test_the_mpi_layout_of_a_source_build_and_of_a_package_of_one():
    build = mpi.layout(defaults('mpi', mpi_flavour='source', mpi_cuda=True,
                                mpi_source_ucx_src='/srv/ucx-1.18.1.tar.gz', mpi_source_ompi_url='https://x/openmpi-5.0.7.tar.bz2'))
    assert (build['ucx_version'], build['ompi_version'], build['from_package']) == ('1.18.1', '5.0.7', False)
    assert build['source_home'] == '/opt/hpcfabric/openmpi-5.0.7-ucx-1.18.1-cuda'
    assert [t['name'] for t in build['tarballs']] == ['mpi_source_ucx', 'mpi_source_ompi']
    package = mpi.layout(defaults('mpi', mpi_flavour='source',
                                  mpi_source_package_src='/srv/openmpi-5.0.7-ucx-1.18.1-cuda-0123456789ab.tar.gz'))
    assert (package['from_package'], package['source_home']) == (True, '/opt/hpcfabric/openmpi-5.0.7-ucx-1.18.1-cuda')
    assert [t['name'] for t in package['tarballs']] == ['mpi_source_package']
    assert mpi.layout(defaults('mpi', mpi_source_prefix='/opt/site/ompi'))['source_home'] == '/opt/site/ompi'
    assert mpi.layout(defaults('mpi'))['tarballs'] == []


SOURCE = {'mpi_flavour': 'source', 'mpi_source_ucx_src': '/srv/ucx-1.18.1.tar.gz', 'mpi_source_ucx_checksum': SHA,
          'mpi_source_ompi_src': '/srv/openmpi-5.0.7.tar.bz2', 'mpi_source_ompi_checksum': SHA}


@pytest.mark.parametrize('changes, found', [
    (dict(SOURCE, mpi_source_package_src='/srv/p.tar.gz', mpi_source_package_checksum=SHA), ['mpi_source_package_url']),
    (dict(SOURCE, mpi_source_ucx_url='https://x/ucx-1.18.1.tar.gz'), ['mpi_source_ucx_url']),
    (dict(SOURCE, mpi_source_ompi_checksum='md5:' + 'a' * 32), ['mpi_source_ompi_checksum']),
    (dict(SOURCE, mpi_source_ucx_src='/srv/ucx-latest.tar.gz'), ['mpi_source_ucx_version']),
    (dict(SOURCE, mpi_source_prefix='/opt/hpcfabric'), ['mpi_source_prefix']),
    (dict(SOURCE, mpi_source_prefix='/opt'), ['mpi_source_prefix']),
    ({'mpi_flavour': 'hpcx', 'mpi_hpcx_src': '/srv/hpcx.tbz', 'mpi_hpcx_checksum': SHA, 'mpi_hpcx_prefix': '/opt/hpcx'},
     ['mpi_hpcx_prefix']),
    ({'mpi_download_dir': '/var/cache'}, ['mpi_download_dir']),
    ({'mpi_hpcx_url': 'http://mirror/hpcx.tbz'}, ['mpi_hpcx_url']),
    ({'mpi_ucx_tls': ['rc,ud']}, ['mpi_ucx_tls[0]']),
])
def test_the_mpi_rules(changes, found):
    assert labels('mpi', **changes) == found


def test_a_source_build_with_its_tarballs_and_checksums_passes():
    assert labels('mpi', **SOURCE) == []
    named = dict(SOURCE)
    named.update(mpi_source_ucx_src='/srv/ucx-latest.tar.gz', mpi_source_ucx_version='1.18.1')
    assert labels('mpi', **named) == []


@pytest.mark.parametrize('level, found', [(None, []), (3, []), ('2', []), (7, ['validate_dcgmi_diag_level']),
                                          ('r3', ['validate_dcgmi_diag_level']), (True, ['validate_dcgmi_diag_level'])])
def test_the_dcgmi_level(level, found):
    settings = defaults('validate', validate_dcgmi_diag_level=level)
    assert [label for label, _message in RULES['validate'](settings) if label.startswith('validate_dcgmi')] == found
