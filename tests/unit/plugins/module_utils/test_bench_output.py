# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""nccl-tests / OSU parsers and the busbw formula on recorded outputs (fixtures nccl-tests/, osu/; see SOURCES.md)."""

from __future__ import annotations

import pytest

from ansible_collections.hpcfabric.cluster.plugins.module_utils.bench_output import (
    BenchParseError,
    allreduce_busbw,
    parse_nccl_tests,
    parse_osu,
)

H100 = 'all_reduce_perf-h100-16ranks-new-layout.txt'
H100_INTERLEAVED = 'all_reduce_perf-h100-16ranks-interleaved-derived.txt'
EFA_OLD = 'all_reduce_perf-2.6.4-efa-old-layout.txt'


def test_old_layout_without_root(fixture_text):
    result = parse_nccl_tests(fixture_text('nccl-tests', EFA_OLD))
    rows = result['rows']
    assert len(rows) == 29
    assert rows[0] == {'size_bytes': 8, 'count': 2, 'type': 'float', 'redop': 'sum',
                       'out_of_place': {'time_us': 52.16, 'algbw_gbs': 0.0, 'busbw_gbs': 0.0},
                       'in_place': {'time_us': 52.04, 'algbw_gbs': 0.0, 'busbw_gbs': 0.0}}
    largest = rows[-1]
    assert largest['size_bytes'] == 2147483648
    assert largest['count'] == 536870912
    assert largest['out_of_place'] == {'time_us': 826687.0, 'algbw_gbs': 2.60, 'busbw_gbs': 2.60}
    assert largest['in_place'] == {'time_us': 828420.0, 'algbw_gbs': 2.59, 'busbw_gbs': 2.59}
    assert result['avg_busbw_gbs'] == 1.16154
    assert result['out_of_bounds'] == 0


def test_new_layout_with_root_and_wrong_columns(fixture_text):
    result = parse_nccl_tests(fixture_text('nccl-tests', H100))
    rows = result['rows']
    assert len(rows) == 31
    assert [r['size_bytes'] for r in rows[:3]] == [8, 16, 32]
    largest = rows[-1]
    assert (largest['size_bytes'], largest['count'], largest['type'], largest['redop']) == \
        (8589934592, 2147483648, 'float', 'sum')
    assert largest['out_of_place'] == {'time_us': 47535.0, 'algbw_gbs': 180.71, 'busbw_gbs': 338.82}
    assert largest['in_place'] == {'time_us': 47743.0, 'algbw_gbs': 179.92, 'busbw_gbs': 337.35}
    assert result['avg_busbw_gbs'] == 70.742
    assert result['out_of_bounds'] == 0


def test_info_and_warn_lines_inside_the_table_and_na_columns(fixture_text):
    plain = parse_nccl_tests(fixture_text('nccl-tests', H100))
    interleaved = parse_nccl_tests(fixture_text('nccl-tests', H100_INTERLEAVED))
    assert interleaved == plain


def test_printed_busbw_matches_the_formula(fixture_text):
    largest = parse_nccl_tests(fixture_text('nccl-tests', H100))['rows'][-1]['out_of_place']
    # nccl-tests derives busbw from the unrounded algbw; both printed values are rounded to 0.01
    assert allreduce_busbw(largest['algbw_gbs'], 16) == pytest.approx(largest['busbw_gbs'], abs=0.02)


def test_truncated_run_keeps_rows_and_has_no_summary(fixture_text):
    lines = fixture_text('nccl-tests', H100).splitlines()
    cut = [i for i, line in enumerate(lines) if line.lstrip().startswith('1048576 ')][0]
    result = parse_nccl_tests('\n'.join(lines[:cut + 1]))
    assert len(result['rows']) == 18
    assert result['rows'][-1]['in_place']['busbw_gbs'] == 9.49
    assert result['avg_busbw_gbs'] is None
    assert result['out_of_bounds'] is None


def test_failed_validation_count(fixture_text):
    # summary line as printed in nccl-tests issue #7
    text = fixture_text('nccl-tests', EFA_OLD).replace('# Out of bounds values : 0 OK',
                                                       '# Out of bounds values : 248 FAILED')
    assert parse_nccl_tests(text)['out_of_bounds'] == 248


