# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The nvidia_driver role's decisions: PCI classification, package names per OS, CUDA checks, version resolution."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.hpcfabric.cluster.plugins.module_utils.os_vars import os_vars_files
from ansible_collections.hpcfabric.cluster.plugins.module_utils import nvidia_driver as nd

ROLE = Path(__file__).resolve().parents[4] / 'roles' / 'nvidia_driver'
CUDA = 'https://developer.download.nvidia.com/compute/cuda/repos/'

H100 = {'slot': '0000:17:00.0', 'class': '0x030200', 'device': '0x2330'}
NVSWITCH = {'slot': '0000:3b:00.0', 'class': '0x068000', 'device': '0x22a3'}
V100 = {'slot': '0000:5f:00.0', 'class': '0x030200', 'device': '0x1db1'}
T4 = {'slot': '0000:86:00.0', 'class': '0x030200', 'device': '0x1eb8'}
VGA = {'slot': '0000:03:00.0', 'class': '0x030000', 'device': '0x1e02'}
AUDIO = {'slot': '0000:17:00.1', 'class': '0x040300', 'device': '0x10f0'}


# --- PCI ------------------------------------------------------------------------------------------------------------

def test_gpus_are_display_and_3d_controllers_and_nvswitches_class_0680():
    pci = nd.classify_pci([VGA, H100, AUDIO, NVSWITCH])
    assert pci['gpus'] == [VGA, H100]
    assert pci['nvswitches'] == [NVSWITCH]
    assert pci['gpu_count'] == 2


def test_pre_turing_is_a_device_id_below_0x1e00():
    # 0x1db1 (V100) is Volta; 0x1e02 (TU102) is the first Turing; 0x1eb8 (T4) is Turing
    pci = nd.classify_pci([V100, VGA, T4])
    assert pci['pre_turing'] == ['0000:5f:00.0 (0x1db1)']


def test_a_device_id_that_is_not_hex_names_the_function():
    with pytest.raises(ValueError, match=r"0000:17:00.0: device id 'zz' is not hexadecimal"):
        nd.classify_pci([dict(H100, device='zz')])


def write_function(root, slot, vendor, pci_class=None, device=None):
    function = root / slot
    function.mkdir()
    for name, value in (('vendor', vendor), ('class', pci_class), ('device', device)):
        if value is not None:
            (function / name).write_text(value + '\n')


def test_read_pci_functions_keeps_nvidia_in_slot_order_lowercased(tmp_path):
    write_function(tmp_path, '0000:3b:00.0', '0x10de', '0x068000', '0x22A3')
    write_function(tmp_path, '0000:17:00.0', '0x10de', '0x030200', '0x2330')
    write_function(tmp_path, '0000:18:00.0', '0x15b3', '0x020000', '0x1021')
    # no vendor file (not a PCI function), no device file: passed over
    write_function(tmp_path, '0000:00:00.0', None)
    write_function(tmp_path, '0000:19:00.0', '0x10de', '0x030200')
    assert nd.read_pci_functions(str(tmp_path)) == [
        {'slot': '0000:17:00.0', 'class': '0x030200', 'device': '0x2330'},
        {'slot': '0000:3b:00.0', 'class': '0x068000', 'device': '0x22a3'},
    ]


def test_read_pci_functions_refuses_a_missing_directory(tmp_path):
    with pytest.raises(ValueError, match='no such directory: %s' % (tmp_path / 'nope')):
        nd.read_pci_functions(str(tmp_path / 'nope'))


# pci.ids (github.com/pciutils/pciids, pci.ids, commit 006181e2c5d5): 10de:3182 "GB110 [B300 SXM6 AC]",
# 10de:2901 "GB100 [B200]", 10de:2941 "GB100 [HGX GB200]", 10de:22a3 "GH100 [H100 NVSwitch]", 15b3:1021 "MT2910 Family
# [ConnectX-7]". Classes as NVIDIA's Fabric Manager user guide (release 2.3) shows them with lspci: the GPUs are 3D
# controllers, the HGX B200/B300 baseboard's ConnectX-7 bridge functions InfiniBand controllers (class 0x0207).
B300 = {'slot': '0000:1b:00.0', 'class': '0x030200', 'device': '0x3182'}
B200 = {'slot': '0000:1b:00.0', 'class': '0x030200', 'device': '0x2901'}
GB200 = {'slot': '0009:01:00.0', 'class': '0x030200', 'device': '0x2941'}
BRIDGE = {'slot': '0000:05:00.1', 'class': '0x020700', 'device': '0x1021'}


def vpd_image(vendor_fields):
    """A VPD image in the PCI format (identifier string tag 0x82, read-only keywords tag 0x90, end tag 0x78), with
    the vendor-specific keywords given. No real dump of a bridge's VPD is published: the guide names the field (SMDL)
    and its value (SW_MNG); the rest is what a ConnectX card's VPD holds (PN, EC, SN)."""
    def large(tag, data):
        return bytes([tag, len(data) & 0xff, len(data) >> 8]) + data
    keywords = b''.join(key.encode() + bytes([len(value)]) + value.encode() for key, value in
                        [('PN', 'MCX750500B-0D00'), ('EC', 'A6'), ('SN', 'MT2402X00001')] + list(vendor_fields))
    return large(0x82, b'NVIDIA ConnectX-7 HHHL adapter card') + large(0x90, keywords + b'RV\x01\x00') + b'\x78'


