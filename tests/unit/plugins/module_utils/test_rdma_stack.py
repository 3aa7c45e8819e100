# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The rdma role's stack: the packages per OS (its real vars files), installed rdma-core packages by build, ports not
Active, the DOCA-OFED repository files."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.hpcfabric.cluster.plugins.module_utils.ib_sysfs import read_devices
from ansible_collections.hpcfabric.cluster.plugins.module_utils.ibstat import parse_ibstat, summarize
from ansible_collections.hpcfabric.cluster.plugins.module_utils.os_vars import os_vars_files
from ansible_collections.hpcfabric.cluster.plugins.module_utils.rdma_stack import (
    doca_repository,
    inactive_ports,
    installed_core_packages,
)

ROLE = Path(__file__).resolve().parents[4] / 'roles' / 'rdma'
# the role's own default, so a change there is tested here
DOCA_PATTERN = yaml.safe_load((ROLE / 'defaults' / 'main.yml').read_text())['rdma_doca_version_pattern']
DEBIAN_CORE = yaml.safe_load((ROLE / 'vars' / 'Debian.yml').read_text())['__rdma_core_packages']
REDHAT_CORE = yaml.safe_load((ROLE / 'vars' / 'RedHat.yml').read_text())['__rdma_core_packages']


def package(name, version, **more):
    """One entry of ansible_facts.packages[name], as package_facts sets it."""
    return dict({'name': name, 'version': version, 'source': 'apt'}, **more)


def test_debian_host_with_distribution_stack_only():
    # Debian 12's rdma-core is 44.0-2; perftest and unrelated packages are not rdma-core's
    installed = {'rdma-core': [package('rdma-core', '44.0-2')], 'libibverbs1': [package('libibverbs1', '44.0-2')],
                 'perftest': [package('perftest', '4.5.0.20-1')], 'openssh-server': [package('openssh-server', '1')]}
    assert installed_core_packages(installed, DEBIAN_CORE, DOCA_PATTERN) == [
        {'name': 'rdma-core', 'version': '44.0-2', 'label': 'rdma-core 44.0-2', 'doca': False},
        {'name': 'libibverbs1', 'version': '44.0-2', 'label': 'libibverbs1 44.0-2', 'doca': False},
    ]


def test_mixed_stacks_keep_the_core_list_order_and_every_installed_version():
    # DOCA 2.9.1's rdma-core build (the version molecule/rdma's TEST repository copies) beside the distribution's
    # ibacm, and a library installed for two architectures
    installed = {
        'ibacm': [package('ibacm', '44.0-2')],
        'ibverbs-providers': [package('ibverbs-providers', '2410mlnx54-1.2410068')],
        'rdma-core': [package('rdma-core', '2410mlnx54-1.2410068')],
        'libibverbs1': [package('libibverbs1', '2410mlnx54-1.2410068', arch='amd64'),
                        package('libibverbs1', '44.0-2', arch='i386')],
    }
    found = installed_core_packages(installed, DEBIAN_CORE, DOCA_PATTERN)
    assert [(p['label'], p['doca']) for p in found] == [
        ('rdma-core 2410mlnx54-1.2410068', True),
        ('ibacm 44.0-2', False),
        ('ibverbs-providers 2410mlnx54-1.2410068', True),
        ('libibverbs1 2410mlnx54-1.2410068', True),
        ('libibverbs1 44.0-2', False),
    ]


def test_rpm_versions_and_epochs():
    # RPM package_facts carry the version without the release: RHEL 9's 46.0, DOCA's 2410mlnx54
    installed = {'rdma-core': [package('rdma-core', '46.0', release='1.el9', source='rpm')],
                 'libibverbs': [package('libibverbs', '2410mlnx54', release='1.2410068', source='rpm')],
                 'librdmacm': [package('librdmacm', '1:2410mlnx54', source='rpm')]}
    found = installed_core_packages(installed, REDHAT_CORE, DOCA_PATTERN)
    assert [(p['name'], p['doca']) for p in found] == [('rdma-core', False), ('libibverbs', True), ('librdmacm', True)]


def test_pattern_matches_from_the_start_only():
    installed = {'rdma-core': [package('rdma-core', '50.0-2build2+2410')]}
    assert installed_core_packages(installed, ['rdma-core'], DOCA_PATTERN)[0]['doca'] is False


def test_no_package_installed():
    assert installed_core_packages({}, DEBIAN_CORE, DOCA_PATTERN) == []


def test_bad_pattern_is_named():
    with pytest.raises(ValueError, match=r"rdma_doca_version_pattern '\^\(\[0-9\]' is not a regular expression"):
        installed_core_packages({'rdma-core': [package('rdma-core', '1')]}, ['rdma-core'], '^([0-9]')


def test_packages_must_be_a_mapping():
    with pytest.raises(TypeError, match='ansible_facts.packages'):
        installed_core_packages(['rdma-core'], DEBIAN_CORE, DOCA_PATTERN)


def test_inactive_ports_from_sysfs(fixture_path):
    devices, _warnings = read_devices(str(fixture_path('sysfs', 'ib_mixed') / 'class' / 'infiniband'))
    assert inactive_ports(summarize(devices, 'sysfs')) == ['mlx5_10 port 1 is Down (physical state Polling)']


@pytest.mark.parametrize('name, expected', [
    ('h100_ndr_mixed_tabs.txt', ['mlx5_2 port 1 is Down (physical state Disabled)',
                                 'mlx5_7 port 1 is Down (physical state Disabled)',
                                 'mlx5_8 port 1 is Down (physical state Disabled)']),
    ('cx3_dual_port_polling_disabled.txt', ['mlx4_0 port 1 is Down (physical state Polling)',
                                            'mlx4_0 port 2 is Down (physical state Disabled)']),
    ('cx6dx_eth_100_two_cas.txt', []),
])
def test_inactive_ports_from_ibstat(fixture_text, name, expected):
    devices, _warnings = parse_ibstat(fixture_text('ibstat', name))
    assert inactive_ports(summarize(devices, 'ibstat')) == expected


