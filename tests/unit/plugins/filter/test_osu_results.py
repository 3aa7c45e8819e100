# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""osu_results filter on recorded OSU micro-benchmark outputs (fixtures osu/, see SOURCES.md)."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.hpcfabric.cluster.plugins.filter.osu_results import FilterModule

osu_results = FilterModule().filters()['osu_results']


def test_filter_is_registered_under_its_file_name():
    assert list(FilterModule().filters()) == ['osu_results']


def test_latency_with_warnings_between_rows(fixture_text):
    result = osu_results(fixture_text('osu', 'osu_latency-5.0-warnings-derived.txt'))
    assert result['benchmark'] == 'OSU MPI Latency Test'
    assert result['metric'] == 'latency_us'
    assert len(result['rows']) == 24
    assert result['rows'][4] == {'size_bytes': 8, 'value': 1.86}
    assert result['rows'][15] == {'size_bytes': 16384, 'value': 13.62}


def test_bandwidth(fixture_text):
    result = osu_results(fixture_text('osu', 'osu_bw-5.6.2-ucx-cray.txt'))
    assert result['benchmark'] == 'OSU MPI Bandwidth Test'
    assert result['metric'] == 'bandwidth_mb_s'
    assert max(row['value'] for row in result['rows']) == 1804.88
    assert result['rows'][-1] == {'size_bytes': 4194304, 'value': 1785.15}


def test_collective_average_latency(fixture_text):
    result = osu_results(fixture_text('osu', 'osu_reduce-cuda-7.3-excerpt.txt'))
    assert result['benchmark'] == 'OSU MPI-CUDA Reduce Latency Test'
    assert result['metric'] == 'avg_latency_us'
    assert result['rows'][0] == {'size_bytes': 1, 'value': 53.34}


def test_cut_row_raises_with_the_line(fixture_text):
    text = fixture_text('osu', 'osu_bw-cuda-5.6.1-dd.txt') + '524288\n'
    with pytest.raises(AnsibleFilterError) as err:
        osu_results(text)
    assert "'524288'" in str(err.value)


def test_non_osu_text_raises():
    with pytest.raises(AnsibleFilterError) as err:
        osu_results('bash: osu_latency: command not found\n')
    assert 'osu_latency: command not found' in str(err.value)


def test_non_string_input_raises():
    with pytest.raises(AnsibleFilterError):
        osu_results(['0 1.84'])