def test_a_b300_or_b200_board_has_fourth_generation_nvswitches_though_none_is_on_the_bus():
    pci = nd.classify_pci([B300, dict(B300, slot='0000:43:00.0')])
    assert (pci['nvswitches'], pci['nvswitch_gen4']) == ([], True)
    assert pci['nvswitch_gen4_evidence'] == ['0000:1b:00.0 GPU 0x3182 (B300 SXM6 AC)',
                                             '0000:43:00.0 GPU 0x3182 (B300 SXM6 AC)']
    assert nd.classify_pci([B200])['nvswitch_gen4_evidence'] == ['0000:1b:00.0 GPU 0x2901 (B200)']


def test_the_nvlink_management_bridge_alone_tells_the_board():
    pci = nd.classify_pci([], [BRIDGE])
    assert pci['nvlink_bridges'] == [BRIDGE]
    assert pci['nvswitch_gen4_evidence'] == ['0000:05:00.1 NVLink management bridge 0x1021 (VPD SW_MNG)']


def test_hopper_with_nvswitches_on_the_bus_and_gb200_trays_are_not_fourth_generation_boards():
    # an HGX H100 shows its third-generation NVSwitches as PCI bridges; a GB200 compute tray has no switch of its own
    for functions in ([H100, NVSWITCH], [GB200], [T4]):
        pci = nd.classify_pci(functions)
        assert (pci['nvswitch_gen4'], pci['nvswitch_gen4_evidence'], pci['nvlink_bridges']) == (False, [], [])


def test_vpd_marks_a_bridge_port_by_its_sw_mng_field():
    assert nd.vpd_marks_nvlink_management(vpd_image([('V3', 'SMDL=SW_MNG')]))
    assert not nd.vpd_marks_nvlink_management(vpd_image([('V3', 'SMDL=')]))
    assert not nd.vpd_marks_nvlink_management(b'')


def test_read_nvlink_bridges_keeps_the_marked_connectx_functions(tmp_path):
    write_function(tmp_path, '0000:05:00.0', '0x15b3', '0x020700', '0x1021')
    write_function(tmp_path, '0000:05:00.1', '0x15b3', '0x020700', '0x1021')
    write_function(tmp_path, '0000:17:00.0', '0x15b3', '0x020000', '0x1021')
    write_function(tmp_path, '0000:1b:00.0', '0x10de', '0x030200', '0x3182')
    # the full-capability PF of the bridge has no SW_MNG, the limited PF has; a fabric NIC has none
    (tmp_path / '0000:05:00.0' / 'vpd').write_bytes(vpd_image([('V3', 'SMDL=')]))
    (tmp_path / '0000:05:00.1' / 'vpd').write_bytes(vpd_image([('V3', 'SMDL=SW_MNG')]))
    (tmp_path / '0000:17:00.0' / 'vpd').write_bytes(vpd_image([]))
    # a GPU never counts, whatever its VPD says
    (tmp_path / '0000:1b:00.0' / 'vpd').write_bytes(b'SW_MNG')
    assert nd.read_nvlink_bridges(str(tmp_path)) == [{'slot': '0000:05:00.1', 'class': '0x020700', 'device': '0x1021'}]


def test_read_nvlink_bridges_counts_an_unreadable_vpd_as_unmarked(tmp_path):
    write_function(tmp_path, '0000:05:00.1', '0x15b3', '0x020700', '0x1021')
    (tmp_path / '0000:05:00.1' / 'vpd').mkdir()
    assert nd.read_nvlink_bridges(str(tmp_path)) == []


# --- CUDA -----------------------------------------------------------------------------------------------------------

def test_cuda_available_from_the_first_release_of_the_repository():
    assert nd.cuda_available('13.1') == ['13.1', '13.2', '13.3']
    assert nd.cuda_available('11.7')[:3] == ['11.7', '11.8', '12.0']


def test_cuda_offered_replaces_the_table_and_an_unknown_first_offers_nothing():
    assert nd.cuda_available('12.5', ['13.4']) == ['13.4']
    assert nd.cuda_available('12.5', []) == []
    assert nd.cuda_available('') == []
    assert nd.cuda_available('10.2') == []


def test_cuda_needs_its_minimum_branch():
    assert nd.cuda_branch_problems(['12.8', '13.0'], '575') == ['CUDA 13.0 needs driver branch 580 or later']
    assert nd.cuda_branch_problems(['11.8', '12.0'], '470') == ['CUDA 12.0 needs driver branch 525 or later']
    assert nd.cuda_branch_problems(['13.0'], '580') == []


