# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""node_versions module: fake tools on PATH, a copied sysfs tree, saved text, missing tools, the failures."""

from __future__ import annotations

import os

from ansible_collections.hpcfabric.cluster.plugins.modules import node_versions

NAMES = ['rdma-core', 'ibverbs-providers', 'libibverbs1']


def cuda_home(tmp_path, version='12.4.1'):
    home = tmp_path / 'cuda'
    home.mkdir()
    (home / 'version.json').write_text('{"cuda": {"name": "CUDA SDK", "version": "%s"}}' % version)
    return str(home)


def test_reads_every_source(tools_only, run_module, tmp_path, fixture_path):
    tools_only({
        'dpkg-query': "cat '%s'; echo 'dpkg-query: no packages found matching rdma-core' >&2; exit 1"
                      % fixture_path('node_versions', 'dpkg-query-bookworm.txt'),
        'ofed_info': "[ \"$1\" = -s ] && cat '%s'" % fixture_path('node_versions', 'ofed_info-s-doca-ofed.txt'),
        'nvidia-smi': "[ \"$1\" = --query-gpu=index,vbios_version ] && [ \"$2\" = --format=csv,noheader ] && cat '%s'"
                      % fixture_path('node_versions', 'vbios-noheader.csv'),
    })
    args = {'packages': NAMES, 'cuda_home': cuda_home(tmp_path),
            'sysfs_root': str(fixture_path('sysfs', 'ib_mixed')),
            'nvidia_version_path': str(fixture_path('node_versions', 'nvidia-version-open-565.txt')),
            'nvidia_module_version_path': str(tmp_path / 'no-module')}
    result = run_module(node_versions, args)
    assert result['changed'] is False and result['warnings'] == []
    assert result['versions'] == {
        'nvidia_driver': '565.57.01', 'cuda': '12.4.1', 'ofed': 'OFED-internal-24.07-0.3.5.0.110',
        'package:rdma-core': None, 'package:ibverbs-providers': '44.0-2', 'package:libibverbs1': '44.0-2',
        'nic_firmware:mlx5_0': '20.41.1000', 'nic_firmware:mlx5_10': '28.39.1002', 'nic_firmware:mlx5_2': '22.29.2002',
        'gpu_vbios:0': '86.02.39.00.22', 'gpu_vbios:1': '86.02.39.00.22', 'gpu_vbios:2': None}
    assert run_module(node_versions, args, check_mode=True)['versions'] == result['versions']


def test_a_node_without_any_of_it_is_all_null(tools_only, run_module, tmp_path):
    tools_only({})
    result = run_module(node_versions, {'packages': NAMES, 'cuda_home': str(tmp_path / 'none'),
                                        'sysfs_root': str(tmp_path / 'sys'),
                                        'nvidia_version_path': str(tmp_path / 'no-driver'),
                                        'nvidia_module_version_path': str(tmp_path / 'no-module')})
    assert result.get('failed') is not True, result
    assert result['versions'] == {'nvidia_driver': None, 'cuda': None, 'ofed': None, 'package:rdma-core': None,
                                  'package:ibverbs-providers': None, 'package:libibverbs1': None}
    assert result['warnings'] == ['neither dpkg-query nor rpm found: no package versions']


def test_rpm_when_there_is_no_dpkg(tools_only, run_module, tmp_path, fixture_path):
    tools_only({'rpm': "cat '%s'; exit 1" % fixture_path('node_versions', 'rpm-el7.txt')})
    result = run_module(node_versions, {'packages': ['rdma-core', 'libibverbs', 'doca-ofed'],
                                        'cuda_home': str(tmp_path), 'sysfs_root': str(tmp_path),
                                        'nvidia_version_path': str(tmp_path / 'no-driver'),
                                        'nvidia_module_version_path': str(tmp_path / 'no-module')})
    assert result['versions']['package:rdma-core'] == '17.2-3.el7'
    assert result['versions']['package:doca-ofed'] is None


def test_a_failing_nvidia_smi_is_a_warning_and_no_vbios(tools_only, run_module, tmp_path):
    tools_only({
        'nvidia-smi': "echo 'NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.'; exit 9"})
    result = run_module(node_versions, {'packages': [], 'cuda_home': str(tmp_path), 'sysfs_root': str(tmp_path),
                                        'nvidia_version_path': str(tmp_path / 'no-driver'),
                                        'nvidia_module_version_path': str(tmp_path / 'no-module')})
    assert result['versions'] == {'nvidia_driver': None, 'cuda': None, 'ofed': None}
    assert len(result['warnings']) == 1 and 'exited 9' in result['warnings'][0]
    assert 'no VBIOS versions' in result['warnings'][0]


def test_saved_text_runs_nothing(tools_only, run_module, tmp_path, fixture_text):
    tools_only({'nvidia-smi': 'exit 99', 'ofed_info': 'exit 99', 'dpkg-query': 'exit 99'})
    result = run_module(node_versions, {
        'packages': ['rdma-core', 'libibverbs', 'doca-ofed'],
        'nvidia_version_output': fixture_text('node_versions', 'nvidia-version-proprietary-384.txt'),
        'ofed_info_output': fixture_text('node_versions', 'ofed_info-s-mlnx-ofed.txt'),
        'vbios_output': fixture_text('node_versions', 'vbios-gtx780.csv'),
        'packages_output': fixture_text('node_versions', 'rpm-el7.txt')})
    assert result['warnings'] == []
    assert result['versions'] == {'nvidia_driver': '384.98', 'cuda': None, 'ofed': 'MLNX_OFED_LINUX-23.07-0.5.1.2',
                                  'package:rdma-core': '17.2-3.el7', 'package:libibverbs': '17.2-3.el7',
                                  'package:doca-ofed': None, 'gpu_vbios:0': '80.80.31.00.0D'}


def test_saved_dpkg_text_is_told_from_rpm(run_module, fixture_text):
    result = run_module(node_versions, {'packages': ['libibverbs1', 'rdma-core'],
                                        'packages_output': fixture_text('node_versions', 'dpkg-query-bookworm.txt')})
    assert (result['versions']['package:libibverbs1'], result['versions']['package:rdma-core']) == ('44.0-2', None)


def test_unparseable_saved_text_fails_naming_it(run_module):
    result = run_module(node_versions, {'ofed_info_output': 'ofed_info: command not found\n'})
    assert result['failed'] is True
    assert result['msg'] == "cannot parse ofed_info_output: not a \"<name>-<version>:\" line: 'ofed_info: command not found'"
    assert result['lineno'] == 1


def test_a_cuda_home_without_a_version_is_a_warning(run_module, tmp_path):
    home = tmp_path / 'cuda'
    home.mkdir()
    (home / 'version.json').write_text('{"libcublas": {}}')
    result = run_module(node_versions, {'packages': [], 'cuda_home': str(home), 'vbios_output': ''})
    assert result['versions']['cuda'] is None
    assert result['warnings'] and result['warnings'][0].startswith('CUDA toolkit in %s' % home)
    assert os.path.isdir(str(home))


def test_the_loaded_module_version_comes_first(tools_only, run_module, tmp_path, fixture_path):
    tools_only({})
    (tmp_path / 'module-version').write_text('575.57.08\n')
    result = run_module(node_versions, {'packages': [], 'cuda_home': str(tmp_path), 'sysfs_root': str(tmp_path),
                                        'nvidia_module_version_path': str(tmp_path / 'module-version'),
                                        'nvidia_version_path': str(fixture_path('node_versions',
                                                                                'nvidia-version-open-565.txt'))})
    assert result['versions']['nvidia_driver'] == '575.57.08'
