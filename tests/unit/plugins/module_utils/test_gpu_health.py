# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""gpu_health: the parsers on recorded outputs (tests/unit/fixtures/*/SOURCES.md) and the rules that make findings."""

from __future__ import annotations

import json
import shutil

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
    # the paste shows one GPU of its node: with no peer and no setting, nothing tells unwired slots from links down
    assert gpu_health.health_findings('n', {'nvlink': nvlink}) == []
    expected = gpu_health.nvlink_expected([nvlink], {'Tesla V100-SXM2-32GB': 6})
    assert expected == {'Tesla V100-SXM2-32GB': {'links': 6, 'source': 'nvlinks_per_gpu', 'gpus': 1,
                                                 'active_slots': [0, 1, 2, 4]}}
    findings = gpu_health.health_findings('n', {'nvlink': nvlink}, expected)
    assert [(f['device'], f['check'], f['seen']) for f in findings] == [
        ('GPU 3 (...)', 'nvlink', 'NVLink 3, 5 down: 4 of 6 links active (nvlinks_per_gpu gives 6 for '
                                  'Tesla V100-SXM2-32GB)')]
    assert findings[0]['action'].startswith('reboot: a GPU reset retrains the links')
    # with nvidia-smi -q the GPU is named by its PCI address
    gpus = [{'index': 3, 'pci': '0000:b3:00.0'}]
    assert gpu_health._nvlink_findings('n', nvlink, gpus, expected)[0]['device'] == 'GPU 0000:b3:00.0'


def h100_pcie(fixture_text, down=None, gpu=1):
    """The recorded H100 PCIe pair's NVLink status; ``down``: slots of GPU ``gpu`` turned ``<inactive>`` (derived)."""
    text = fixture_text('nvidia-smi-nvlink', 'h100-pcie-bridged-12-of-18.txt')
    if down is None:
        return text
    start = text.index('GPU %d:' % gpu)
    end = text.find('GPU %d:' % (gpu + 1))
    block = text[start:end if end >= 0 else len(text)]
    changed = block
    for slot in down:
        changed = changed.replace('Link %d: 26.562 GB/s' % slot, 'Link %d: <inactive>' % slot)
    assert changed.count('<inactive>') == block.count('<inactive>') + len(down)
    return text[:start] + changed + text[start + len(block):]


def test_nvlink_slots_a_bridged_pcie_card_does_not_wire_are_no_finding(fixture_text):
    nvlink = gpu_health.parse_nvlink_status(h100_pcie(fixture_text))
    assert [(g['gpu'], len(g['links']), sorted(n for n, s in g['links'].items() if s == 'inactive')) for g in nvlink] == [
        (0, 18, [4, 5, 10, 11, 16, 17]), (1, 18, [4, 5, 10, 11, 16, 17])]
    assert gpu_health.health_findings('n', {'nvlink': nvlink}) == []
    assert gpu_health.nvlink_expected([nvlink]) == {'NVIDIA H100 PCIe': {
        'links': 12, 'source': 'peers', 'gpus': 2, 'active_slots': [0, 1, 2, 3, 6, 7, 8, 9, 12, 13, 14, 15]}}


def test_a_link_down_where_its_peer_has_it_up_is_named_and_the_unwired_slots_are_not(fixture_text):
    nvlink = gpu_health.parse_nvlink_status(h100_pcie(fixture_text, down=[0, 13]))
    findings = gpu_health.health_findings('n', {'nvlink': nvlink})
    assert [(f['device'], f['seen']) for f in findings] == [
        ('GPU 1 (GPU-9b1446e2-8a89-4cf6-b68c-a98d99e958d3)',
         'NVLink 0, 13 down: 10 of 12 links active (12 is the most any NVIDIA H100 PCIe shows; 4, 5, 10, 11, 16, 17 '
         'are inactive on every one: unwired)')]


def test_the_module_result_after_json_is_judged_as_the_parser_dicts(fixture_text):
    # the module returns links: {0: 'active'}; Ansible hands the filter {'0': 'active'} - the crash of issue 33
    nvlink = gpu_health.parse_nvlink_status(h100_pcie(fixture_text, down=[0]))
    round_trip = json.loads(json.dumps(nvlink))
    assert sorted(round_trip[0]['links'], key=int)[:3] == ['0', '1', '2']
    report = gpu_health.health_report({'n1': {'health': {'nvlink': round_trip}}})
    assert report['findings'] == gpu_health.health_findings('n1', {'nvlink': nvlink})
    assert report['findings'][0]['seen'].startswith('NVLink 0 down: 11 of 12 links active')
    assert report['nvlink']['NVIDIA H100 PCIe']['active_slots'][:4] == [0, 1, 2, 3]


