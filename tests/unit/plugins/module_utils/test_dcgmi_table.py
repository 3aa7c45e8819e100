# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The dcgmi diag table: DCGM 3.x and 4.x layouts from recorded pastes, wrapped messages joined back, a paste cut short
or with chatter around it, the rules on the result, and the reader that tells the table from JSON from neither."""

from __future__ import annotations

import pytest

from ansible_collections.hpcfabric.cluster.plugins.module_utils import gpu_health
from ansible_collections.hpcfabric.cluster.plugins.module_utils.dcgmi_table import parse_dcgmi_table, read_dcgmi_diag


def by_status(results):
    return [(r['category'], r['test'], r['gpus'], r['status']) for r in results if r['status'] != 'PASS']


def test_dcgm_3_table_with_all_gpus_failing_memory(fixture_text):
    parsed, unreadable = parse_dcgmi_table(fixture_text('dcgmi-table', 'nccl-tests-264-dcgm-3.3.8-h100x8-r3.txt'))
    assert parsed['version'] == '3.3.8'
    assert unreadable == [(1, 'sh-5.1# /usr/bin/dcgmi diag --run 3 --fail-early')]
    assert len(parsed['results']) == 13
    assert parsed['results'][0] == {'category': 'Deployment', 'test': 'Denylist', 'gpus': [], 'status': 'PASS',
                                    'message': ''}
    assert by_status(parsed['results']) == [('Integration', 'PCIe', [], 'SKIP'), ('Hardware', 'GPU Memory', [], 'FAIL'),
                                            ('Stress', 'Memory Bandwidth', [], 'SKIP'),
                                            ('Stress', 'EUD Test', [], 'SKIP')]
    message = parsed['results'][10]['message']
    # eight Warning rows, each wrapped mid-word over seven lines, joined back; the Info row is no warning
    assert message.count('; ') == 7 and 'Persistence' not in message
    assert message.startswith("GPU 0 Error using CUDA API cuInit Check DCGM and system logs for errors. Reset GPU. "
                              "Restart DCGM. Rerun diagnostics. Unable to initialize CUDA library: 'system not yet "
                              "initialized'")
    assert message.endswith('GPU 7 Error using CUDA API cuInit Check DCGM and system logs for errors. Reset GPU. '
                            "Restart DCGM. Rerun diagnostics. Unable to initialize CUDA library: 'system not yet "
                            "initialized'. . Please check if a CUDA sample program can be run successfully on this "
                            'host. Refer to https://github.com/nvidia/cuda-samples')


def test_dcgm_3_per_gpu_status_lines(fixture_text):
    parsed, unreadable = parse_dcgmi_table(fixture_text('dcgmi-table', 'ml-engineering-gpu-memory-gpu0-fail-fragment.txt'))
    assert [(r['test'], r['gpus'], r['status']) for r in parsed['results']] == [
        ('GPU Memory', [1, 2, 3, 4, 5, 6, 7], 'PASS'), ('GPU Memory', [0], 'FAIL')]
    assert parsed['results'][1]['message'].startswith('GPU 0 Thermal violations totaling 13.3 seconds started at 9.7 '
                                                      'seconds into the test for GPU 0 Verify that the cooling')
    # the author cut the last line short: named, the rest read
    assert unreadable == [(8, '|                           | ts.')]


def test_dcgm_4_failing_test_with_passing_gpus_fails_for_no_gpu(fixture_text):
    parsed, unreadable = parse_dcgmi_table(fixture_text('dcgmi-table', 'dcgm-253-4.4.1-b200x8-r2-pcie-fail.txt'))
    assert (parsed['version'], unreadable, len(parsed['results'])) == ('4.4.1', [], 25)
    assert [(r['test'], r['gpus']) for r in parsed['results'][:2]] == [('software', [0]), ('software', [1])]
    assert by_status(parsed['results']) == [('Integration', 'pcie', [], 'FAIL')]
    assert parsed['results'][-1]['message'] == (
        "There was an internal error during the test: 'Output of child process (11167) couldn't be parsed: '* Line 1, "
        "Column 1 Syntax error: value, object or array expected. '' Check DCGM and system logs for errors. Reset GPU. "
        'Restart DCGM. Rerun diagnostics.')
    findings = gpu_health.health_findings('b200-01', {'dcgm': parsed, 'gpus': []})
    assert [(f['device'], f['check']) for f in findings] == [('GPUs', 'dcgm')]
    assert findings[0]['seen'].startswith('dcgmi diag Integration / pcie failed: There was an internal error')


def test_a_table_cut_short_with_kubectl_chatter_gives_its_rows(fixture_text):
    read = read_dcgmi_diag(fixture_text('dcgmi-table', 'dcgm-253-4.2.3-4gpu-r2-pcie-fail-cut.txt'))
    assert (read['form'], read['version']) == ('table', '4.2.3')
    assert read['unreadable'] == [(1, 'Executing in Pod nvidia-dcgm-rz9cr on Host 10.0.7.139')]
    assert [(r['test'], r['gpus'], r['status']) for r in read['results'][-5:]] == [
        ('pcie', [0], 'PASS'), ('pcie', [1], 'PASS'), ('pcie', [2], 'PASS'), ('pcie', [3], 'PASS'), ('pcie', [], 'FAIL')]
    assert read['results'][-1]['message'].count('There was an internal error') == 4


def test_json_goes_to_the_json_parser(fixture_text):
    text = fixture_text('dcgmi', 'diag-3.1.0-8gpu-gpu3-fail-derived.txt')
    read = read_dcgmi_diag(text)
    assert read == dict(gpu_health.parse_dcgmi_diag(text), form='json', unreadable=[])


@pytest.mark.parametrize('text', [
    'Error: unable to establish a connection to the specified host: localhost\n',
    '| Diagnostic | Result |\n',
])
def test_text_of_neither_form_fails_naming_both(text):
    with pytest.raises(ValueError, match=r'neither dcgmi diag -j \(JSON\) or the dcgmi diag table'):
        read_dcgmi_diag(text)


def test_json_that_is_no_diagnostic_fails_naming_the_forms():
    with pytest.raises(ValueError, match=r'no "DCGM GPU Diagnostic".*\(the forms taken: dcgmi diag -j \(JSON\)'):
        read_dcgmi_diag('{"version": "4.5.2"}')


def test_a_table_without_test_rows_fails():
    with pytest.raises(ValueError, match='no test row'):
        read_dcgmi_diag('+---------------------------+------------------------------------------------+\n')
