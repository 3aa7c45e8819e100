# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""nvidia-smi -q as text: the XML parser's structure from recorded text of two driver generations, the rules on it,
the -d selection, a paste with lines of no form, and the reader that tells XML from text from neither."""

from __future__ import annotations

import pytest

from ansible_collections.hpcfabric.cluster.plugins.module_utils import gpu_health
from ansible_collections.hpcfabric.cluster.plugins.module_utils.nvidia_smi_text import (
    parse_nvidia_smi_text,
    read_nvidia_smi,
)

QUIET_CLOCKS = {'gpu_idle': True, 'applications_clocks_setting': False, 'sw_power_cap': False, 'hw_slowdown': False,
                'hw_thermal_slowdown': False, 'hw_power_brake_slowdown': False, 'sync_boost': False,
                'sw_thermal_slowdown': False, 'display_clocks_setting': False}


def test_a10_550_reads_as_the_xml_parser_gives_it(fixture_text):
    gpus, links, unreadable = parse_nvidia_smi_text(fixture_text('nvidia-smi-q-text', 'a10-550.127.05-gpud.txt'))
    assert gpus == [{'index': 0, 'pci': '0000:06:00.0', 'uuid': 'GPU-51ae0086-e1ac-4a20-f062-9caa44e4df6d',
                     'product': 'NVIDIA A10', 'ecc_mode': 'Enabled',
                     'ecc_uncorrectable': {'volatile': 0, 'aggregate': 0},
                     'remapped_rows': {'pending': False, 'failure': False, 'uncorrectable': 0},
                     'retired_pages': None, 'clock_reasons': QUIET_CLOCKS}]
    # GPU Link Info: gen 1 of 4 at x16, as sysfs words it
    assert links == [{'kind': 'gpu', 'device': 'GPU 0000:06:00.0', 'pci': '0000:06:00.0',
                      'current_speed': '2.5 GT/s PCIe', 'max_speed': '16.0 GT/s PCIe', 'current_width': '16',
                      'max_width': '16'}]
    assert unreadable == []


def test_the_text_gives_the_keys_and_reasons_the_xml_gives(fixture_text):
    text = parse_nvidia_smi_text(fixture_text('nvidia-smi-q-text', 'a10-550.127.05-gpud.txt'))[0][0]
    xml = gpu_health.parse_nvidia_smi_xml(fixture_text('nvidia-smi-q', 'a100-sxm4-80gb-535-mig.xml'))[0]
    assert set(text) == set(xml)
    assert set(text['clock_reasons']) == set(xml['clock_reasons'])
    assert set(text['ecc_uncorrectable']) == set(xml['ecc_uncorrectable'])


def test_r460_throttle_reasons_ecc_mode_case_and_pci_domains(fixture_text):
    gpus, links, dummy = parse_nvidia_smi_text(
        fixture_text('nvidia-smi-q-text', 'a100-sxm4-40gb-460.32.03-azure-first2.txt'))
    assert [(g['index'], g['pci'], g['ecc_mode']) for g in gpus] == [
        (0, '0001:00:00.0', 'Enabled'), (1, '0002:00:00.0', 'Enabled')]
    assert gpus[1]['uuid'] == 'GPU-fccd4a78-556b-7b41-320b-f2a10438c176'
    assert gpus[0]['clock_reasons'] == QUIET_CLOCKS
    assert [link['current_speed'] for link in links] == ['16.0 GT/s PCIe', '16.0 GT/s PCIe']


def test_faults_in_the_text_are_the_rules_findings(fixture_text):
    gpus = parse_nvidia_smi_text(fixture_text('nvidia-smi-q-text', 'a10-550.127.05-faults-derived.txt'))[0]
    assert gpus[0]['ecc_uncorrectable'] == {'volatile': 2, 'aggregate': 2}
    assert gpus[0]['remapped_rows'] == {'pending': True, 'failure': False, 'uncorrectable': 1}
    findings = gpu_health.health_findings('node07', {'gpus': gpus})
    assert [(f['device'], f['check']) for f in findings] == [
        ('GPU 0000:06:00.0', 'ecc'), ('GPU 0000:06:00.0', 'row_remap'), ('GPU 0000:06:00.0', 'throttle')]
    assert 'hw_slowdown' in findings[2]['seen']


def test_retired_pages_with_values(fixture_text):
    # derived: the A10's N/A replaced by what a GPU before Ampere prints there
    text = fixture_text('nvidia-smi-q-text', 'a10-550.127.05-gpud.txt').replace(
        'Double Bit ECC                    : N/A', 'Double Bit ECC                    : 3').replace(
        'Pending Page Blacklist            : N/A', 'Pending Page Blacklist            : Yes')
    assert parse_nvidia_smi_text(text)[0][0]['retired_pages'] == {'pending': True, 'double_bit': 3}


def test_a_d_ecc_selection_gives_what_it_shows(fixture_text):
    # derived: nvidia-smi -q -d ECC prints the header, the GPU line and its ECC sections only
    lines = fixture_text('nvidia-smi-q-text', 'a10-550.127.05-faults-derived.txt').split('\n')
    start, end = lines.index('    ECC Mode'), lines.index('    Retired Pages')
    gpus, links, unreadable = parse_nvidia_smi_text('\n'.join(lines[:10] + lines[start:end]))
    assert gpus[0]['ecc_uncorrectable'] == {'volatile': 2, 'aggregate': 2}
    assert (gpus[0]['remapped_rows'], gpus[0]['clock_reasons'], links, unreadable) == (None, {}, [], [])


def test_lines_of_no_form_are_named_and_the_rest_is_read(fixture_text):
    text = ('root@gpu07:~# nvidia-smi -q\x1b[0m\n' + fixture_text('nvidia-smi-q-text', 'a10-550.127.05-gpud.txt')
            + 'root@gpu07:~# exit\n')
    read = read_nvidia_smi(text)
    assert read['form'] == 'text' and read['gpus'][0]['product'] == 'NVIDIA A10'
    assert read['unreadable'] == [(1, 'root@gpu07:~# nvidia-smi -q'), (224, 'root@gpu07:~# exit')]


def test_xml_goes_to_the_xml_parser_with_its_links(fixture_text):
    xml = fixture_text('nvidia-smi-q', 'tesla-p100-510.xml')
    read = read_nvidia_smi(xml)
    assert read['form'] == 'xml' and read['gpus'] == gpu_health.parse_nvidia_smi_xml(xml)
    assert read['links'] == [{'kind': 'gpu', 'device': 'GPU 0000:00:04.0', 'pci': '0000:00:04.0',
                              'current_speed': '8.0 GT/s PCIe', 'max_speed': '8.0 GT/s PCIe', 'current_width': '16',
                              'max_width': '16'}]


@pytest.mark.parametrize('text', [
    'NVIDIA-SMI has failed because it couldn\'t communicate with the NVIDIA driver.\n',
    '',
])
def test_text_of_neither_form_fails_naming_both(text):
    with pytest.raises(ValueError, match=r'neither nvidia-smi -q -x \(XML\) or nvidia-smi -q \(text\)'):
        read_nvidia_smi(text)


@pytest.mark.parametrize('text, why', [
    ('<html><body>502 Bad Gateway</body></html>', 'the root element is <html>'),
    ('<?xml version="1.0" ?>\n<nvidia_smi_log>\n<gpu id="00000000:3B:00.0">', 'not XML'),
])
def test_xml_of_no_nvidia_smi_fails_naming_the_forms(text, why):
    with pytest.raises(ValueError, match=r'%s.*\(the forms taken: nvidia-smi -q -x \(XML\) or nvidia-smi -q' % why):
        read_nvidia_smi(text)
