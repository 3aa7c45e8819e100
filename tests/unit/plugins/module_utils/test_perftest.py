# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""ib_write_bw's report read from recorded outputs (tests/unit/fixtures/perftest, sources in SOURCES.md), its command
lines, and its report judged as the isolation judges a run."""
from __future__ import annotations

import pytest

from ansible_collections.hpcfabric.cluster.plugins.module_utils.perftest import bench_of_report, bw_argv, parse_bw_report
from ansible_collections.hpcfabric.cluster.plugins.module_utils.validate.thresholds import allreduce_threshold
from ansible_collections.hpcfabric.cluster.plugins.module_utils.validate.verdicts import allreduce_verdict


def test_a_sweep_gives_every_row(fixture_text):
    rows = parse_bw_report(fixture_text('perftest', 'ib_write_bw-roce-bidirectional-sweep.txt'))
    assert [row['size_bytes'] for row in rows] == [2 << power for power in range(23)]
    assert rows[0] == {'size_bytes': 2, 'iterations': 5000, 'peak_gbps': 0.142947, 'average_gbps': 0.012281,
                       'msg_rate_mpps': 0.767588}
    assert rows[-1]['average_gbps'] == 204.59


def test_a_cuda_run_in_duration_mode_past_its_warnings_and_tabs(fixture_text):
    rows = parse_bw_report(fixture_text('perftest', 'ib_write_bw-a40-cuda-duration.txt'))
    assert rows == [{'size_bytes': 65536, 'iterations': 10384867, 'peak_gbps': 0.0, 'average_gbps': 181.46,
                     'msg_rate_mpps': 0.3461}]


def test_the_report_judged_as_a_run_at_its_own_size(fixture_text):
    bench = bench_of_report(fixture_text('perftest', 'ib_write_bw-a40-cuda-duration.txt'), ['node02', 'node01'], True)
    seen = (bench['tool'], bench['device'], bench['hosts'], bench['correct'])
    assert seen == ('ib_write_bw', 'cuda', ['node01', 'node02'], None)
    row = bench['results'][0]
    assert row['busbw_gbs'] == row['algbw_gbs'] == pytest.approx(181.46 / 8)
    # one 64 KiB message at 22.68 GB/s
    assert row['time_us'] == pytest.approx(65536 / (181.46 / 8 * 1e3))
    # 40% of a 200G port is 10 GB/s: passed; perftest checks no data, so the verdict rests on bandwidth alone
    passed = allreduce_verdict(bench, allreduce_threshold('derived', derived_fraction=0.4,
                                                          node_rates_gbps={'node01': 200}), 65536)
    assert passed['passed'] and passed['correct'] is None
    failed = allreduce_verdict(bench, allreduce_threshold('explicit', min_busbw_gbs=40), 65536)
    assert not failed['passed']
    assert failed['reason'] == 'busbw 22.7 GB/s at 64 KiB < 40 GB/s threshold (explicit)'


@pytest.mark.parametrize('text, message', [
    ('Couldn\'t connect to 10.0.0.2:18515\nUnable to open file descriptor for socket connection', 'no "#bytes'),
    (' #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n 65536 5000 9000.1 9000.0 0.1\n',
     'in MB/sec: run it with --report_gbits'),
    (' #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n', 'no result row'),
    (None, 'must be text'),
])
def test_what_is_not_a_report_is_refused(text, message):
    with pytest.raises(ValueError, match=message):
        parse_bw_report(text)


def test_server_and_client_argv():
    server = bw_argv('/usr/bin/ib_write_bw', 'mlx5_3', 1, gid_index=3, gpu=2, size_bytes=8388608, seconds=5,
                     tcp_port=18516, extra_args=['--qp=4'])
    assert server == ['/usr/bin/ib_write_bw', '--ib-dev=mlx5_3', '--ib-port=1', '--report_gbits', '--CPU-freq',
                      '--size=8388608', '--duration=5', '--port=18516', '--gid-index=3', '--use_cuda=2', '--qp=4']
    client = bw_argv('/usr/bin/ib_write_bw', 'mlx5_0', 1, tcp_port=18515, server_address='10.152.0.13')
    assert client[-1] == '10.152.0.13' and not any(arg.startswith(('--gid-index', '--use_cuda')) for arg in client)
    with pytest.raises(ValueError, match='device must be a name that is not an option'):
        bw_argv('/usr/bin/ib_write_bw', '--help', 1)
