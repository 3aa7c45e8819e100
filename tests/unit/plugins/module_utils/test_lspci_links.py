# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""PCIe links from lspci -vv: recorded root and non-root outputs, the -D and web-copy forms of them, the rules on the
records, and text that is no lspci."""

from __future__ import annotations

import pytest

from ansible_collections.hpcfabric.cluster.plugins.module_utils import gpu_health
from ansible_collections.hpcfabric.cluster.plugins.module_utils.lspci_links import parse_lspci, read_lspci

CX5 = {'kind': 'nic', 'device': 'NIC 0000:01:00.0 (Mellanox Technologies MT27800 Family [ConnectX-5])',
       'pci': '0000:01:00.0', 'current_speed': '8.0 GT/s PCIe', 'max_speed': '8.0 GT/s PCIe', 'current_width': '8',
       'max_width': '16'}
A6000 = {'kind': 'gpu', 'device': 'GPU 0000:22:00.0', 'pci': '0000:22:00.0', 'current_speed': '2.5 GT/s PCIe',
         'max_speed': '16.0 GT/s PCIe', 'current_width': '16', 'max_width': '16'}


def test_every_device_section_is_read(fixture_text):
    devices, unreadable = parse_lspci(fixture_text('lspci', 'supermicro-as4124gs-cx5-rtxa6000-vvnn.txt'))
    assert [(d['pci'], d['class'], d['code']) for d in devices] == [
        ('0000:01:00.0', 'Ethernet controller', '0200'), ('0000:21:00.0', 'Signal processing controller', '1180'),
        ('0000:22:00.0', 'VGA compatible controller', '0300'), ('0000:22:00.1', 'Audio device', '0403')]
    assert devices[1]['link'] == {'current_speed': '2.5 GT/s PCIe', 'max_speed': '2.5 GT/s PCIe',
                                  'current_width': '1', 'max_width': '1'}
    assert unreadable == []


def test_the_gpu_and_the_nic_become_the_sysfs_records(fixture_text):
    read = read_lspci(fixture_text('lspci', 'supermicro-as4124gs-cx5-rtxa6000-vvnn.txt'))
    # the BMC's signal processing controller and the GPU's audio function are no GPU and no NIC
    assert read == {'links': [CX5, A6000], 'unread': [], 'unreadable': []}
    # the NIC trained at x8 of x16 is a finding; the idle GPU's gen 1 is not (its speed is not judged)
    findings = gpu_health.health_findings('gpu01', {'pcie': read['links']})
    assert [(f['device'], f['check'], f['seen']) for f in findings] == [(CX5['device'], 'pcie_width', 'PCIe link x8 of x16')]


def test_the_domain_form_and_a_web_copy_read_the_same(fixture_text):
    # derived: lspci -D puts the domain before each address; a web page's copy turns the tabs into spaces
    text = fixture_text('lspci', 'supermicro-as4124gs-cx5-rtxa6000-vvnn.txt')
    domain = '\n'.join('0000:' + line if line[:1].isalnum() else line for line in text.split('\n'))
    assert read_lspci(domain)['links'] == [CX5, A6000]
    assert read_lspci(text.replace('\t', '    '))['links'] == [CX5, A6000]


def test_lspci_without_root_leaves_the_link_unread(fixture_text):
    read = read_lspci(fixture_text('lspci', 'asus-esc4000g2-82574l-vvnn-nonroot.txt'))
    assert read['links'] == []
    assert read['unread'] == [{'source': 'PCIe link of NIC 0000:05:00.0 (Intel Corporation 82574L Gigabit Network '
                                         'Connection)',
                               'why': 'lspci ran without root: it prints "Capabilities: <access denied>" instead of '
                                      'the link'}]


def test_a_prompt_and_a_grep_of_the_link_lines(fixture_text):
    # derived: "lspci -vv -s 22:00.0 | grep -E 'NVIDIA|LnkCap|LnkSta'" keeps the GPU's device line and link lines
    lines = fixture_text('lspci', 'supermicro-as4124gs-cx5-rtxa6000-vvnn.txt').split('\n')
    section = lines[lines.index(next(line for line in lines if line.startswith('22:00.0'))):]
    kept = [line for line in section[:section.index('')] if 'NVIDIA' in line or 'LnkCap:' in line or 'LnkSta:' in line]
    assert len(kept) == 4
    read = read_lspci('$ sudo lspci -vv -s 22:00.0 | grep -E "NVIDIA|LnkCap|LnkSta"\n' + '\n'.join(kept))
    assert read['unreadable'] == [(1, '$ sudo lspci -vv -s 22:00.0 | grep -E "NVIDIA|LnkCap|LnkSta"')]
    assert read['links'] == [A6000]


@pytest.mark.parametrize('text', ['bash: lspci: command not found\n', ''])
def test_text_without_a_device_line_fails_naming_the_form(text):
    with pytest.raises(ValueError, match=r'not lspci -vv \(device lines such as'):
        read_lspci(text)