@pytest.mark.parametrize('prefix', [' 0: ', '[1,0]<stdout>:'])
def test_launcher_prefixes(fixture_text, prefix):
    # `srun -l` and `mpirun --tag-output` prefix every line of rank 0
    text = '\n'.join(prefix + line for line in fixture_text('nccl-tests', H100).splitlines())
    result = parse_nccl_tests(text)
    assert len(result['rows']) == 31
    assert result['rows'][-1]['in_place']['busbw_gbs'] == 337.35
    assert result['avg_busbw_gbs'] == 70.742


def test_bad_row_names_the_line(fixture_text):
    bad = '  1073741824     268435456     float     sum      -1   6759.0  garbage  297.86      0   6737.4  159.37  298.82      0'
    lines = fixture_text('nccl-tests', H100).splitlines()
    text = '\n'.join(bad if line.lstrip().startswith('1073741824 ') else line for line in lines)
    with pytest.raises(BenchParseError) as err:
        parse_nccl_tests(text)
    assert err.value.line == bad
    assert "'garbage'" in str(err.value)


def test_short_row_names_the_line():
    text = ('#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n'
            '     8388608       2097152     float     sum      -1    571.9   14.67\n')
    with pytest.raises(BenchParseError) as err:
        parse_nccl_tests(text)
    assert err.value.line.strip().startswith('8388608')


def test_no_rows_is_an_error():
    with pytest.raises(BenchParseError) as err:
        parse_nccl_tests('mpirun was unable to launch the specified application as it could not find an executable\n')
    assert err.value.line.startswith('mpirun was unable')


@pytest.mark.parametrize('name, benchmark, metric, count, size, value', [
    ('osu_latency-5.0-ofi-cray.txt', 'OSU MPI Latency Test', 'latency_us', 24, 8, 1.86),
    ('osu_latency-5.0-warnings-derived.txt', 'OSU MPI Latency Test', 'latency_us', 24, 16384, 13.62),
    ('osu_bw-5.6.2-ucx-cray.txt', 'OSU MPI Bandwidth Test', 'bandwidth_mb_s', 23, 4194304, 1785.15),
    ('osu_bw-cuda-5.6.1-dd.txt', 'OSU MPI-CUDA Bandwidth Test', 'bandwidth_mb_s', 19, 262144, 325.06),
    ('osu_reduce-cuda-7.3-excerpt.txt', 'OSU MPI-CUDA Reduce Latency Test', 'avg_latency_us', 11, 1024, 55.48),
])
def test_osu_outputs(fixture_text, name, benchmark, metric, count, size, value):
    result = parse_osu(fixture_text('osu', name))
    assert result['benchmark'] == benchmark
    assert result['metric'] == metric
    assert len(result['rows']) == count
    assert {'size_bytes': size, 'value': value} in result['rows']


def test_osu_warnings_between_rows_change_nothing(fixture_text):
    plain = parse_osu(fixture_text('osu', 'osu_latency-5.0-ofi-cray.txt'))
    noisy = parse_osu(fixture_text('osu', 'osu_latency-5.0-warnings-derived.txt'))
    assert noisy == plain
    assert plain['rows'][0] == {'size_bytes': 0, 'value': 1.84}
    assert plain['rows'][-1] == {'size_bytes': 4194304, 'value': 497.37}


def test_osu_row_without_column_header_is_an_error():
    with pytest.raises(BenchParseError) as err:
        parse_osu('# OSU MPI Latency Test v5.0\n0                       1.84\n')
    assert err.value.line == '0                       1.84'


def test_osu_cut_row_is_an_error(fixture_text):
    text = fixture_text('osu', 'osu_bw-5.6.2-ucx-cray.txt') + '8388608\n'
    with pytest.raises(BenchParseError) as err:
        parse_osu(text)
    assert err.value.line == '8388608'


def test_osu_without_rows_is_an_error():
    with pytest.raises(BenchParseError):
        parse_osu('# OSU MPI Bandwidth Test v5.6.2\n# Size      Bandwidth (MB/s)\n')


@pytest.mark.parametrize('algbw, ranks, busbw', [
    (100, 8, 175.0),
    (100.0, 2, 100.0),
    (2.60, 2, 2.60),
    (50, 1, 0.0),
    (24.0, 16, 45.0),
    (0, 1024, 0.0),
])
def test_busbw_formula(algbw, ranks, busbw):
    assert allreduce_busbw(algbw, ranks) == pytest.approx(busbw)


@pytest.mark.parametrize('algbw, ranks', [(100, 0), (100, -4), (-1.0, 8), (100, True), ('100', 8), (100, 2.0)])
def test_busbw_rejects_bad_input(algbw, ranks):
    with pytest.raises(ValueError):
        allreduce_busbw(algbw, ranks)
