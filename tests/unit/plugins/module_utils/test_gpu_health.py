# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""gpu_health: the parsers on recorded outputs (tests/unit/fixtures/*/SOURCES.md) and the rules that make findings."""

from __future__ import annotations

import pytest

from ansible_collections.hpcfabric.cluster.plugins.module_utils import gpu_health


def test_xids_of_a_dmesg_with_pid_and_name(fixture_text):
    events = gpu_health.parse_xids(fixture_text('kernel_log', 'dmesg-ctime-xid13-xid109.txt'))
    assert [(e['pci'], e['xid']) for e in events] == [('0000:cb:00.0', 13)] * 3 + [('0000:cb:00.0', 109)]
    assert events[0]['pid'] == '<unknown>' and events[0]['name'] == '<unknown>'
    assert events[3]['pid'] == '1797828' and events[3]['name'] == 'pt_main_thread'
    assert events[3]['text'] == 'Ch 00000008, errorString CTX SWITCH TIMEOUT, Info 0x58005'
    assert events[0]['line'] == 2


def test_application_xids_are_no_finding(fixture_text):
    events = gpu_health.parse_xids(fixture_text('kernel_log', 'dmesg-ctime-xid13-xid109.txt'))
    assert gpu_health.health_findings('node01', {'xids': events}) == []


def test_the_older_xid_form_without_pid(fixture_text):
    events = gpu_health.parse_xids(fixture_text('kernel_log', 'xid79-no-pid.txt'))
    assert events == [{'pci': '0000:44:00.0', 'xid': 79, 'pid': None, 'name': None,
                       'text': 'GPU has fallen off the bus', 'line': 1}]
    findings = gpu_health.health_findings('node01', {'xids': events})
    assert findings == [{'host': 'node01', 'device': 'GPU 0000:44:00.0', 'check': 'xid',
                         'seen': 'XID 79, GPU has fallen off the bus: GPU has fallen off the bus',
                         'action': gpu_health.HARDWARE_XIDS[79][1]}]
    assert findings[0]['action'].startswith('drain, reseat')


def test_fallen_off_the_bus_without_an_xid_line(fixture_text):
    events = gpu_health.parse_xids(fixture_text('kernel_log', 'dmesg-fallen-off-no-xid.txt'))
    assert [(e['pci'], e['xid']) for e in events] == [('0000:b3:00.0', 79)]


def test_nvlink5_nonfatal_is_logged_not_judged_and_contained_ecc_is(fixture_text):
    events = gpu_health.parse_xids(fixture_text('kernel_log', 'kmsg-xid94-145-149.txt'))
    assert [(e['pci'], e['xid']) for e in events] == [('0019:01:00.0', 149), ('0018:01:00.0', 145),
                                                      ('0000:9b:00.0', 94)]
    assert events[2]['pid'] == '1234' and events[2]['name'] == 'python3' and events[2]['text'] == 'Contained ECC error'
    findings = gpu_health.health_findings('n', {'xids': events})
    assert [(f['device'], f['check'], f['action'].split(':')[0]) for f in findings] == [
        ('GPU 0000:9b:00.0', 'xid', 'reboot'), ('GPU 0019:01:00.0', 'xid', 'drain, reboot')]


def test_repeated_xids_make_one_finding():
    log = '\n'.join('kernel: NVRM: Xid (PCI:0000:3b:00): 48, pid=7, name=x, An uncorrectable double bit error'
                    for dummy in range(3))
    findings = gpu_health.health_findings('n', {'xids': gpu_health.parse_xids(log)})
    assert len(findings) == 1 and '(3 times)' in findings[0]['seen'] and findings[0]['check'] == 'xid'


def test_the_xid_catalog_is_cited_and_application_xids_are_not_hardware():
    assert gpu_health.XID_CATALOG_URL.startswith('https://docs.nvidia.com/deploy/xid-errors/')
    assert not gpu_health.APPLICATION_XIDS & set(gpu_health.HARDWARE_XIDS)
    assert {48, 63, 64, 74, 79, 92, 94, 95, 119, 120} <= set(gpu_health.HARDWARE_XIDS)


