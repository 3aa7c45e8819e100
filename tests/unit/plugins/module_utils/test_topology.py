# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The nvidia-smi topo -m parser on recorded outputs (tests/unit/fixtures/nvidia-smi-topo/SOURCES.md)."""
from __future__ import annotations
import copy
import random
import re

import pytest

from ansible_collections.hpcfabric.cluster.plugins.module_utils.topology import (
    TopologyParseError, expand_list, merge_nvml, parse_topology)

CMD = 'nvidia-smi-topo'

# fixture: gpu_count, nic_count, links[GPU0][GPU1], GPU0 nearest_nics, GPU0 cpu_affinity, nvlink, NIC devices
CASES = {
    'h200-1gpu.txt': (1, 0, None, [], '0-23', False, []),
    'rtx2080super-windows-1gpu-ansi.txt': (1, 0, None, [], None, False, []),
    'rtx5090-2gpu-phb.txt': (2, 0, 'PHB', [], '0-63', False, []),
    'a100-2gpu-mlx5-headers.txt': (2, 2, 'SYS', ['mlx5_0'], '0-63', False, ['mlx5_0', 'mlx5_1']),
    'm60-2gpu-soc-no-leading-tab.txt': (2, 0, 'SOC', [], '0-11', False, []),
    'v100-4gpu-nv3-mlx5-headers.txt': (4, 4, 'NV3', ['mlx5_0', 'mlx5_1'], '0-63', True,
                                       ['mlx5_0', 'mlx5_1', 'mlx5_2', 'mlx5_3']),
    'gb200-4gpu-grace.txt': (4, 0, 'NV18', [], '0-71', True, []),
    'gb200-4gpu-grace-truncated.txt': (4, 6, 'NV18', [], '0-71', True, [None] * 6),
    'rtx4090-5gpu-spaces.txt': (5, 0, 'SYS', [], '8-15,24-31', False, []),
    'gtx10-7gpu-pix-phb-spaces.txt': (7, 0, 'PIX', [], '0-19', False, []),
    'dgx-a100-8gpu-nv12-nic-legend.txt': (8, 10, 'NV12', ['mlx5_0', 'mlx5_1'], '48-63,176-191', True,
                                          ['mlx5_%d' % i for i in range(10)]),
    'h20-8gpu-nv18-nic-legend.txt': (8, 8, 'NV18', ['mlx5_1'], '0-47,96-143', True,
                                     ['mlx5_%d' % i for i in range(1, 9)]),
    'rtx4090-8gpu-2nic-no-legend.txt': (8, 2, 'SYS', [], '0-55,112-167', False, [None, None]),
    'h100-8gpu-nv18-truncated.txt': (8, 9, 'NV18', ['NIC8'], '0-79', True, [None] * 9),
    'h200-1gpu-4nic-caret-escapes.txt': (1, 4, None, ['mlx5_7', 'mlx5_8'], '169,171,173', False,
                                         ['mlx5_1', 'mlx5_2', 'mlx5_7', 'mlx5_8']),
    'dgx-a100-8gpu-nv12-realigned-mixed.txt': (8, 10, 'NV12', ['mlx5_0', 'mlx5_1'], '48-63,176-191', True,
                                               ['mlx5_%d' % i for i in range(10)]),
}

# fixtures that are complete and fully named: the parser must not warn about them
CLEAN = sorted(name for name in CASES if 'truncated' not in name and 'no-legend' not in name)


def parse(fixture_text, name):
    return parse_topology(fixture_text(CMD, name))


@pytest.mark.parametrize('name', sorted(CASES))
def test_fixture_facts(fixture_text, name):
    gpus, nics, link01, nearest0, cpu0, nvlink, devices = CASES[name]
    facts, dummy = parse(fixture_text, name)
    assert facts['gpu_count'] == gpus
    assert facts['nic_count'] == nics
    assert facts['links']['GPU0'].get('GPU1') == link01
    assert facts['links']['GPU0']['GPU0'] == 'X'
    assert facts['gpus'][0]['nearest_nics'] == nearest0
    assert facts['gpus'][0]['cpu_affinity'] == cpu0
    assert facts['nvlink'] is nvlink
    assert [nic['device'] for nic in facts['nics']] == devices
    assert [gpu['index'] for gpu in facts['gpus']] == list(range(gpus))
    assert facts['nvml'] is None


@pytest.mark.parametrize('name', CLEAN)
def test_complete_outputs_parse_without_warnings(fixture_text, name):
    assert parse(fixture_text, name)[1] == []