def test_peers_on_other_hosts_judge_a_host_whose_gpus_all_lost_the_same_link(fixture_text):
    healthy = gpu_health.parse_nvlink_status(h100_pcie(fixture_text))
    both_down = gpu_health.parse_nvlink_status(h100_pcie(fixture_text, down=[2], gpu=0).replace(
        'Link 2: 26.562 GB/s', 'Link 2: <inactive>'))
    assert [sum(s == 'active' for s in g['links'].values()) for g in both_down] == [11, 11]
    # judged alone, the host's GPUs agree with each other: nothing to compare with
    assert gpu_health.health_findings('node02', {'nvlink': both_down}) == []
    report = gpu_health.health_report({'node01': {'health': {'nvlink': healthy}},
                                       'node02': {'health': {'nvlink': both_down}}})
    assert [(f['host'], f['device'].split(' (')[0], f['seen'].split(':')[0]) for f in report['findings']] == [
        ('node02', 'GPU 0', 'NVLink 2 down'), ('node02', 'GPU 1', 'NVLink 2 down')]
    assert report['summary'] == '2 finding(s) on node02'


def test_a_host_without_any_active_link_is_judged_on_the_setting_only(fixture_text):
    healthy = gpu_health.parse_nvlink_status(h100_pcie(fixture_text))
    # derived: the same pair with every link inactive, as a node built without bridges (or one that lost them) shows
    unbridged = gpu_health.parse_nvlink_status(h100_pcie(fixture_text).replace('26.562 GB/s', '<inactive>'))
    results = {'node01': {'health': {'nvlink': healthy}}, 'node02': {'health': {'nvlink': unbridged}}}
    assert gpu_health.health_report(results)['findings'] == []
    report = gpu_health.health_report(results, {'NVIDIA H100 PCIe': 12})
    assert report['nvlink']['NVIDIA H100 PCIe']['source'] == 'nvlinks_per_gpu'
    assert [(f['host'], f['seen']) for f in report['findings']] == [
        ('node02', 'NVLink 0, 1, 2, 3, 6, 7, 8, 9, 12, 13, 14, 15 down: 0 of 12 links active (nvlinks_per_gpu gives 12 '
                   'for NVIDIA H100 PCIe; 4, 5, 10, 11, 16, 17 are inactive on every one: unwired)')] * 2


def test_a_setting_above_what_any_slot_shows_names_the_candidates(fixture_text):
    nvlink = gpu_health.parse_nvlink_status(h100_pcie(fixture_text))
    report = gpu_health.health_report({'n': {'health': {'nvlink': nvlink}}}, {'NVIDIA H100 PCIe': 13})
    assert report['findings'][0]['seen'] == (
        'NVLink 1 of 4, 5, 10, 11, 16, 17 down: 12 of 13 links active (nvlinks_per_gpu gives 13 for NVIDIA H100 PCIe)')


@pytest.mark.parametrize('setting, problems', [
    (None, []),
    ({'NVIDIA H100 PCIe': 12}, []),
    ([12], ['nvlinks_per_gpu must map GPU models (as nvidia-smi names them) to the NVLinks their boards wire, got [12]']),
    ({'NVIDIA H100 PCIe': 0, 'A': True, 'B': '12'}, [
        'nvlinks_per_gpu.A must be a number of links >= 1, got True',
        "nvlinks_per_gpu.B must be a number of links >= 1, got '12'",
        'nvlinks_per_gpu.NVIDIA H100 PCIe must be a number of links >= 1, got 0']),
])
def test_nvlinks_per_gpu_problems(setting, problems):
    assert gpu_health.nvlinks_per_gpu_problems(setting) == problems
    if problems:
        with pytest.raises(ValueError, match='nvlinks_per_gpu'):
            gpu_health.health_report({}, setting)


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
        _link('nic', 'mlx5_2 (0000:0e:00.0)', '32.0 GT/s PCIe', '32.0 GT/s PCIe', '16', '16'),
    ]
    findings = gpu_health.health_findings('n', {'pcie': links})
    assert [(f['device'], f['check'], f['seen']) for f in findings] == [
        ('GPU 0000:5e:00.0', 'pcie_width', 'PCIe link x8 of x16'),
        ('mlx5_0 (0000:0c:00.0)', 'pcie_speed', 'PCIe link at 16.0 GT/s PCIe of 32.0 GT/s PCIe')]
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