def test_a_branch_that_is_not_digits_is_refused():
    with pytest.raises(ValueError, match="branch '57x' is not a driver branch"):
        nd.cuda_branch_problems([], '57x')


def test_toolkit_packages():
    assert nd.toolkit_packages(['12.8', '13.1']) == ['cuda-toolkit-12-8', 'cuda-toolkit-13-1']


# --- package names --------------------------------------------------------------------------------------------------

def test_debian_names_carry_the_branch_in_the_fabric_manager_up_to_575():
    assert nd.package_names('debian', 'cuda_repo', '575')['fabricmanager_package'] == 'nvidia-fabricmanager-575'
    assert nd.package_names('debian', 'cuda_repo', '580')['fabricmanager_package'] == 'nvidia-fabricmanager'


def test_the_pinning_package_follows_the_exact_version_when_one_is_asked_for():
    assert nd.package_names('debian', 'cuda_repo', '580', '580.95.05')['pinning_package'] == \
        'nvidia-driver-pinning-580.95.05'
    assert nd.package_names('ubuntu', 'cuda_repo', '580')['pinning_package'] == 'nvidia-driver-pinning-580'


def test_ubuntu_cuda_repo_drops_the_branch_from_names_at_590():
    assert nd.package_names('ubuntu', 'cuda_repo', '580', open_modules=False, kernel='6.8.0-45-generic') == {
        'userspace_packages': ['libnvidia-compute-580', 'nvidia-utils-580'],
        'module_packages': ['nvidia-dkms-580'],
        'modules_pinned': True,
        'persistenced_packages': ['nvidia-compute-utils-580'],
        'fabricmanager_package': 'nvidia-fabricmanager',
        'nvlink5_packages': ['nvlsm', 'libibumad3', 'infiniband-diags'],
        'pinning_package': 'nvidia-driver-pinning-580',
        'unpinned_packages': [],
        'headers_packages': ['linux-headers-6.8.0-45-generic'],
        'module_stream': '',
    }
    names = nd.package_names('ubuntu', 'cuda_repo', '590', kernel='6.8.0-45-generic')
    assert names['userspace_packages'] == ['libnvidia-compute', 'nvidia-utils']
    assert names['module_packages'] == ['nvidia-dkms-open']


def test_canonical_flavour_comes_from_the_kernel_unless_given():
    names = nd.package_names('ubuntu', 'canonical', '580', kernel='6.8.0-45-generic')
    assert names['unpinned_packages'] == ['linux-modules-nvidia-580-server-open-generic']
    names = nd.package_names('ubuntu', 'canonical', '570', open_modules=False, kernel='6.8.0-45-generic',
                             flavour='generic-hwe-24.04')
    assert names['module_packages'] == ['linux-modules-nvidia-570-server-6.8.0-45-generic']
    assert names['unpinned_packages'] == ['linux-modules-nvidia-570-server-generic-hwe-24.04']
    assert names['modules_pinned'] is False


def test_redhat_stream_and_kmod_follow_open_modules():
    assert nd.package_names('redhat', 'cuda_repo', '580')['module_stream'] == 'nvidia-driver:580-open'
    names = nd.package_names('redhat', 'cuda_repo', '575', open_modules=False)
    assert names['module_stream'] == 'nvidia-driver:575-dkms'
    assert names['module_packages'] == ['kmod-nvidia-latest-dkms']
    assert names['pinning_package'] == ''


def test_an_unknown_scheme_is_refused():
    with pytest.raises(ValueError, match="package scheme 'suse' is none of debian, ubuntu, redhat"):
        nd.package_names('suse', 'cuda_repo', '580')


def test_repository_mirror_loses_extra_slashes_and_arm_uses_sbsa():
    assert nd.repository('ubuntu2404', 'aarch64', key_file='cuda-keyring_1.1-1_all.deb') == {
        'arch': 'sbsa', 'name': 'cuda-ubuntu2404-sbsa', 'url': CUDA + 'ubuntu2404/sbsa/',
        'keyring_url': CUDA + 'ubuntu2404/sbsa/cuda-keyring_1.1-1_all.deb'}
    repo = nd.repository('debian12', 'x86_64', url='http://mirror/cuda//', key_file='k.deb')
    assert (repo['url'], repo['keyring_url']) == ('http://mirror/cuda/', 'http://mirror/cuda/k.deb')
    assert nd.repository('rhel9', 'x86_64', keyring_url='http://keys/D42D0685.pub')['keyring_url'] == \
        'http://keys/D42D0685.pub'


def test_plan_package_sets_and_services():
    plan = nd.driver_plan('debian', 'cuda_repo', '580', persistenced=False, fabricmanager='never',
                          nvswitch_count=4, dcgm_package='datacenter-gpu-manager-4-cuda12', extra=['nvidia-imex', 'jq'])
    # IMEX is built for one driver version: it is pinned and held with the driver, jq is not
    assert plan['pinned_packages'] == ['nvidia-driver-cuda', 'nvidia-kernel-open-dkms', 'nvidia-imex']
    assert plan['other_packages'] == ['datacenter-gpu-manager-4-cuda12', 'jq']
    assert plan['watched_packages'] == ['nvidia-driver-cuda', 'nvidia-kernel-open-dkms', 'nvidia-imex']
    assert plan['services'] == ['nvidia-dcgm']
    assert plan['fabricmanager_enabled'] is False
    assert plan['version_package'] == 'nvidia-driver-cuda'