def test_dgx_a100_affinities_and_nic_legend(fixture_text):
    facts, dummy = parse(fixture_text, 'dgx-a100-8gpu-nv12-nic-legend.txt')
    gpu4 = facts['gpus'][4]
    assert gpu4['cpu_affinity'] == '112-127,240-255'
    assert gpu4['cpus'][:2] == [112, 113] and gpu4['cpus'][-1] == 255 and len(gpu4['cpus']) == 32
    assert gpu4['numa_affinity'] == '7' and gpu4['numa_nodes'] == [7]
    assert gpu4['gpu_numa_id'] is None
    assert gpu4['nearest_nics'] == ['mlx5_4', 'mlx5_5']
    assert facts['nics'][0] == {'name': 'NIC0', 'device': 'mlx5_0', 'nearest_gpus': ['GPU0', 'GPU1']}
    # the storage NICs are PIX to each other but SYS to every GPU: near to no GPU
    assert facts['links']['NIC8']['NIC9'] == 'PIX'
    assert facts['nics'][8]['nearest_gpus'] == []
    assert set(facts['links']) == set(['GPU%d' % i for i in range(8)] + ['NIC%d' % i for i in range(10)])


def test_h20_legend_maps_nic0_to_mlx5_1(fixture_text):
    facts, dummy = parse(fixture_text, 'h20-8gpu-nv18-nic-legend.txt')
    assert facts['nics'][0] == {'name': 'NIC0', 'device': 'mlx5_1', 'nearest_gpus': ['GPU0']}
    assert facts['gpus'][4]['nearest_nics'] == ['mlx5_5']
    assert facts['gpus'][4]['gpu_numa_id'] is None
    assert facts['gpus'][7]['cpu_affinity'] == '48-95,144-191' and facts['gpus'][7]['numa_nodes'] == [1]
    assert facts['links']['NIC7'] == dict(
        [('GPU%d' % i, 'SYS') for i in range(4)] + [('GPU4', 'NODE'), ('GPU5', 'NODE'), ('GPU6', 'NODE'), ('GPU7', 'PIX')]
        + [('NIC%d' % i, 'SYS') for i in range(4)] + [('NIC4', 'NODE'), ('NIC5', 'NODE'), ('NIC6', 'NODE'), ('NIC7', 'X')])


def test_old_driver_mlx5_headers_and_numa_node_8(fixture_text):
    facts, dummy = parse(fixture_text, 'v100-4gpu-nv3-mlx5-headers.txt')
    assert facts['nics'][2] == {'name': 'mlx5_2', 'device': 'mlx5_2', 'nearest_gpus': ['GPU2', 'GPU3']}
    assert facts['gpus'][2]['numa_nodes'] == [8]
    assert facts['gpus'][3]['nearest_nics'] == ['mlx5_2', 'mlx5_3']
    assert facts['links']['mlx5_0']['mlx5_1'] == 'PIX'


def test_soc_of_old_drivers_ranks_as_sys(fixture_text):
    facts, dummy = parse(fixture_text, 'm60-2gpu-soc-no-leading-tab.txt')
    assert facts['links'] == {'GPU0': {'GPU0': 'X', 'GPU1': 'SOC'}, 'GPU1': {'GPU0': 'SOC', 'GPU1': 'X'}}
    assert facts['gpus'][1]['cpus'] == list(range(12))
    assert facts['gpus'][1]['numa_affinity'] is None


def test_ansi_underlined_header_and_empty_affinity_cells(fixture_text):
    text = fixture_text(CMD, 'rtx2080super-windows-1gpu-ansi.txt')
    assert '\x1b[4m' in text
    facts, warnings = parse_topology(text)
    assert facts['gpus'] == [{'name': 'GPU0', 'index': 0, 'cpu_affinity': None, 'cpus': [], 'numa_affinity': None,
                              'numa_nodes': [], 'gpu_numa_id': None, 'nearest_nics': []}]
    assert warnings == []
    # a copy from a web page keeps "[4m" but loses the escape byte
    assert parse_topology(text.replace('\x1b', ''))[0] == facts


def test_grace_numa_lists_and_gpu_numa_id(fixture_text):
    facts, dummy = parse(fixture_text, 'gb200-4gpu-grace.txt')
    assert [gpu['gpu_numa_id'] for gpu in facts['gpus']] == [2, 10, 18, 26]
    assert facts['gpus'][0]['numa_affinity'] == '0,3-9,11-17'
    assert facts['gpus'][0]['numa_nodes'] == [0, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 14, 15, 16, 17]
    assert facts['gpus'][3]['cpus'] == list(range(72, 144))


def test_pcie_only_nics_near_one_gpu(fixture_text):
    facts, warnings = parse(fixture_text, 'rtx4090-8gpu-2nic-no-legend.txt')
    assert [gpu['nearest_nics'] for gpu in facts['gpus']] == [[]] * 6 + [['NIC0', 'NIC1']] + [[]]
    assert [nic['nearest_gpus'] for nic in facts['nics']] == [['GPU6'], ['GPU6']]
    assert warnings == ['no NIC Legend entry for NIC0, NIC1: device names unknown']