# tests/unit/fixtures/sysfs/SOURCES.md, "PCIe link tree": recorded link files of six PCI functions from three hosts
PCI_READINGS = {
    '0000:00:02.1': ('8.0 GT/s PCIe', '8.0 GT/s PCIe', '4', '8'),
    '0000:a2:00.0': ('16.0 GT/s PCIe', '16.0 GT/s PCIe', '8', '8'),
    '0000:01:00.0': ('16.0 GT/s PCIe', '32.0 GT/s PCIe', '8', '16'),
    '0000:03:00.0': ('32.0 GT/s PCIe', '32.0 GT/s PCIe', '16', '16'),
    '0000:09:00.0': ('2.5 GT/s PCIe', '2.5 GT/s PCIe', '4', '4'),
    '0000:09:10.0': (None, '2.5 GT/s PCIe', '0', '4'),
}


@pytest.fixture
def pci_devices(fixture_path, tmp_path):
    """The recorded pci_mixed tree under its devices' real names (fixture paths may not hold ':')."""
    devices = tmp_path / 'devices'
    devices.mkdir()
    for entry in sorted(fixture_path('sysfs', 'pci_mixed/bus/pci/devices').iterdir()):
        shutil.copytree(str(entry), str(devices / entry.name.replace('_', ':')))
    return devices


def _recorded(devices, slot, kind):
    link = gpu_health.read_pcie_link(str(devices / slot))
    link.update(kind=kind, device='%s %s' % (kind, slot))
    return link


@pytest.mark.parametrize('slot', sorted(PCI_READINGS))
def test_read_pcie_link_on_recorded_sysfs(pci_devices, slot):
    speed, top, width, max_width = PCI_READINGS[slot]
    assert gpu_health.read_pcie_link(str(pci_devices / slot)) == {
        'pci': slot, 'current_speed': speed, 'max_speed': top, 'current_width': width, 'max_width': max_width}


def test_the_recorded_tree_is_complete(pci_devices):
    assert sorted(p.name for p in pci_devices.iterdir()) == sorted(PCI_READINGS)


@pytest.mark.parametrize('slot, kind', [('0000:a2:00.0', 'nic'), ('0000:09:00.0', 'nic'), ('0000:03:00.0', 'nic'),
                                        ('0000:03:00.0', 'gpu')])
def test_recorded_links_at_their_maximum_give_no_finding(pci_devices, slot, kind):
    assert gpu_health.health_findings('n', {'pcie': [_recorded(pci_devices, slot, kind)]}) == []


@pytest.mark.parametrize('kind', ['gpu', 'nic'])
def test_a_recorded_narrow_link_gives_pcie_width(pci_devices, kind):
    # the root port trained x4 of x8 at its full speed: the width rule holds whatever the device
    findings = gpu_health.health_findings('n', {'pcie': [_recorded(pci_devices, '0000:00:02.1', kind)]})
    assert [(f['device'], f['check'], f['seen']) for f in findings] == [
        ('%s 0000:00:02.1' % kind, 'pcie_width', 'PCIe link x4 of x8')]
    assert findings[0]['action'].startswith('reseat')


def test_a_recorded_slow_link_is_judged_on_a_nic_only(pci_devices):
    # 16.0 GT/s x8 of 32.0 GT/s x16: as a GPU's link its speed is no evidence (GPUs lower it when idle), its width is
    gpu = gpu_health.health_findings('n', {'pcie': [_recorded(pci_devices, '0000:01:00.0', 'gpu')]})
    assert [(f['check'], f['seen']) for f in gpu] == [('pcie_width', 'PCIe link x8 of x16')]
    nic = gpu_health.health_findings('n', {'pcie': [_recorded(pci_devices, '0000:01:00.0', 'nic')]})
    assert [(f['check'], f['seen']) for f in nic] == [
        ('pcie_width', 'PCIe link x8 of x16'), ('pcie_speed', 'PCIe link at 16.0 GT/s PCIe of 32.0 GT/s PCIe')]


def test_a_recorded_virtual_function_gives_no_finding(pci_devices):
    # an SR-IOV virtual function reads width 0 and no speed: its physical function's link is the one to judge
    assert gpu_health.health_findings('n', {'pcie': [_recorded(pci_devices, '0000:09:10.0', 'nic')]}) == []


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
    assert findings[0]['action'].startswith('fix what the message names on the node')


def test_dcgmi_4_key_and_warnings():
    text = ('{"DCGM Diagnostic": {"test_categories": [{"category": "Hardware", "tests": [{"name": "memory", "results": '
            '[{"entity_id": 1, "status": "Fail", "warnings": [{"warning": "DBE detected", "error_id": 7}]}]}]}]}}')
    dcgm = gpu_health.parse_dcgmi_diag(text)
    assert dcgm['results'] == [{'category': 'Hardware', 'test': 'memory', 'gpus': [1], 'status': 'FAIL',
                                'message': 'DBE detected'}]
    finding = gpu_health.health_findings('n', {'dcgm': dcgm})[0]
    assert finding['device'] == 'GPU 1 (DCGM id)'
    # a hardware test's failure drains the node; a software one (below) is the node's setup
    assert finding['action'].startswith('drain')


