# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""gpu_health_facts given the forms people paste: nvidia-smi -q text, the dcgmi diag table, lspci -vv - read, judged,
partly readable with warnings, and text of no form failing with the forms it takes."""

from __future__ import annotations

from ansible_collections.hpcfabric.cluster.plugins.module_utils import gpu_health
from ansible_collections.hpcfabric.cluster.plugins.modules import gpu_health_facts


def run_saved(run_module, tmp_path, **saved):
    """The module on saved text only: no kernel log to read, no PCI tree, no tool on PATH."""
    return run_module(gpu_health_facts, dict(saved, kernel_log_output='', devices_dir=str(tmp_path / 'none')))


def test_a_ticket_of_text_forms_is_read_and_judged(tools_only, run_module, tmp_path, fixture_text):
    tools_only({})
    result = run_saved(run_module, tmp_path,
                       nvidia_smi_output=fixture_text('nvidia-smi-q-text', 'a10-550.127.05-faults-derived.txt'),
                       dcgmi_output=fixture_text('dcgmi-table', 'nccl-tests-264-dcgm-3.3.8-h100x8-r3.txt'),
                       lspci_output=fixture_text('lspci', 'supermicro-as4124gs-cx5-rtxa6000-vvnn.txt'))
    assert result.get('failed') is not True, result
    health = result['health']
    assert health['gpus'][0]['remapped_rows'] == {'pending': True, 'failure': False, 'uncorrectable': 1}
    # the links come from lspci: the GPU, then the NIC lspci names, as the sysfs reader would give them
    assert [(p['kind'], p['device'], p['current_width'], p['max_width']) for p in health['pcie']] == [
        ('gpu', 'GPU 0000:22:00.0', '16', '16'),
        ('nic', 'NIC 0000:01:00.0 (Mellanox Technologies MT27800 Family [ConnectX-5])', '8', '16')]
    assert health['dcgm']['version'] == '3.3.8' and health['dcgm']['rc'] is None
    assert health['unread'] == []
    assert result['warnings'] == ["dcgmi_output: ignored unreadable line 1: "
                                  "'sh-5.1# /usr/bin/dcgmi diag --run 3 --fail-early'"]
    checks = [(f['device'], f['check']) for f in gpu_health.health_findings('node07', health)]
    assert checks == [('GPU 0000:06:00.0', 'ecc'), ('GPU 0000:06:00.0', 'row_remap'), ('GPU 0000:06:00.0', 'throttle'),
                      ('NIC 0000:01:00.0 (Mellanox Technologies MT27800 Family [ConnectX-5])', 'pcie_width'),
                      ('GPUs', 'dcgm')]


def test_nvidia_smi_text_gives_the_gpu_links_where_nothing_else_does(tools_only, run_module, tmp_path, fixture_text):
    tools_only({})
    result = run_saved(run_module, tmp_path,
                       nvidia_smi_output=fixture_text('nvidia-smi-q-text', 'a100-sxm4-40gb-460.32.03-azure-first2.txt'))
    health = result['health']
    assert [g['pci'] for g in health['gpus']] == ['0001:00:00.0', '0002:00:00.0']
    assert [(p['device'], p['current_speed']) for p in health['pcie']] == [('GPU 0001:00:00.0', '16.0 GT/s PCIe'),
                                                                           ('GPU 0002:00:00.0', '16.0 GT/s PCIe')]
    assert result['warnings'] == []


def test_a_dcgm_4_table_and_lspci_without_root(tools_only, run_module, tmp_path, fixture_text):
    tools_only({})
    result = run_saved(run_module, tmp_path,
                       dcgmi_output=fixture_text('dcgmi-table', 'dcgm-253-4.2.3-4gpu-r2-pcie-fail-cut.txt'),
                       lspci_output=fixture_text('lspci', 'asus-esc4000g2-82574l-vvnn-nonroot.txt'))
    health = result['health']
    assert [(r['test'], r['gpus'], r['status']) for r in health['dcgm']['results'] if r['status'] != 'PASS'] == [
        ('pcie', [], 'FAIL')]
    # a link lspci could not show is unknown, never good
    assert health['pcie'] == [] and [u['source'] for u in health['unread']] == [
        'PCIe link of NIC 0000:05:00.0 (Intel Corporation 82574L Gigabit Network Connection)']
    assert result['warnings'] == ["dcgmi_output: ignored unreadable line 1: "
                                  "'Executing in Pod nvidia-dcgm-rz9cr on Host 10.0.7.139'"]


def test_a_partly_readable_nvidia_smi_paste_warns_naming_the_lines(tools_only, run_module, tmp_path, fixture_text):
    tools_only({})
    text = '$ nvidia-smi -q\n' + fixture_text('nvidia-smi-q-text', 'a10-550.127.05-gpud.txt')
    result = run_saved(run_module, tmp_path, nvidia_smi_output=text)
    assert result['health']['gpus'][0]['uuid'] == 'GPU-51ae0086-e1ac-4a20-f062-9caa44e4df6d'
    assert result['warnings'] == ["nvidia_smi_output: ignored unreadable line 1: '$ nvidia-smi -q'"]


def test_text_of_no_form_fails_listing_the_forms(tools_only, run_module, tmp_path):
    tools_only({})
    for name, text, forms in (
            ('nvidia_smi_output', "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n",
             'nvidia-smi -q -x (XML) or nvidia-smi -q (text)'),
            ('dcgmi_output', 'Error: unable to establish a connection to the specified host: localhost\n',
             'dcgmi diag -j (JSON) or the dcgmi diag table'),
            ('lspci_output', 'bash: lspci: command not found\n', 'lspci -vv')):
        result = run_saved(run_module, tmp_path, **{name: text})
        assert result['failed'] is True, name
        assert result['msg'].startswith('cannot parse %s: ' % name) and forms in result['msg'], result['msg']
        assert result['first_line'] == text.strip()
