# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""gpu_health_facts module: fake tools, fake sysfs trees, saved text, a node without GPUs, the failures."""

from __future__ import annotations

import shutil

from ansible_collections.hpcfabric.cluster.plugins.module_utils import gpu_health
from ansible_collections.hpcfabric.cluster.plugins.modules import gpu_health_facts


def pci_tree(tmp_path):
    """A GPU whose link runs x8 of x16, a NIC at gen4 of gen5 behind netdev ens1, a veth without a device."""
    devices = tmp_path / 'sys' / 'bus' / 'pci' / 'devices'
    for slot, vendor, cls, speed, width in (('0000:3b:00.0', '0x10de', '0x030200', '2.5 GT/s PCIe', '8'),
                                            ('0000:0c:00.0', '0x15b3', '0x020000', '16.0 GT/s PCIe', '16')):
        d = devices / slot
        d.mkdir(parents=True)
        for name, value in (('vendor', vendor), ('class', cls), ('device', '0x2330'), ('current_link_speed', speed),
                            ('max_link_speed', '32.0 GT/s PCIe'), ('current_link_width', width),
                            ('max_link_width', '16')):
            (d / name).write_text(value + '\n')
    net = tmp_path / 'sys' / 'class' / 'net'
    (net / 'ens1').mkdir(parents=True)
    (net / 'ens1' / 'device').symlink_to(devices / '0000:0c:00.0')
    (net / 'veth0').mkdir()
    return {'sysfs_root': str(tmp_path / 'sys'), 'devices_dir': str(devices)}


def test_reads_every_source(tools_only, run_module, tmp_path, fixture_path):
    tools_only({
        'journalctl': "cat '%s'" % fixture_path('kernel_log', 'xid79-no-pid.txt'),
        'nvidia-smi': "[ \"$1\" = -q ] && cat '%s' && exit 0; [ \"$1\" = nvlink ] && cat '%s'" % (
            fixture_path('nvidia-smi-q', 'a100-sxm4-80gb-535-faults-derived.xml'),
            fixture_path('nvidia-smi-nvlink', 'a100-sxm4-tabs-truncated.txt')),
        'dcgmi': "cat '%s'; exit 226" % fixture_path('dcgmi', 'diag-3.1.0-8gpu-gpu3-fail-derived.txt'),
    })
    args = dict(pci_tree(tmp_path), interfaces=['ens1', 'veth0'], dcgmi_diag_level=1)
    result = run_module(gpu_health_facts, args)
    assert result.get('failed') is not True, result
    health = result['health']
    assert health['kernel_log_source'] == 'journalctl -k -b' and health['xids'][0]['xid'] == 79
    assert health['gpus'][0]['remapped_rows']['pending'] is True
    assert len(health['nvlink']) == 3
    assert [(p['kind'], p['device'], p['current_width']) for p in health['pcie']] == [
        ('gpu', 'GPU 0000:3b:00.0', '8'), ('nic', 'ens1 (0000:0c:00.0)', '16')]
    assert health['no_pci_device'] == ['veth0']
    assert health['dcgm']['rc'] == 226 and health['dcgm']['level'] == 1
    assert health['unread'] == []
    assert run_module(gpu_health_facts, args, check_mode=True)['health']['xids'] == health['xids']


def test_a_recorded_pci_tree(tools_only, run_module, tmp_path, fixture_path):
    """tests/unit/fixtures/sysfs/pci_mixed (recorded link files, no NVIDIA function) with the E810's netdev."""
    tools_only({})
    devices = tmp_path / 'sys' / 'bus' / 'pci' / 'devices'
    devices.mkdir(parents=True)
    # fixture paths may not hold ':': the devices get their real names here
    for entry in sorted(fixture_path('sysfs', 'pci_mixed/bus/pci/devices').iterdir()):
        shutil.copytree(str(entry), str(devices / entry.name.replace('_', ':')))
    net = tmp_path / 'sys' / 'class' / 'net' / 'enp162s0f0np0'
    net.mkdir(parents=True)
    (net / 'device').symlink_to(devices / '0000:a2:00.0')
    result = run_module(gpu_health_facts, {'kernel_log_output': '', 'sysfs_root': str(tmp_path / 'sys'),
                                           'devices_dir': str(devices), 'interfaces': ['enp162s0f0np0']})
    assert result.get('failed') is not True, result
    health = result['health']
    # no function is NVIDIA's (vendor 0x10de), so no GPU link is read and no nvidia-smi is missed
    assert health['gpus'] == [] and health['unread'] == [] and health['no_pci_device'] == []
    assert health['pcie'] == [{'kind': 'nic', 'device': 'enp162s0f0np0 (0000:a2:00.0)', 'pci': '0000:a2:00.0',
                               'current_speed': '16.0 GT/s PCIe', 'max_speed': '16.0 GT/s PCIe', 'current_width': '8',
                               'max_width': '8'}]
    assert gpu_health.health_findings('n', health) == []