def test_output_cut_in_a_nic_row_keeps_what_is_there(fixture_text):
    facts, warnings = parse(fixture_text, 'h100-8gpu-nv18-truncated.txt')
    assert sorted(facts['links']) == sorted(['GPU%d' % i for i in range(8)] + ['NIC%d' % i for i in range(6)])
    assert [gpu['nearest_nics'] for gpu in facts['gpus']] == [
        ['NIC8'], ['NIC7'], ['NIC6'], ['NIC5'], ['NIC4'], ['NIC3'], ['NIC2'], ['NIC1']]
    # NIC8 has no row left; its distances come from the GPU rows
    assert facts['nics'][8] == {'name': 'NIC8', 'device': None, 'nearest_gpus': ['GPU0']}
    assert facts['nics'][0]['nearest_gpus'] == []
    assert warnings[:2] == ["line 16 is not a matrix row (output truncated?): 'NIC'",
                            'no matrix row for NIC6, NIC7, NIC8 (output truncated?)']
    assert len(warnings) == 3 and warnings[2].startswith('no NIC Legend entry for NIC0, NIC1')


def test_output_cut_in_a_gpu_row_keeps_what_is_there(fixture_text):
    facts, warnings = parse(fixture_text, 'gb200-4gpu-grace-truncated.txt')
    assert facts['links']['GPU3'] == {'GPU0': 'NV18', 'GPU1': 'NV18', 'GPU2': 'NV18', 'GPU3': 'X', 'NIC0': 'SYS'}
    assert facts['gpus'][2]['numa_nodes'] == [1] + list(range(19, 26)) + list(range(27, 34))
    assert facts['gpus'][3]['cpu_affinity'] is None and facts['gpus'][3]['cpus'] == []
    assert warnings[0] == 'row GPU3 has 5 of 10 link codes (output truncated?)'
    assert warnings[1] == 'no matrix row for NIC0, NIC1, NIC2, NIC3, NIC4, NIC5 (output truncated?)'


def test_header_only_gives_devices_and_warns(fixture_text):
    header = fixture_text(CMD, 'dgx-a100-8gpu-nv12-nic-legend.txt').splitlines()[0]
    facts, warnings = parse_topology(header + '\n')
    assert (facts['gpu_count'], facts['nic_count'], facts['links']) == (8, 10, {})
    assert facts['gpus'][0]['nearest_nics'] == [] and facts['nvlink'] is False
    assert warnings[0].startswith('no matrix row for GPU0, GPU1')


@pytest.mark.parametrize('name', ['dgx-a100-8gpu-nv12-nic-legend.txt', 'h20-8gpu-nv18-nic-legend.txt',
                                  'v100-4gpu-nv3-mlx5-headers.txt', 'rtx5090-2gpu-phb.txt'])
def test_tabs_turned_into_spaces_give_the_same_facts(fixture_text, name):
    text = fixture_text(CMD, name)
    assert parse_topology(text.expandtabs(8)) == parse_topology(text)


def test_caret_escapes_of_a_terminal_copy_are_removed(fixture_text):
    # the lmdeploy check_env paste: nvidia-smi's underline shown as the text "^[[4m" ... "^[[0m"
    text = fixture_text(CMD, 'h200-1gpu-4nic-caret-escapes.txt')
    assert text.startswith('\t^[[4mGPU0\t') and '\x1b' not in text
    facts, warnings = parse_topology(text)
    assert warnings == []
    assert facts['gpus'] == [{'name': 'GPU0', 'index': 0, 'cpu_affinity': '169,171,173', 'cpus': [169, 171, 173],
                              'numa_affinity': '1', 'numa_nodes': [1], 'gpu_numa_id': None,
                              'nearest_nics': ['mlx5_7', 'mlx5_8']}]
    assert facts['links']['NIC2'] == {'GPU0': 'NODE', 'NIC0': 'SYS', 'NIC1': 'SYS', 'NIC2': 'X', 'NIC3': 'PIX'}
    # the same paste with the real escape bytes, or with the ESC byte lost on the way, reads the same
    assert parse_topology(text.replace('^[', '\x1b')) == (facts, [])
    assert parse_topology(text.replace('^[', '')) == (facts, [])


def test_matrix_realigned_by_hand_reads_as_the_original(fixture_text):
    realigned = fixture_text(CMD, 'dgx-a100-8gpu-nv12-realigned-mixed.txt')
    row = realigned.splitlines()[5]
    assert row.startswith('GPU4') and '\t' in row and '  ' in row
    assert parse_topology(realigned) == parse_topology(fixture_text(CMD, 'dgx-a100-8gpu-nv12-nic-legend.txt'))


