# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""nccl_tests_results filter on recorded all_reduce_perf outputs (fixtures nccl-tests/, see SOURCES.md)."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.hpcfabric.cluster.plugins.filter.nccl_tests_results import FilterModule

nccl_tests_results = FilterModule().filters()['nccl_tests_results']


def test_filter_is_registered_under_its_file_name():
    assert list(FilterModule().filters()) == ['nccl_tests_results']


@pytest.mark.parametrize('name, rows, oop_busbw, ip_busbw, avg', [
    ('all_reduce_perf-2.6.4-efa-old-layout.txt', 29, 2.60, 2.59, 1.16154),
    ('all_reduce_perf-h100-16ranks-new-layout.txt', 31, 338.82, 337.35, 70.742),
    ('all_reduce_perf-h100-16ranks-interleaved-derived.txt', 31, 338.82, 337.35, 70.742),
])
def test_largest_row_and_summary(fixture_text, name, rows, oop_busbw, ip_busbw, avg):
    result = nccl_tests_results(fixture_text('nccl-tests', name))
    assert len(result['rows']) == rows
    largest = max(result['rows'], key=lambda row: row['size_bytes'])
    assert largest['out_of_place']['busbw_gbs'] == oop_busbw
    assert largest['in_place']['busbw_gbs'] == ip_busbw
    assert result['avg_busbw_gbs'] == avg
    assert result['out_of_bounds'] == 0


def test_unparseable_row_raises_filter_error_with_the_line(fixture_text):
    text = fixture_text('nccl-tests', 'all_reduce_perf-h100-16ranks-new-layout.txt')
    text += ' 17179869184    4294967296     float     sum      -1    95070  180.7x  338.83      0    95060  180.73  338.87      0\n'
    with pytest.raises(AnsibleFilterError) as err:
        nccl_tests_results(text)
    assert '17179869184' in str(err.value)
    assert "'180.7x'" in str(err.value)


def test_text_without_rows_raises():
    with pytest.raises(AnsibleFilterError) as err:
        nccl_tests_results('# nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592\n')
    assert 'no all_reduce_perf result rows' in str(err.value)


def test_non_string_input_raises():
    with pytest.raises(AnsibleFilterError) as err:
        nccl_tests_results({'stdout': ''})
    assert 'string' in str(err.value)