def test_a_lab_node_has_nothing_to_check_and_an_unreadable_kernel_log(tools_only, run_module, tmp_path):
    tools_only({'journalctl': "echo '-- No entries --'",
                'dmesg': "echo 'dmesg: read kernel buffer failed: Operation not permitted' >&2; exit 1"})
    net = tmp_path / 'sys' / 'class' / 'net' / 'eth1'
    net.mkdir(parents=True)
    result = run_module(gpu_health_facts, {'interfaces': ['eth1'], 'sysfs_root': str(tmp_path / 'sys'),
                                           'devices_dir': str(tmp_path / 'none')})
    assert result.get('failed') is not True, result
    assert result['health']['unread'] == [{'source': 'kernel log', 'why': 'journalctl -k -b printed no kernel line; '
                                           'dmesg exited 1: dmesg: read kernel buffer failed: Operation not permitted'}]
    assert result['health']['gpus'] == [] and result['health']['pcie'] == []
    assert result['health']['no_pci_device'] == ['eth1']


def test_gpus_without_nvidia_smi_are_unread(tools_only, run_module, tmp_path):
    tools_only({})
    args = dict(pci_tree(tmp_path), kernel_log_output='')
    result = run_module(gpu_health_facts, args)
    assert result['health']['unread'] == [{'source': 'nvidia-smi', 'why': '1 NVIDIA GPUs on the PCI bus but no nvidia-smi'}]


def test_a_failing_nvidia_smi_fails(tools_only, run_module, tmp_path):
    tools_only({'nvidia-smi': "echo 'NVIDIA-SMI has failed because it could not communicate "
                              "with the NVIDIA driver.'; exit 9"})
    result = run_module(gpu_health_facts, {'kernel_log_output': '', 'devices_dir': str(tmp_path)})
    assert result['failed'] is True and 'nvidia-smi -q -x exited 9' in result['msg']


def test_missing_dcgmi_and_unknown_interface_fail(tools_only, run_module, tmp_path):
    tools_only({})
    result = run_module(gpu_health_facts, {'kernel_log_output': '', 'devices_dir': str(tmp_path),
                                           'dcgmi_diag_level': 2})
    assert result['failed'] is True and 'dcgmi' in result['msg'] and 'not installed' in result['msg']
    result = run_module(gpu_health_facts, {'kernel_log_output': '', 'devices_dir': str(tmp_path),
                                           'sysfs_root': str(tmp_path), 'interfaces': ['mlx5_9']})
    assert result['failed'] is True and result['msg'].startswith('mlx5_9: neither a netdev')


def test_saved_text(tools_only, run_module, tmp_path, fixture_text):
    tools_only({})
    result = run_module(gpu_health_facts, {
        'devices_dir': str(tmp_path),
        'kernel_log_output': fixture_text('kernel_log', 'kmsg-xid94-145-149.txt'),
        'nvidia_smi_output': fixture_text('nvidia-smi-q', 'tesla-p100-510.xml'),
        'nvlink_output': fixture_text('nvidia-smi-nvlink', 'v100-sxm2-two-inactive.txt'),
        'dcgmi_output': fixture_text('dcgmi', 'diag-3.1.0-8gpu-pass.txt')})
    health = result['health']
    assert health['kernel_log_source'] == 'kernel_log_output' and len(health['xids']) == 3
    assert health['gpus'][0]['pci'] == '0000:00:04.0' and health['nvlink'][0]['gpu'] == 3
    assert health['dcgm']['version'] == '3.1.0' and health['dcgm']['rc'] is None
    result = run_module(gpu_health_facts, {'devices_dir': str(tmp_path), 'kernel_log_output': '',
                                           'nvidia_smi_output': 'garbage'})
    assert result['failed'] is True and result['msg'].startswith('cannot parse nvidia_smi_output')