PERSISTENCE = ('Persistence Mode: Persistence mode for GPU 0 is disabled. Enable persistence mode by running '
               '"nvidia-smi -i <gpuId> -pm 1 " as root.')


def test_dcgmi_4_gb10_software_fail_names_the_gpu(fixture_text):
    dcgm = gpu_health.parse_dcgmi_diag(fixture_text('dcgmi', 'diag-4.5.2-gb10-r2-software-fail.txt'))
    assert dcgm['version'] == '4.5.2'
    assert dcgm['results'] == [
        {'category': 'Deployment', 'test': 'software', 'gpus': [0], 'status': 'FAIL', 'message': PERSISTENCE},
        {'category': 'Hardware', 'test': 'memory', 'gpus': [0], 'status': 'PASS', 'message': ''},
        {'category': 'Integration', 'test': 'pcie', 'gpus': [0], 'status': 'PASS', 'message': ''}]
    # the passing memory and pcie tests give nothing; the failed one names the GPU, by DCGM id without nvidia-smi
    findings = gpu_health.health_findings('spark', {'dcgm': dcgm})
    assert [(f['device'], f['check'], f['seen']) for f in findings] == [
        ('GPU 0 (DCGM id)', 'dcgm', 'dcgmi diag Deployment / software failed: ' + PERSISTENCE)]
    # persistence mode off is the node's setup, not a GPU to RMA
    assert findings[0]['action'].startswith('fix what the message names on the node')
    quiet = {'index': 0, 'pci': '000f:01:00.0', 'ecc_uncorrectable': {'volatile': None, 'aggregate': None},
             'remapped_rows': None, 'retired_pages': None, 'clock_reasons': {}}
    assert [f['device'] for f in gpu_health.health_findings('spark', {'dcgm': dcgm, 'gpus': [quiet]})] == [
        'GPU 000f:01:00.0']


def test_dcgmi_4_gb10_skipped_tests_give_no_finding(fixture_text):
    dcgm = gpu_health.parse_dcgmi_diag(fixture_text('dcgmi', 'diag-4.5.2-gb10-r2-memory-pcie-skip.txt'))
    assert dcgm['version'] == '4.5.2'
    assert [(r['test'], r['gpus'], r['status']) for r in dcgm['results']] == [
        ('software', [0], 'FAIL'), ('memory', [0], 'SKIP'), ('pcie', [0], 'SKIP')]
    assert [f['seen'] for f in gpu_health.health_findings('n', {'dcgm': dcgm})] == [
        'dcgmi diag Deployment / software failed: ' + PERSISTENCE]


def test_dcgmi_4_a_failed_test_summary_alone_is_a_failure(fixture_text):
    # the GB10 run with its software result passed and the test's own summary still failed
    text = fixture_text('dcgmi', 'diag-4.5.2-gb10-r2-software-fail.txt')
    assert text.count('"status" : "Fail"') == 2
    dcgm = gpu_health.parse_dcgmi_diag(text.replace('"status" : "Fail"', '"status" : "Pass"', 1))
    assert dcgm['results'][:2] == [
        {'category': 'Deployment', 'test': 'software', 'gpus': [0], 'status': 'PASS', 'message': PERSISTENCE},
        {'category': 'Deployment', 'test': 'software', 'gpus': [], 'status': 'FAIL', 'message': PERSISTENCE}]
    assert [f['device'] for f in gpu_health.health_findings('n', {'dcgm': dcgm})] == ['GPUs']


def test_dcgmi_4_an_entity_of_another_group_is_no_gpu(fixture_text):
    # the GB10 run with its software result moved to CPU 0 (entity group 7, DCGM_FE_CPU): id 0 is not GPU 0
    text = fixture_text('dcgmi', 'diag-4.5.2-gb10-r2-software-fail.txt')
    text = text.replace('"entity_group" : "GPU"', '"entity_group" : "CPU"', 1).replace(
        '"entity_group_id" : 1', '"entity_group_id" : 7', 1)
    result = gpu_health.parse_dcgmi_diag(text)['results'][0]
    assert result['gpus'] == [] and result['message'] == 'CPU 0: ' + PERSISTENCE and result['status'] == 'FAIL'


def test_dcgmi_runtime_error_is_named():
    with pytest.raises(ValueError, match='dcgmi diag did not run: no GPUs to test'):
        gpu_health.parse_dcgmi_diag('{"DCGM Diagnostic": {"runtime_error": "no GPUs to test"}}')


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
    assert report == {'passed': True, 'findings': [], 'unread': [], 'messages': [], 'summary': 'no finding',
                      'nvlink': {}}
    with pytest.raises(TypeError):
        gpu_health.health_report([])
