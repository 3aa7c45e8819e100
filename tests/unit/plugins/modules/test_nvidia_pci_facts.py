# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""nvidia_pci_facts on fake sysfs PCI trees: GPUs, NVSwitches, pre-Turing GPUs, a fourth-generation NVSwitch board,
check mode, a missing directory."""
from __future__ import annotations

from ansible_collections.hpcfabric.cluster.plugins.modules import nvidia_pci_facts


def pci_tree(root, functions, vpd=None):
    """One directory per PCI function with vendor, class and device files, as /sys/bus/pci/devices has them, and the
    ``vpd`` bytes given per slot."""
    root.mkdir()
    for slot, vendor, pci_class, device in functions:
        function = root / slot
        function.mkdir()
        (function / 'vendor').write_text(vendor + '\n')
        (function / 'class').write_text(pci_class + '\n')
        (function / 'device').write_text(device + '\n')
        if slot in (vpd or {}):
            (function / 'vpd').write_bytes(vpd[slot])
    return str(root)


# (slot, vendor, class, device): an H100 SXM and an NVSwitch of an HGX board, a V100, a ConnectX-7 and an Intel function
HGX = [
    ('0000:18:00.0', '0x10de', '0x030200', '0x2330'),
    ('0000:07:00.0', '0x10de', '0x068000', '0x22a3'),
    ('0000:5f:00.0', '0x10de', '0x030200', '0x1db1'),
    ('0000:17:00.0', '0x15b3', '0x020000', '0x1021'),
    ('0000:00:00.0', '0x8086', '0x060000', '0x09a2'),
]


def test_gpus_nvswitches_and_pre_turing_gpus(run_module, tmp_path):
    result = run_module(nvidia_pci_facts, {'devices_dir': pci_tree(tmp_path / 'devices', HGX)})
    assert result['changed'] is False
    assert result['ansible_facts']['nvidia_pci'] == {
        'gpus': [{'slot': '0000:18:00.0', 'class': '0x030200', 'device': '0x2330'},
                 {'slot': '0000:5f:00.0', 'class': '0x030200', 'device': '0x1db1'}],
        'nvswitches': [{'slot': '0000:07:00.0', 'class': '0x068000', 'device': '0x22a3'}],
        'pre_turing': ['0000:5f:00.0 (0x1db1)'],
        'gpu_count': 2,
        'nvlink_bridges': [],
        'nvswitch_gen4': False,
        'nvswitch_gen4_evidence': [],
    }


# An HGX B300 baseboard as the Fabric Manager user guide (release 2.3, "NVIDIA HGX B200/B300 GPU Baseboard") shows it:
# 3D controllers and the four functions of the ConnectX-7 bridge (15b3:1021, InfiniBand controller), no NVSwitch on the
# bus; the B300's device id from pci.ids (10de:3182 "GB110 [B300 SXM6 AC]"). Of the bridge's functions the limited PFs
# carry SW_MNG in their VPD (the guide's SMDL field); the VPD here is that one keyword (name, length, value).
HGX_B300 = [
    ('0000:05:00.0', '0x15b3', '0x020700', '0x1021'),
    ('0000:05:00.1', '0x15b3', '0x020700', '0x1021'),
    ('0000:1b:00.0', '0x10de', '0x030200', '0x3182'),
    ('0000:43:00.0', '0x10de', '0x030200', '0x3182'),
]


def test_a_b300_baseboard_is_a_fourth_generation_nvswitch_board(run_module, tmp_path):
    vpd = {'0000:05:00.0': b'V3\x05SMDL=', '0000:05:00.1': b'V3\x0bSMDL=SW_MNG'}
    devices = pci_tree(tmp_path / 'devices', HGX_B300, vpd=vpd)
    facts = run_module(nvidia_pci_facts, {'devices_dir': devices})['ansible_facts']['nvidia_pci']
    assert (facts['gpu_count'], facts['nvswitches'], facts['nvswitch_gen4']) == (2, [], True)
    assert facts['nvlink_bridges'] == [{'slot': '0000:05:00.1', 'class': '0x020700', 'device': '0x1021'}]
    assert facts['nvswitch_gen4_evidence'] == ['0000:1b:00.0 GPU 0x3182 (B300 SXM6 AC)',
                                               '0000:43:00.0 GPU 0x3182 (B300 SXM6 AC)',
                                               '0000:05:00.1 NVLink management bridge 0x1021 (VPD SW_MNG)']


def test_check_mode_reads_the_same(run_module, tmp_path):
    result = run_module(nvidia_pci_facts, {'devices_dir': pci_tree(tmp_path / 'devices', HGX[:1])}, check_mode=True)
    assert result['ansible_facts']['nvidia_pci']['gpu_count'] == 1


def test_a_host_without_nvidia_functions_has_no_gpu(run_module, tmp_path):
    result = run_module(nvidia_pci_facts, {'devices_dir': pci_tree(tmp_path / 'devices', HGX[3:])})
    assert result['ansible_facts']['nvidia_pci'] == {'gpus': [], 'nvswitches': [], 'pre_turing': [], 'gpu_count': 0,
                                                     'nvlink_bridges': [], 'nvswitch_gen4': False,
                                                     'nvswitch_gen4_evidence': []}


def test_a_missing_directory_fails_naming_it(run_module, tmp_path):
    result = run_module(nvidia_pci_facts, {'devices_dir': str(tmp_path / 'nope')})
    assert result['failed'] is True
    assert result['msg'] == 'no such directory: %s' % (tmp_path / 'nope')