def test_plan_reports_cuda_not_offered_and_too_new_for_the_branch():
    plan = nd.driver_plan('debian', 'cuda_repo', '575', cuda_versions=['12.8', '13.0'], cuda_first='13.1')
    assert plan['cuda_not_offered'] == ['12.8', '13.0']
    assert plan['cuda_branch_problems'] == ['CUDA 13.0 needs driver branch 580 or later']
    assert plan['other_packages'] == ['cuda-toolkit-12-8', 'cuda-toolkit-13-0']


def test_a_fourth_generation_board_gets_the_fabric_manager_nvlsm_and_ib_umad_without_nvswitches_on_the_bus():
    plan = nd.driver_plan('ubuntu', 'cuda_repo', '580', kernel='6.8.0-45-generic', nvswitch_count=0,
                          nvswitch_gen4=True)
    assert (plan['fabricmanager_enabled'], plan['nvlink5_enabled']) == (True, True)
    assert plan['pinned_packages'][-1] == 'nvidia-fabricmanager'
    assert plan['other_packages'] == ['nvlsm', 'libibumad3', 'infiniband-diags']
    assert plan['watched_packages'][-1] == 'nvlsm'
    assert plan['boot_modules'] == ['ib_umad']
    # the fabric manager's unit starts NVLSM: no service of its own
    assert plan['services'] == ['nvidia-persistenced', 'nvidia-fabricmanager']
    assert plan['nvlink5_problems'] == []


def test_without_the_fabric_manager_a_fourth_generation_board_gets_no_nvlsm():
    plan = nd.driver_plan('debian', 'cuda_repo', '580', fabricmanager='never', nvswitch_gen4=True)
    assert (plan['fabricmanager_enabled'], plan['nvlink5_enabled'], plan['boot_modules']) == (False, False, [])
    assert 'nvlsm' not in plan['other_packages'] + plan['watched_packages']


def test_other_boards_keep_their_plan():
    # fabric manager always (switches not visible) on a non-NVLink-5 host: no NVLSM, no ib_umad
    plan = nd.driver_plan('debian', 'cuda_repo', '575', fabricmanager='always', nvswitch_count=0)
    assert (plan['fabricmanager_enabled'], plan['nvlink5_enabled'], plan['boot_modules']) == (True, False, [])
    assert plan['other_packages'] == [] and plan['nvlink5_problems'] == []


def test_a_fourth_generation_board_refuses_an_old_branch_proprietary_modules_and_a_source_without_nvlsm():
    plan = nd.driver_plan('ubuntu', 'canonical', '565', open_modules=False, kernel='6.8.0-45-generic',
                          nvswitch_gen4=True)
    variables = [p['variable'] for p in plan['nvlink5_problems']]
    assert variables == ['nvidia_driver_branch', 'nvidia_driver_open', 'nvidia_driver_source']
    assert plan['nvlink5_problems'][0]['problem'] == \
        'fourth-generation NVSwitch boards need driver branch 570 or later, the branch is 565'
    # nothing to install from: the NVLSM set is empty, the fabric manager stays
    assert plan['other_packages'][:2] == ['linux-modules-nvidia-565-server-6.8.0-45-generic',
                                          'linux-modules-nvidia-565-server-generic']
    # without the fabric manager, a source without NVLSM is no obstacle
    plan = nd.driver_plan('ubuntu', 'canonical', '580', kernel='6.8.0-45-generic', fabricmanager='never',
                          nvswitch_gen4=True)
    assert plan['nvlink5_problems'] == []


def test_extra_packages_built_for_one_driver_are_pinned_and_must_be_of_the_branch():
    coupled, other, problems = nd.split_extra(
        ['nvlink5-580', 'nvlink5', 'libnvsdm-575', 'nvidia-imex-580', 'nvidia-fabricmanager-570', 'libnvidia-nscq',
         'nvlink-580', 'cuda-drivers-fabricmanager-580', 'jq', 'cuda-toolkit-12-8', 'nvlsm'], '580')
    assert coupled == ['nvlink5-580', 'nvlink5', 'nvidia-imex-580', 'libnvidia-nscq', 'nvlink-580',
                       'cuda-drivers-fabricmanager-580']
    assert other == ['jq', 'cuda-toolkit-12-8', 'nvlsm']
    assert problems == ['libnvsdm-575 is built for branch 575', 'nvidia-fabricmanager-570 is built for branch 570']
    plan = nd.driver_plan('debian', 'cuda_repo', '580', extra=['libnvsdm-575'])
    assert plan['extra_branch_problems'] == ['libnvsdm-575 is built for branch 575']
    assert 'libnvsdm-575' not in plan['pinned_packages'] + plan['other_packages']


