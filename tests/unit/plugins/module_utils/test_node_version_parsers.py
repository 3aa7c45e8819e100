# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""node_versions parsers on recorded outputs (tests/unit/fixtures/node_versions/SOURCES.md)."""

from __future__ import annotations

import pytest

from ansible_collections.hpcfabric.cluster.plugins.module_utils import node_versions

NAMES = ['rdma-core', 'ibverbs-providers', 'libibverbs1', 'libibverbs', 'doca-ofed', 'mlnx-ofed-kernel-utils']


@pytest.mark.parametrize('name, version', [
    ('nvidia-version-open-565.txt', '565.57.01'),
    ('nvidia-version-proprietary-384.txt', '384.98'),
    ('nvidia-version-jetson-aarch64.txt', '35.3.1'),
])
def test_nvidia_driver(fixture_text, name, version):
    assert node_versions.nvidia_driver(fixture_text('node_versions', name)) == version


def test_nvidia_driver_with_terminal_escapes(fixture_text):
    text = '\x1b[0m' + fixture_text('node_versions', 'nvidia-version-open-565.txt')
    assert node_versions.nvidia_driver(text) == '565.57.01'


@pytest.mark.parametrize('text, line', [
    ('GCC version:  gcc version 13.3.0\n', 'GCC version:  gcc version 13.3.0'),
    ('NVRM version: NVIDIA UNIX Open Kernel Module for x86_64\n', 'NVRM version: NVIDIA UNIX Open Kernel Module for x86_64'),
    ('\n', None),
])
def test_nvidia_driver_without_a_version(text, line):
    with pytest.raises(node_versions.VersionParseError) as caught:
        node_versions.nvidia_driver(text)
    assert caught.value.line == line


@pytest.mark.parametrize('name, version', [
    ('ofed_info-s-mlnx-ofed.txt', 'MLNX_OFED_LINUX-23.07-0.5.1.2'),
    ('ofed_info-s-doca-ofed.txt', 'OFED-internal-24.07-0.3.5.0.110'),
])
def test_ofed_version(fixture_text, name, version):
    assert node_versions.ofed_version(fixture_text('node_versions', name)) == version


def test_ofed_version_of_something_else():
    with pytest.raises(node_versions.VersionParseError) as caught:
        node_versions.ofed_version('bash: ofed_info: command not found\n')
    assert caught.value.line == 'bash: ofed_info: command not found' and caught.value.lineno == 1


def test_vbios_with_header(fixture_text):
    assert node_versions.vbios_versions(fixture_text('node_versions', 'vbios-gtx780.csv')) == ({'0': '80.80.31.00.0D'}, [])


def test_vbios_without_header_and_a_gpu_without_one(fixture_text):
    versions, unreadable = node_versions.vbios_versions(fixture_text('node_versions', 'vbios-noheader.csv'))
    assert versions == {'0': '86.02.39.00.22', '1': '86.02.39.00.22', '2': None}
    assert unreadable == []


def test_vbios_unreadable_lines_are_listed(fixture_text):
    text = fixture_text('node_versions', 'vbios-noheader.csv') + 'Unable to determine the device handle for GPU3\n'
    versions, unreadable = node_versions.vbios_versions(text)
    assert len(versions) == 3 and unreadable == [(4, 'Unable to determine the device handle for GPU3')]


def test_vbios_without_any_gpu():
    with pytest.raises(node_versions.VersionParseError) as caught:
        node_versions.vbios_versions('NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.\n')
    assert caught.value.lineno == 1


def test_dpkg_versions(fixture_text):
    assert node_versions.dpkg_versions(fixture_text('node_versions', 'dpkg-query-bookworm.txt'), NAMES) == {
        'rdma-core': None, 'ibverbs-providers': '44.0-2', 'libibverbs1': '44.0-2', 'libibverbs': None,
        'doca-ofed': None, 'mlnx-ofed-kernel-utils': None}


def test_dpkg_removed_packages_and_several_architectures():
    text = 'rdma-core\trc \t44.0-2\nlibibverbs1\tii \t44.0-2\nlibibverbs1\tii \t44.0-2\nibverbs-providers\tii \t44.0-2\n' \
           'ibverbs-providers\tii \t44.0-1\ndoca-ofed\tun \t\n'
    assert node_versions.dpkg_versions(text, ['rdma-core', 'libibverbs1', 'ibverbs-providers', 'doca-ofed']) == {
        'rdma-core': None, 'libibverbs1': '44.0-2', 'ibverbs-providers': '44.0-1, 44.0-2', 'doca-ofed': None}


def test_rpm_versions(fixture_text):
    names = ['rdma-core', 'libibverbs', 'doca-ofed']
    assert node_versions.rpm_versions(fixture_text('node_versions', 'rpm-el7.txt'), names) == {
        'rdma-core': '17.2-3.el7', 'libibverbs': '17.2-3.el7', 'doca-ofed': None}


def test_components_name_per_device_values():
    assert node_versions.components(driver='565.57.01', packages={'rdma-core': None},
                                    firmware={'mlx5_0': '28.42.1000'}, vbios={'0': '96.00.74.00.10'}) == {
        'nvidia_driver': '565.57.01', 'cuda': None, 'ofed': None, 'package:rdma-core': None,
        'nic_firmware:mlx5_0': '28.42.1000', 'gpu_vbios:0': '96.00.74.00.10'}


def test_the_loaded_module_rule(fixture_text):
    proc = fixture_text('node_versions', 'nvidia-version-open-565.txt')
    assert node_versions.loaded_nvidia_driver('575.57.08\n', proc) == '575.57.08'
    assert node_versions.loaded_nvidia_driver('', proc) == '565.57.01'
    assert node_versions.loaded_nvidia_driver('', '') is None
    with pytest.raises(node_versions.VersionParseError, match='not a driver version'):
        node_versions.loaded_nvidia_driver('garbage\n', proc)