def test_ports_in_number_order():
    ports = {str(n): {'state': 'Down', 'physical_state': 'Polling'} for n in (10, 2, 1)}
    assert inactive_ports({'devices': {'sw0': {'ports': ports}}}) == [
        'sw0 port 1 is Down (physical state Polling)', 'sw0 port 2 is Down (physical state Polling)',
        'sw0 port 10 is Down (physical state Polling)']


def test_inactive_ports_needs_ib_facts():
    with pytest.raises(TypeError, match='ansible_facts.ib'):
        inactive_ports({'ca_names': ['mlx5_0']})


# the facts os_vars_files reads, as setup reports them on each supported OS
OS = {'debian12': ('Debian', 'Debian', '12'), 'debian13': ('Debian', 'Debian', '13'),
      'ubuntu2204': ('Debian', 'Ubuntu', '22'), 'ubuntu2404': ('Debian', 'Ubuntu', '24'),
      'rhel8': ('RedHat', 'RedHat', '8'), 'rhel9': ('RedHat', 'RedHat', '9'), 'rocky9': ('RedHat', 'Rocky', '9')}
DEBIAN_FAMILY = [key for key, facts in OS.items() if facts[0] == 'Debian']
REDHAT_FAMILY = [key for key, facts in OS.items() if facts[0] == 'RedHat']


def role_vars(os_key):
    """The rdma role's variables for an OS, loaded as set_vars.yml loads them."""
    family, name, major = OS[os_key]
    data = {}
    for path in os_vars_files(str(ROLE), {'os_family': family, 'distribution': name, 'distribution_major_version': major}):
        data.update(yaml.safe_load(Path(path).read_text()))
    return data


def test_inbox_packages_and_package_manager_per_os():
    deb = ['rdma-core', 'ibverbs-providers', 'ibverbs-utils', 'rdmacm-utils', 'infiniband-diags', 'perftest']
    rpm = ['rdma-core', 'libibverbs-utils', 'librdmacm-utils', 'infiniband-diags', 'perftest']
    for key in DEBIAN_FAMILY:
        assert (role_vars(key)['__rdma_inbox_packages'], role_vars(key)['__rdma_repo_kind']) == (deb, 'apt'), key
    for key in REDHAT_FAMILY:
        assert (role_vars(key)['__rdma_inbox_packages'], role_vars(key)['__rdma_repo_kind']) == (rpm, 'dnf'), key


def test_the_one_stack_check_knows_each_family_s_library_names():
    # Ubuntu 24.04 and Debian 13 renamed two libraries for 64-bit time_t
    for key in DEBIAN_FAMILY:
        assert {'libibverbs1', 'librdmacm1', 'librdmacm1t64', 'libibnetdisc5', 'libibnetdisc5t64',
                'ibverbs-providers'} <= set(role_vars(key)['__rdma_core_packages'])
    for key in REDHAT_FAMILY:
        core = set(role_vars(key)['__rdma_core_packages'])
        assert {'rdma-core', 'libibverbs', 'librdmacm', 'libibumad', 'infiniband-diags', 'srp_daemon'} <= core
        assert 'libibverbs1' not in core


DOCA_URL = 'https://linux.mellanox.com/public/repo/doca/2.9.1/ubuntu24.04/x86_64/'


def test_doca_apt_repository_is_a_signed_flat_source_pinned_to_its_origin():
    assert doca_repository(DOCA_URL, 'apt') == {
        'files': {'key': '/etc/apt/keyrings/hpcfabric-doca.asc', 'repo': '/etc/apt/sources.list.d/hpcfabric-doca.sources',
                  'pin': '/etc/apt/preferences.d/hpcfabric-doca.pref'},
        'apt_source': {'Types': 'deb', 'URIs': DOCA_URL, 'Suites': './', 'Signed-By': '/etc/apt/keyrings/hpcfabric-doca.asc'},
        'apt_pin': {'origin': 'linux.mellanox.com', 'priority': 600}}


def test_doca_apt_pin_of_a_file_repository_has_apt_s_empty_origin():
    assert doca_repository('file:///srv/doca/', 'apt')['apt_pin'] == {'origin': '', 'priority': 600}


def test_doca_dnf_repository_is_gpg_checked_and_preferred_over_the_os():
    url = 'https://linux.mellanox.com/public/repo/doca/2.9.1/rhel9.2/x86_64/'
    assert doca_repository(url, 'dnf') == {
        'files': {'key': '/etc/pki/rpm-gpg/RPM-GPG-KEY-hpcfabric-doca', 'repo': '/etc/yum.repos.d/hpcfabric-doca.repo'},
        'dnf_repo': {'name': 'hpcfabric-doca', 'description': 'NVIDIA DOCA-OFED', 'baseurl': url, 'gpgcheck': True,
                     'gpgkey': 'file:///etc/pki/rpm-gpg/RPM-GPG-KEY-hpcfabric-doca', 'priority': 10}}


@pytest.mark.parametrize('url, kind, message', [
    (None, 'apt', 'rdma_doca_repo_url must be a URL, got None'),
    ('', 'dnf', "rdma_doca_repo_url must be a URL, got ''"),
    (DOCA_URL, 'zypper', "repository kind must be one of apt, dnf, got 'zypper'"),
])
def test_doca_repository_refuses_what_it_cannot_write(url, kind, message):
    with pytest.raises(ValueError, match=message):
        doca_repository(url, kind)