# The matrix the role's playbook test used to dump: each OS's variable files (layered the way tasks/set_vars.yml
# loads them) and the rules give the packages, repository and CUDA releases of that OS.
MATRIX = {
    'ubuntu2204_575': (
        {'os_family': 'Debian', 'distribution': 'Ubuntu', 'distribution_major_version': '22'},
        dict(branch='575', kernel='5.15.0-119-generic', nvswitch_count=1, cuda_versions=['12.8']),
        {'repo_url': CUDA + 'ubuntu2204/x86_64/', 'keyring_url': CUDA + 'ubuntu2204/x86_64/cuda-keyring_1.1-1_all.deb',
         'repo_name': 'cuda-ubuntu2204-x86_64', 'pinning_package': 'nvidia-driver-pinning-575',
         'pinned_packages': ['libnvidia-compute-575', 'nvidia-utils-575', 'nvidia-dkms-575-open',
                             'nvidia-compute-utils-575', 'nvidia-fabricmanager-575'],
         'other_packages': ['cuda-toolkit-12-8'], 'headers_packages': ['linux-headers-5.15.0-119-generic'],
         'fabricmanager_enabled': True, 'cuda_first': '11.7'}),
    'ubuntu2404_590_arm': (
        {'os_family': 'Debian', 'distribution': 'Ubuntu', 'distribution_major_version': '24'},
        dict(branch='590', kernel='6.8.0-45-generic', architecture='aarch64', cuda_versions=['13.1']),
        {'repo_url': CUDA + 'ubuntu2404/sbsa/', 'pinning_package': 'nvidia-driver-pinning-590',
         'userspace_packages': ['libnvidia-compute', 'nvidia-utils'], 'module_packages': ['nvidia-dkms-open'],
         'persistenced_packages': ['nvidia-compute-utils'], 'fabricmanager_package': 'nvidia-fabricmanager',
         # one GPU, no NVSwitch: no fabric manager
         'fabricmanager_enabled': False,
         'pinned_packages': ['libnvidia-compute', 'nvidia-utils', 'nvidia-dkms-open', 'nvidia-compute-utils'],
         'other_packages': ['cuda-toolkit-13-1'], 'cuda_first': '12.5'}),
    'ubuntu2404_canonical': (
        {'os_family': 'Debian', 'distribution': 'Ubuntu', 'distribution_major_version': '24'},
        dict(source='canonical', branch='580', kernel='6.8.0-45-generic', nvswitch_count=1,
             dcgm_package='datacenter-gpu-manager'),
        {'pinning_package': '',
         'userspace_packages': ['nvidia-headless-no-dkms-580-server-open', 'nvidia-utils-580-server'],
         # the per-kernel module package is versioned by the kernel: installed, not pinned to the driver version
         'module_packages': ['linux-modules-nvidia-580-server-open-6.8.0-45-generic'],
         'pinned_packages': ['nvidia-headless-no-dkms-580-server-open', 'nvidia-utils-580-server',
                             'nvidia-compute-utils-580-server', 'nvidia-fabricmanager-580'],
         'other_packages': ['linux-modules-nvidia-580-server-open-6.8.0-45-generic',
                            'linux-modules-nvidia-580-server-open-generic', 'datacenter-gpu-manager'],
         'watched_packages': ['nvidia-headless-no-dkms-580-server-open', 'nvidia-utils-580-server',
                              'nvidia-compute-utils-580-server', 'nvidia-fabricmanager-580',
                              'linux-modules-nvidia-580-server-open-6.8.0-45-generic'],
         'services': ['nvidia-persistenced', 'nvidia-fabricmanager', 'nvidia-dcgm']}),
    'debian12_proprietary': (
        {'os_family': 'Debian', 'distribution': 'Debian', 'distribution_major_version': '12'},
        dict(branch='580', open_modules=False, kernel='6.1.0-26-amd64', fabricmanager='always'),
        {'repo_url': CUDA + 'debian12/x86_64/', 'repo_name': 'cuda-debian12-x86_64',
         'pinned_packages': ['nvidia-driver-cuda', 'nvidia-kernel-dkms', 'nvidia-persistenced', 'nvidia-fabricmanager'],
         'cuda_first': '12.2'}),
    'debian13': (
        {'os_family': 'Debian', 'distribution': 'Debian', 'distribution_major_version': '13'},
        dict(branch='580', kernel='6.12.48+deb13-amd64', cuda_versions=['13.1']),
        {'repo_url': CUDA + 'debian13/x86_64/', 'keyring_url': CUDA + 'debian13/x86_64/cuda-keyring_1.1-1_all.deb',
         'pinned_packages': ['nvidia-driver-cuda', 'nvidia-kernel-open-dkms', 'nvidia-persistenced'],
         'cuda_available': ['13.1', '13.2', '13.3'], 'cuda_not_offered': []}),
    'rhel8_550': (
        {'os_family': 'RedHat', 'distribution': 'RedHat', 'distribution_major_version': '8'},
        dict(branch='550', kernel='4.18.0-553.el8_10.x86_64', nvswitch_count=2, cuda_versions=['12.4']),
        {'repo_url': CUDA + 'rhel8/x86_64/', 'keyring_url': CUDA + 'rhel8/x86_64/D42D0685.pub',
         'repo_name': 'cuda-rhel8-x86_64', 'module_stream': 'nvidia-driver:550-open',
         'pinned_packages': ['nvidia-driver-cuda', 'kmod-nvidia-open-dkms', 'nvidia-persistenced',
                             'nvidia-fabric-manager'],
         'headers_packages': ['kernel-devel-4.18.0-553.el8_10.x86_64', 'kernel-headers-4.18.0-553.el8_10.x86_64'],
         'cuda_first': '11.0', 'cuda_branch_problems': []}),
    # an HGX B300 (no NVSwitch on the bus) on Ubuntu 24.04 and an HGX B200 on Rocky 9: the fabric manager at the
    # driver's version, NVLSM and the OS's umad library and infiniband-diags
    'ubuntu2404_b300': (
        {'os_family': 'Debian', 'distribution': 'Ubuntu', 'distribution_major_version': '24'},
        dict(branch='580', kernel='6.8.0-45-generic', nvswitch_gen4=True, cuda_versions=['12.9']),
        {'pinned_packages': ['libnvidia-compute-580', 'nvidia-utils-580', 'nvidia-dkms-580-open',
                             'nvidia-compute-utils-580', 'nvidia-fabricmanager'],
         'other_packages': ['nvlsm', 'libibumad3', 'infiniband-diags', 'cuda-toolkit-12-9'],
         'boot_modules': ['ib_umad'], 'nvlink5_problems': []}),
    'rocky9_b200': (
        {'os_family': 'RedHat', 'distribution': 'Rocky', 'distribution_major_version': '9'},
        dict(branch='575', kernel='5.14.0-427.13.1.el9_4.x86_64', nvswitch_gen4=True),
        {'pinned_packages': ['nvidia-driver-cuda', 'kmod-nvidia-open-dkms', 'nvidia-persistenced',
                             'nvidia-fabric-manager'],
         'other_packages': ['nvlsm', 'libibumad', 'infiniband-diags'], 'boot_modules': ['ib_umad']}),
    'rocky9_575_dkms': (
        {'os_family': 'RedHat', 'distribution': 'Rocky', 'distribution_major_version': '9'},
        dict(branch='575', open_modules=False, kernel='5.14.0-427.13.1.el9_4.x86_64'),
        {'repo_url': CUDA + 'rhel9/x86_64/', 'module_stream': 'nvidia-driver:575-dkms',
         'module_packages': ['kmod-nvidia-latest-dkms'], 'cuda_first': '11.7'}),
}