def test_a100_r535_healthy(fixture_text):
    gpus = gpu_health.parse_nvidia_smi_xml(fixture_text('nvidia-smi-q', 'a100-sxm4-80gb-535-mig.xml'))
    assert len(gpus) == 1
    gpu = gpus[0]
    assert gpu['pci'] == '0000:01:00.0' and gpu['uuid'] == 'GPU-513536b6-7d19-9063-b049-1e69664bb298'
    assert gpu['product'] == 'NVIDIA A100-SXM4-80GB' and gpu['ecc_mode'] == 'Enabled'
    assert gpu['ecc_uncorrectable'] == {'volatile': 0, 'aggregate': 0}
    assert gpu['remapped_rows'] is None and gpu['retired_pages'] is None
    assert gpu['clock_reasons']['hw_slowdown'] is False and len(gpu['clock_reasons']) == 9
    assert gpu_health.health_findings('n', {'gpus': gpus}) == []


def test_a100_faults(fixture_text):
    gpus = gpu_health.parse_nvidia_smi_xml(fixture_text('nvidia-smi-q', 'a100-sxm4-80gb-535-faults-derived.xml'))
    assert gpus[0]['ecc_uncorrectable'] == {'volatile': 2, 'aggregate': 2}
    assert gpus[0]['remapped_rows'] == {'pending': True, 'failure': False, 'uncorrectable': 1}
    findings = gpu_health.health_findings('node07', {'gpus': gpus})
    assert [(f['device'], f['check']) for f in findings] == [
        ('GPU 0000:01:00.0', 'ecc'), ('GPU 0000:01:00.0', 'row_remap'), ('GPU 0000:01:00.0', 'throttle')]
    assert findings[0]['seen'] == '2 uncorrectable ECC errors since the driver loaded (2 lifetime)'
    assert findings[1]['action'].startswith('reboot')
    # gpu_idle is active as well, and benign
    assert findings[2]['seen'] == 'clock event reason hw_slowdown is active'


def test_row_remap_failure_is_rma(fixture_text):
    text = fixture_text('nvidia-smi-q', 'a100-sxm4-80gb-535-faults-derived.xml').replace(
        '<remapped_row_failure>No<', '<remapped_row_failure>Yes<')
    findings = gpu_health.health_findings('n', {'gpus': gpu_health.parse_nvidia_smi_xml(text)})
    remap = [f for f in findings if f['check'] == 'row_remap']
    assert len(remap) == 1 and remap[0]['action'].startswith('RMA')


def test_p100_old_driver_format(fixture_text):
    gpus = gpu_health.parse_nvidia_smi_xml(fixture_text('nvidia-smi-q', 'tesla-p100-510.xml'))
    gpu = gpus[0]
    assert gpu['pci'] == '0000:00:04.0' and gpu['product'] == 'Tesla P100-PCIE-16GB'
    # the old <double_bit><total> form; the 3 aggregate single-bit errors are correctable and not counted
    assert gpu['ecc_uncorrectable'] == {'volatile': 0, 'aggregate': 0}
    assert gpu['retired_pages'] == {'pending': False, 'double_bit': 0}
    assert gpu['clock_reasons']['gpu_idle'] is True
    assert gpu_health.health_findings('n', {'gpus': gpus}) == []


def test_p100_pending_retirement(fixture_text):
    gpus = gpu_health.parse_nvidia_smi_xml(fixture_text('nvidia-smi-q', 'tesla-p100-510-faults-derived.xml'))
    assert gpus[0]['ecc_uncorrectable'] == {'volatile': 0, 'aggregate': 1}
    findings = gpu_health.health_findings('n', {'gpus': gpus})
    # the lifetime double-bit error alone is no finding; its pending retirement is
    assert [f['check'] for f in findings] == ['page_retirement']
    assert findings[0]['action'].startswith('reboot')


def test_not_nvidia_smi_xml_is_an_error():
    with pytest.raises(ValueError, match='not XML'):
        gpu_health.parse_nvidia_smi_xml('NVIDIA-SMI has failed because it could not communicate with the driver')
    with pytest.raises(ValueError, match='nvidia_smi_log'):
        gpu_health.parse_nvidia_smi_xml('<other/>')


