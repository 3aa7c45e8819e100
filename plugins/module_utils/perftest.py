# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""perftest's ``ib_write_bw`` as the isolation's per-link test: its command lines for one NIC pair, and its report
read into the shape the isolation judges (the bench JSON of files/bench/allreduce.py).

One run is a server on the pair's second node and a client on its first, each on its own end's RDMA port of the
rail (``-d``/``-i``, ``-x`` the RoCE v2 GID index where the port has one), in duration mode (``-D``) at one message
size, with ``--report_gbits`` (the report's rows are then in Gb/s, 10^9 bits). ``--use_cuda=N`` puts the buffers in
the GPU the cluster model chose for the rail, where the node's ib_write_bw was built with CUDA.
"""

from __future__ import annotations

import re

# a report's column header: "#bytes #iterations BW peak[Gb/sec] BW average[Gb/sec] MsgRate[Mpps]"
_HEADER = re.compile(r'^\s*#bytes\s+#iterations\s+BW peak\[(?P<unit>[^\]]+)\]\s+BW average\[(?P=unit)\]')
_ROW = re.compile(r'^\s*(?P<bytes>\d+)\s+(?P<iterations>\d+)\s+(?P<peak>\d+(?:\.\d+)?)\s+(?P<average>\d+(?:\.\d+)?)'
                  r'(?:\s+(?P<rate>\d+(?:\.\d+)?))?\s*$')


def parse_bw_report(text):
    """The result rows of an ``ib_*_bw --report_gbits`` report: ``[{size_bytes, iterations, peak_gbps,
    average_gbps, msg_rate_mpps}]`` (``msg_rate_mpps`` None where the row has none).

    Lines between the header and the rows that are not rows (perftest's warnings, such as "Conflicting CPU frequency
    values detected") are skipped. Raises ValueError without a header, with a header in other units than Gb/sec (a
    run without ``--report_gbits``), or without a row.
    """
    if not isinstance(text, str):
        raise ValueError('the ib_write_bw report must be text, got %s' % type(text).__name__)
    rows = []
    unit = None
    for line in text.splitlines():
        header = _HEADER.match(line)
        if header:
            unit = header.group('unit')
            if unit != 'Gb/sec':
                raise ValueError('the ib_write_bw report is in %s: run it with --report_gbits' % unit)
            continue
        row = _ROW.match(line) if unit else None
        if row:
            rows.append({'size_bytes': int(row.group('bytes')), 'iterations': int(row.group('iterations')),
                         'peak_gbps': float(row.group('peak')), 'average_gbps': float(row.group('average')),
                         'msg_rate_mpps': float(row.group('rate')) if row.group('rate') else None})
    if unit is None:
        raise ValueError('no "#bytes #iterations BW peak BW average" header: not an ib_write_bw report')
    if not rows:
        raise ValueError('the ib_write_bw report has a header but no result row')
    return rows


def bench_of_report(text, hosts, cuda):
    """An ``ib_write_bw`` client's report as a bench JSON the isolation judges like an allreduce's:
    ``busbw_gbs`` and ``algbw_gbs`` are the average bandwidth in GB/s (Gb/s / 8; one link, one direction, as a
    2-rank allreduce's bus bandwidth is), ``time_us`` one message at that bandwidth. ``correct`` is None: perftest
    moves data and checks none of it, so the run proves bandwidth, never results.
    """
    rows = parse_bw_report(text)
    results = []
    for row in rows:
        gbs = row['average_gbps'] / 8
        results.append({'size_bytes': row['size_bytes'], 'count': row['iterations'],
                        'time_us': row['size_bytes'] / (gbs * 1e3) if gbs else None,
                        'algbw_gbs': gbs, 'busbw_gbs': gbs, 'correct': None})
    return {'world_size': 2, 'device': 'cuda' if cuda else 'cpu', 'hosts': sorted(hosts), 'tool': 'ib_write_bw',
            'mpi': None, 'results': results, 'correct': None, 'errors': []}


def bw_argv(path, device, port, gid_index=None, gpu=None, size_bytes=8388608, seconds=5, tcp_port=18515,
            extra_args=(), server_address=None):
    """``ib_write_bw``'s argv for one end of a run: the server's without ``server_address``, the client's with it.

    Both ends must agree on ``size_bytes``, ``seconds`` and ``tcp_port``; each gives its own RDMA ``device`` and
    ``port``, its RoCE v2 ``gid_index`` (None on InfiniBand) and its ``gpu`` (None: host memory).
    """
    for name, value in (('path', path), ('device', device)):
        if not isinstance(value, str) or not value or value.startswith('-'):
            raise ValueError('ib_write_bw %s must be a name that is not an option, got %r' % (name, value))
    argv = [path, '--ib-dev=%s' % device, '--ib-port=%d' % int(port), '--report_gbits', '--CPU-freq',
            '--size=%d' % int(size_bytes), '--duration=%d' % int(seconds), '--port=%d' % int(tcp_port)]
    if gid_index is not None:
        argv.append('--gid-index=%d' % int(gid_index))
    if gpu is not None:
        argv.append('--use_cuda=%d' % int(gpu))
    argv.extend(str(arg) for arg in extra_args)
    if server_address is not None:
        argv.append(str(server_address))
    return argv