def os_plan(facts, settings):
    """driver_plan with the data of the role's per-OS variable files, layered as tasks/set_vars.yml does."""
    data = {}
    for path in os_vars_files(str(ROLE), facts):
        data.update(yaml.safe_load(Path(path).read_text()))
    settings = dict({'source': 'cuda_repo'}, **settings)
    return nd.driver_plan(
        data['__nvidia_driver_package_scheme'], cuda_first=data['__nvidia_driver_cuda_first'],
        repo_dir=data['__nvidia_driver_repo_dir'], key_file=data['__nvidia_driver_repo_key_file'], **settings)


@pytest.mark.parametrize('case', sorted(MATRIX))
def test_each_os_gets_its_packages_repository_and_cuda_releases(case):
    facts, settings, expected = MATRIX[case]
    plan = os_plan(facts, settings)
    if 'cuda_first' in expected:
        assert plan['cuda_available'][0] == expected.pop('cuda_first')
    assert {key: plan[key] for key in expected} == expected


def test_no_two_variable_files_of_the_role_are_the_same():
    texts = [p.read_text() for p in (ROLE / 'vars').glob('*.yml')]
    assert len(set(texts)) == len(texts)


# --- offers and installed versions ----------------------------------------------------------------------------------

# apt-cache madison prints "<name> | <version> | <source> Packages|Sources", names right-aligned and versions padded
# (recorded on a Debian 12 host: "      dpkg |    1.21.23 | http://deb.debian.org/debian bookworm/main amd64
# Packages"); a flat repository such as NVIDIA's shows its URL and " Packages". The lines below are in that shape.
MADISON = [
    '  nvidia-driver-cuda | 580.65.06-1 | https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64  Packages',
    '  nvidia-driver-cuda | 575.64.05-1 | https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64  Packages',
    '  nvidia-driver-cuda | 575.57.08-1 | https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64  Packages',
    '  nvidia-driver-cuda | 575.57.08-1 | http://deb.example/debian bookworm/non-free Sources',
    'nvidia-fabricmanager |  575.57.08-1 | https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64  Packages',
    '  nvidia-persistenced | 580.65.06-1 | https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64  Packages',
]
# the role's dnf repoquery --queryformat '%{name} | %{epoch}:%{version}-%{release}'
REPOQUERY = [
    'nvidia-driver-cuda | 3:575.57.08-1.el9',
    'nvidia-driver-cuda | 3:575.64.05-1.el9',
    'nvidia-driver-cuda | 3:575.9.1-1.el9',
    'nvidia-fabric-manager | 0:575.64.05-1',
    'kmod-nvidia-open-dkms | 3:575.64.05-1.el9',
]