def test_nvlink_v100_two_inactive(fixture_text):
    nvlink = gpu_health.parse_nvlink_status(fixture_text('nvidia-smi-nvlink', 'v100-sxm2-two-inactive.txt'))
    assert len(nvlink) == 1 and nvlink[0]['gpu'] == 3 and nvlink[0]['product'] == 'Tesla V100-SXM2-32GB'
    assert [n for n, s in sorted(nvlink[0]['links'].items()) if s == 'inactive'] == [3, 5]
    findings = gpu_health.health_findings('n', {'nvlink': nvlink})
    assert [(f['device'], f['check'], f['seen']) for f in findings] == [
        ('GPU 3 (...)', 'nvlink', 'NVLink 3, 5 inactive of 6 (3: <inactive>, 5: <inactive>)')]
    # with nvidia-smi -q the GPU is named by its PCI address
    gpus = [{'index': 3, 'pci': '0000:b3:00.0'}]
    assert gpu_health._nvlink_findings('n', nvlink, gpus)[0]['device'] == 'GPU 0000:b3:00.0'


def test_nvlink_a100_tabs_and_elision(fixture_text):
    nvlink = gpu_health.parse_nvlink_status(fixture_text('nvidia-smi-nvlink', 'a100-sxm4-tabs-truncated.txt'))
    assert [(g['gpu'], len(g['links'])) for g in nvlink] == [(0, 12), (1, 12), (2, 1)]
    assert all(s == 'active' for g in nvlink for s in g['links'].values())
    assert gpu_health.health_findings('n', {'nvlink': nvlink}) == []


def test_gpus_without_any_active_nvlink_use_none():
    text = 'GPU 0: NVIDIA A100-PCIE-40GB (UUID: GPU-a)\n\t Link 0: <inactive>\n\t Link 1: <inactive>\n'
    assert gpu_health.health_findings('n', {'nvlink': gpu_health.parse_nvlink_status(text)}) == []


@pytest.mark.parametrize('text, value', [('16.0 GT/s PCIe', 16.0), ('32.0 GT/s PCIe', 32.0), ('8 GT/s', 8.0),
                                         ('2.5 GT/s PCIe', 2.5), ('Unknown', None), (None, None)])
def test_link_speed(text, value):
    assert gpu_health.link_speed_gts(text) == value


def _link(kind, device, speed, top, width, max_width):
    return {'kind': kind, 'device': device, 'current_speed': speed, 'max_speed': top, 'current_width': width,
            'max_width': max_width}


def test_pcie_rules():
    links = [
        _link('gpu', 'GPU 0000:3b:00.0', '2.5 GT/s PCIe', '32.0 GT/s PCIe', '16', '16'),  # idle GPU: no finding
        _link('gpu', 'GPU 0000:5e:00.0', '32.0 GT/s PCIe', '32.0 GT/s PCIe', '8', '16'),
        _link('nic', 'mlx5_0 (0000:0c:00.0)', '16.0 GT/s PCIe', '32.0 GT/s PCIe', '16', '16'),
        _link('nic', 'mlx5_1 (0000:0d:00.0)', 'Unknown', '32.0 GT/s PCIe', '0', '16'),
        _link('nic', 'mlx5_2 (0000:0e:00.0)', '32.0 GT/s PCIe', '32.0 GT/s PCIe', '16', '16'),
    ]
    findings = gpu_health.health_findings('n', {'pcie': links})
    assert [(f['device'], f['check'], f['seen']) for f in findings] == [
        ('GPU 0000:5e:00.0', 'pcie_width', 'PCIe link x8 of x16'),
        ('mlx5_0 (0000:0c:00.0)', 'pcie_speed', 'PCIe link at 16.0 GT/s PCIe of 32.0 GT/s PCIe'),
        ('mlx5_1 (0000:0d:00.0)', 'pcie_speed', 'PCIe link at Unknown of 32.0 GT/s PCIe')]
    assert all(f['action'].startswith('reseat') for f in findings)