def _realign(text, rng):
    """The same text as it looks on screen (tab stops of 8), each gap rewritten as a random mix of tabs and spaces."""
    lines = []
    for line in text.split('\n'):
        shown, out, column = line.expandtabs(8), [], 0
        for match in re.finditer(r'\S+', shown):
            while column < match.start():
                stop = (column // 8 + 1) * 8
                if stop <= match.start() and rng.random() < 0.5:
                    out.append('\t')
                    column = stop
                else:
                    out.append(' ')
                    column += 1
            out.append(match.group())
            column = match.end()
        lines.append(''.join(out))
    return '\n'.join(lines)


@pytest.mark.parametrize('name', sorted(CASES))
def test_any_mix_of_tabs_and_spaces_that_looks_the_same_reads_the_same(fixture_text, name):
    text = fixture_text(CMD, name)
    expected = parse_topology(text)
    rng = random.Random(name)
    for dummy in range(10):
        realigned = _realign(text, rng)
        assert parse_topology(realigned) == expected, realigned


def test_header_without_leading_tab_and_mixed_separators(fixture_text):
    text = fixture_text(CMD, 'v100-4gpu-nv3-mlx5-headers.txt')
    mixed = text.lstrip('\t').replace('mlx5_0\tNODE', 'mlx5_0 NODE').replace('GPU1\tNV3\t', 'GPU1\t NV3  \t')
    assert mixed != text
    assert parse_topology(mixed) == parse_topology(text)


def test_unreadable_affinity_is_a_warning_not_an_error(fixture_text):
    text = fixture_text(CMD, 'rtx5090-2gpu-phb.txt').replace('PHB\t0-63', 'PHB\t0-x', 1)
    facts, warnings = parse_topology(text)
    assert facts['gpus'][0]['cpu_affinity'] == '0-x' and facts['gpus'][0]['cpus'] == []
    assert facts['gpus'][1]['cpus'] == list(range(64))
    assert warnings == ["GPU0: cannot read CPU affinity '0-x'"]


@pytest.mark.parametrize('text, line', [
    ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest "
     "NVIDIA driver is installed and running.\n",
     "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest "
     "NVIDIA driver is installed and running."),
    ('\n\n  Legend:\n\n  X    = Self\n', 'Legend:'),
    ('', ''),
    # a row without its header cannot be read: the column names are unknown
    ('GPU0\t X \tNV12\t0-31\t0\n', 'GPU0\t X \tNV12\t0-31\t0'),
])
def test_text_without_a_matrix_raises_naming_the_line(text, line):
    with pytest.raises(TopologyParseError) as err:
        parse_topology(text)
    assert err.value.line == line
    assert 'no topology matrix header' in str(err.value)


def test_expand_list():
    assert expand_list('0-31,64-95') == list(range(32)) + list(range(64, 96))
    assert expand_list('1') == [1]
    assert expand_list('0,3-4') == [0, 3, 4]
    for bad in ('5-3', 'a-b', '', '1,,2'):
        with pytest.raises(ValueError):
            expand_list(bad)


INVENTORY = [
    {'index': 1, 'name': 'NVIDIA GeForce RTX 5090', 'uuid': 'GPU-bbbb', 'pci_bus_id': '00000000:41:00.0',
     'memory_total_mib': 32607, 'driver_version': '575.57.08'},
    {'index': 0, 'name': 'NVIDIA GeForce RTX 5090', 'uuid': 'GPU-aaaa', 'pci_bus_id': '00000000:01:00.0',
     'memory_total_mib': '32607', 'driver_version': '575.57.08'},
]


def test_merge_nvml_sets_an_ordered_inventory(fixture_text):
    facts, dummy = parse(fixture_text, 'rtx5090-2gpu-phb.txt')
    before = copy.deepcopy(facts)
    merged, warnings = merge_nvml(facts, INVENTORY)
    assert facts == before
    assert [entry['uuid'] for entry in merged['nvml']] == ['GPU-aaaa', 'GPU-bbbb']
    assert merged['nvml'][0] == {'index': 0, 'name': 'NVIDIA GeForce RTX 5090', 'uuid': 'GPU-aaaa',
                                 'pci_bus_id': '00000000:01:00.0', 'memory_total_mib': 32607,
                                 'driver_version': '575.57.08'}
    assert merged['gpus'] == facts['gpus']
    assert warnings == []


def test_merge_nvml_warns_when_counts_differ_and_keeps_null(fixture_text):
    facts, dummy = parse(fixture_text, 'h200-1gpu.txt')
    merged, warnings = merge_nvml(facts, INVENTORY)
    assert len(merged['nvml']) == 2
    assert warnings == ['NVML reports 2 GPUs but the topology matrix has 1']
    assert merge_nvml(facts, None) == (dict(facts, nvml=None), [])