def test_parse_offers_passes_over_source_packages_and_keeps_order():
    assert nd.parse_offers(MADISON + ['', 'N: Unable to locate package foo']) == {
        'nvidia-driver-cuda': ['580.65.06-1', '575.64.05-1', '575.57.08-1'],
        'nvidia-fabricmanager': ['575.57.08-1'],
        'nvidia-persistenced': ['580.65.06-1'],
    }


@pytest.mark.parametrize('full, upstream', [
    ('575.57.08-1', '575.57.08'),
    ('3:575.57.08-1.el9', '575.57.08'),
    ('575.57.08-0ubuntu0.24.04.1', '575.57.08'),
    ('1:3.3.9', '3.3.9'),
    ('580.65.06', '580.65.06'),
])
def test_upstream_version(full, upstream):
    assert nd.upstream_version(full) == upstream


def test_branch_versions_sort_numerically():
    assert nd.branch_versions(['3:575.9.1-1.el9', '3:575.64.05-1.el9', '3:575.57.08-1.el9', '0:580.65.06-1'], '575') == \
        ['575.9.1', '575.57.08', '575.64.05']


def test_target_is_the_version_asked_for_then_the_installed_one_then_the_newest_offered():
    offered = ['580.65.06-1', '575.64.05-1', '575.57.08-1']
    assert nd.resolve_target('575', '575.57.08', '575.64.05-1', offered) == '575.57.08'
    assert nd.resolve_target('575', None, '575.57.08-1', offered) == '575.57.08'
    # an installed driver of another branch does not count
    assert nd.resolve_target('580', None, '575.57.08-1', offered) == '580.65.06'
    assert nd.resolve_target('575', '', None, offered) == '575.64.05'
    assert nd.resolve_target('590', None, None, offered) == ''


def test_resolve_driver_apt_names_what_a_lagging_mirror_offers():
    result = nd.resolve_driver(MADISON, ['nvidia-driver-cuda', 'nvidia-persistenced', 'nvidia-fabricmanager'],
                               'nvidia-driver-cuda', '580')
    assert result['target'] == '580.65.06'
    assert result['resolved'] == [
        {'name': 'nvidia-driver-cuda', 'version': '580.65.06-1', 'offers': ['580.65.06', '575.64.05', '575.57.08']},
        {'name': 'nvidia-persistenced', 'version': '580.65.06-1', 'offers': ['580.65.06']},
        {'name': 'nvidia-fabricmanager', 'version': '', 'offers': ['575.57.08']},
    ]
    assert [p['name'] for p in result['unresolved']] == ['nvidia-fabricmanager']
    assert result['unresolved_summary'] == 'nvidia-fabricmanager offers 575.57.08'
    assert result['install_specs'] == ['nvidia-driver-cuda=580.65.06-1', 'nvidia-persistenced=580.65.06-1',
                                       'nvidia-fabricmanager=']


def test_resolve_driver_keeps_the_installed_driver_and_finds_installed_versions_the_repository_dropped():
    installed = {'nvidia-driver-cuda': '575.57.08-1', 'nvidia-fabricmanager-575': '575.57.08-1'}
    lines = [line for line in MADISON if 'nvidia-fabricmanager' not in line]
    result = nd.resolve_driver(lines, ['nvidia-driver-cuda', 'nvidia-fabricmanager-575', 'nvidia-persistenced'],
                               'nvidia-driver-cuda', '575', installed=installed)
    assert result['target'] == '575.57.08'
    assert result['install_specs'][:2] == ['nvidia-driver-cuda=575.57.08-1', 'nvidia-fabricmanager-575=575.57.08-1']
    assert result['unresolved_summary'] == 'nvidia-persistenced offers 580.65.06'
    # only what is installed at another version, or not at all, changes
    assert result['changing'] == ['nvidia-persistenced']


def test_resolve_driver_dnf_keeps_the_epoch_in_the_install_spec():
    result = nd.resolve_driver(REPOQUERY, ['nvidia-driver-cuda', 'kmod-nvidia-open-dkms', 'nvidia-fabric-manager'],
                               'nvidia-driver-cuda', '575', installed={'nvidia-driver-cuda': '3:575.57.08-1.el9',
                                                                       'nvidia-fabric-manager': '0:575.57.08-1'},
                               version='575.64.05', pkg_manager='dnf')
    assert result['target'] == '575.64.05'
    assert result['install_specs'] == ['nvidia-driver-cuda-3:575.64.05-1.el9', 'kmod-nvidia-open-dkms-3:575.64.05-1.el9',
                                       'nvidia-fabric-manager-0:575.64.05-1']
    assert result['changing'] == ['nvidia-driver-cuda', 'kmod-nvidia-open-dkms', 'nvidia-fabric-manager']


