# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The rdma role's stack classification: installed rdma-core packages by build, ports not Active."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.hpcfabric.cluster.plugins.module_utils.ib_sysfs import read_devices
from ansible_collections.hpcfabric.cluster.plugins.module_utils.ibstat import parse_ibstat, summarize
from ansible_collections.hpcfabric.cluster.plugins.module_utils.rdma_stack import (
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