def test_read_pcie_link(tmp_path):
    device = tmp_path / '0000:0c:00.0'
    device.mkdir()
    for name, value in (('current_link_speed', '16.0 GT/s PCIe\n'), ('max_link_speed', '32.0 GT/s PCIe\n'),
                        ('current_link_width', '16\n')):
        (device / name).write_text(value)
    assert gpu_health.read_pcie_link(str(device)) == {
        'pci': '0000:0c:00.0', 'current_speed': '16.0 GT/s PCIe', 'max_speed': '32.0 GT/s PCIe',
        'current_width': '16', 'max_width': None}


def test_dcgmi_pass(fixture_text):
    dcgm = gpu_health.parse_dcgmi_diag(fixture_text('dcgmi', 'diag-3.1.0-8gpu-pass.txt'))
    assert dcgm['version'] == '3.1.0'
    assert len(dcgm['results']) == 9 + 8
    assert dcgm['results'][0] == {'category': 'Deployment', 'test': 'Denylist', 'gpus': list(range(8)),
                                  'status': 'PASS', 'message': ''}
    assert gpu_health.health_findings('n', {'dcgm': dcgm}) == []


def test_dcgmi_fail_names_the_gpu(fixture_text):
    dcgm = gpu_health.parse_dcgmi_diag(fixture_text('dcgmi', 'diag-3.1.0-8gpu-gpu3-fail-derived.txt'))
    gpus = [{'index': i, 'pci': '0000:%02x:00.0' % (0x10 + i)} for i in range(8)]
    quiet = {'ecc_uncorrectable': {'volatile': None, 'aggregate': None}, 'remapped_rows': None, 'retired_pages': None,
             'clock_reasons': {}}
    findings = gpu_health.health_findings('n', {'dcgm': dcgm, 'gpus': [dict(g, **quiet) for g in gpus]})
    assert [(f['device'], f['check'], f['seen']) for f in findings] == [
        ('GPU 0000:13:00.0', 'dcgm', 'dcgmi diag Custom / software failed')]
    assert findings[0]['action'].startswith('drain')


def test_dcgmi_4_key_and_warnings():
    text = ('{"DCGM Diagnostic": {"test_categories": [{"category": "Hardware", "tests": [{"name": "memory", "results": '
            '[{"entity_id": 1, "status": "Fail", "warnings": [{"warning": "DBE detected", "error_id": 7}]}]}]}]}}')
    dcgm = gpu_health.parse_dcgmi_diag(text)
    assert dcgm['results'] == [{'category': 'Hardware', 'test': 'memory', 'gpus': [1], 'status': 'FAIL',
                                'message': 'DBE detected'}]
    assert gpu_health.health_findings('n', {'dcgm': dcgm})[0]['device'] == 'GPU 1 (DCGM id)'


def test_dcgmi_without_json_is_an_error():
    with pytest.raises(ValueError, match='no JSON'):
        gpu_health.parse_dcgmi_diag('Error: unable to establish a connection to the specified host: localhost')


def test_report_lists_unread_sources_and_skipped_hosts():
    report = gpu_health.health_report({
        'node01': {'health': {'xids': gpu_health.parse_xids('NVRM: Xid (PCI:0000:3b:00): 95, Uncontained ECC error'),
                              'unread': []}},
        'node02': {'health': {'unread': [{'source': 'kernel log', 'why': 'dmesg exited 1: Operation not permitted'}]}},
        'node03': {'skipped': True},
        'node04': None,
    })
    assert report['passed'] is False
    assert [(f['host'], f['check']) for f in report['findings']] == [('node01', 'xid')]
    assert report['unread'] == [{'host': 'node02', 'source': 'kernel log',
                                 'why': 'dmesg exited 1: Operation not permitted'}]
    assert report['summary'] == '1 finding(s) on node01; not read: node02 kernel log'
    assert report['messages'][1] == 'node02: kernel log not read: dmesg exited 1: Operation not permitted'


def test_report_of_healthy_nodes_passes():
    report = gpu_health.health_report({'node01': {'health': {'unread': []}}})
    assert report == {'passed': True, 'findings': [], 'unread': [], 'messages': [], 'summary': 'no finding'}
    with pytest.raises(TypeError):
        gpu_health.health_report([])