def test_resolve_driver_without_a_driver_of_the_branch():
    result = nd.resolve_driver(MADISON, ['nvidia-driver-cuda'], 'nvidia-driver-cuda', '590')
    assert result['target'] == ''
    assert result['unresolved_summary'] == 'nvidia-driver-cuda offers 580.65.06, 575.64.05, 575.57.08'
    result = nd.resolve_driver([], ['nvidia-driver-cuda'], 'nvidia-driver-cuda', '590')
    assert (result['offers'], result['unresolved_summary']) == ({}, 'nvidia-driver-cuda offers no version')


def test_a_version_that_only_starts_like_the_target_does_not_match():
    result = nd.resolve_driver(['p | 575.57.081-1', 'p | 1:575.57.08'], ['p'], 'p', '575', version='575.57.08')
    assert result['resolved'][0]['version'] == '1:575.57.08'


def test_installed_versions_deb_and_rpm_from_package_facts():
    # package_facts entries: apt gives name/version/arch/category/origin/source, rpm adds epoch and release
    packages = {
        'nvidia-driver-cuda': [{'name': 'nvidia-driver-cuda', 'version': '575.57.08-1', 'arch': 'amd64',
                                'category': 'non-free', 'origin': 'NVIDIA', 'source': 'apt'}],
        'kmod-nvidia-open-dkms': [{'name': 'kmod-nvidia-open-dkms', 'version': '575.57.08', 'release': '1.el9',
                                   'epoch': 3, 'arch': 'x86_64', 'source': 'rpm'}],
        'nvidia-fabric-manager': [{'name': 'nvidia-fabric-manager', 'version': '575.57.08', 'release': '1',
                                   'epoch': None, 'arch': 'x86_64', 'source': 'rpm'}],
    }
    assert nd.installed_versions(packages, ['nvidia-driver-cuda', 'kmod-nvidia-open-dkms', 'nvidia-fabric-manager',
                                            'nvidia-persistenced']) == {
        'nvidia-driver-cuda': '575.57.08-1',
        'kmod-nvidia-open-dkms': '3:575.57.08-1.el9',
        'nvidia-fabric-manager': '0:575.57.08-1',
    }


def test_module_changes_name_before_and_after():
    before = {'nvidia-kernel-open-dkms': '575.57.08-1', 'nvidia-dkms-575': '575.51.03-1', 'same': '1'}
    after = {'nvidia-kernel-open-dkms': '580.65.06-1', 'new': '2', 'same': '1'}
    assert nd.module_changes(before, after, ['nvidia-kernel-open-dkms', 'nvidia-dkms-575', 'new', 'same']) == [
        'nvidia-kernel-open-dkms 575.57.08-1 -> 580.65.06-1',
        'nvidia-dkms-575 575.51.03-1 -> removed',
        'new not installed -> 2',
    ]


# --- GPUDirect RDMA -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('open_modules, kernel, capable', [
    (True, '6.8.0-45-generic', True),
    (True, '5.12.0-1-generic', True),
    (True, '5.11.22-200.fc33.x86_64', False),
    (True, '4.18.0-553.el8_10.x86_64', False),
    (True, '10.0.0', True),
    (False, '6.8.0-45-generic', False),
    (None, '6.8.0-45-generic', False),
    (True, None, False),
    (True, 'unknown', False),
])
def test_dmabuf_needs_the_open_modules_on_kernel_5_12_or_later(open_modules, kernel, capable):
    assert nd.dmabuf_capable(open_modules, kernel) is capable


@pytest.mark.parametrize('wanted, ofed, kernel, mode', [
    ('auto', True, '6.8.0-45-generic', 'peermem'),
    ('auto', False, '6.8.0-45-generic', 'dmabuf'),
    ('auto', False, '5.4.0-150-generic', 'none'),
    ('dmabuf', False, '5.4.0-150-generic', 'dmabuf'),
    ('none', True, '6.8.0-45-generic', 'none'),
])
def test_gpudirect_auto_prefers_peermem_where_ofed_is_then_dmabuf(wanted, ofed, kernel, mode):
    result = nd.gpudirect(kernel, True, ofed, wanted)
    assert result == {'dmabuf_capable': nd.dmabuf_capable(True, kernel), 'mode': mode}


@pytest.mark.parametrize('args, message', [
    (('6.8.0', 'yes', False), "^open_modules must be true, false or null, got 'yes'$"),
    ((6.8, True, False), '^kernel must be a kernel release'),
    (('6.8.0', True, 'no'), "^ofed must be true or false, got 'no'$"),
    (('6.8.0', True, False, 'rdma'), "^nvidia_driver_gpudirect must be one of auto, peermem, dmabuf, none, got 'rdma'$"),
])
def test_gpudirect_rejects(args, message):
    with pytest.raises(ValueError, match=message):
        nd.gpudirect(*args)
