# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Pure parsers for benchmark text: nccl-tests ``all_reduce_perf`` and OSU micro-benchmarks.

Also the nccl-tests bus-bandwidth formula. Used by the filter plugins and the validate role.
Unparseable text raises :class:`BenchParseError` carrying the offending line.
"""

from __future__ import annotations

import re

from ansible_collections.hpcfabric.cluster.plugins.module_utils.pasted_text import clean

# `srun -l` prefixes "0: ", `mpirun --tag-output` prefixes "[1,0]<stdout>:"; both are stripped.
_LAUNCHER_PREFIX = re.compile(r'^(?:\s*\d+: ?|\[\d+,\d+\]<std(?:out|err)>:)')
_INT = re.compile(r'^\d+$')
_FLOAT = re.compile(r'^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$')
_OOB = re.compile(r'^#\s*Out of bounds values\s*:\s*(\d+)')
_AVG = re.compile(r'^#\s*Avg bus bandwidth\s*:\s*(\S+)')
_OSU_TITLE = re.compile(r'^#\s*(OSU .*?)(?:\s+v\d[\w.]*)?\s*$')
_OSU_COLUMNS = re.compile(r'^#\s*Size\s+(.*\S)\s*$')

# Without a column header, the number of fields identifies the nccl-tests layout.
_LAYOUT_BY_WIDTH = {
    13: ['size', 'count', 'type', 'redop', 'root'],
    12: ['size', 'count', 'type', 'redop'],
    11: ['size', 'count', 'type'],
}
_GROUP = ('time', 'algbw', 'busbw', 'wrong')


class BenchParseError(ValueError):
    """Raised for benchmark text that cannot be read; ``line`` is the offending line."""

    def __init__(self, line, reason):
        self.line = line
        self.reason = reason
        super(BenchParseError, self).__init__('%s; offending line: %r' % (reason, line))


def allreduce_busbw(algbw, ranks):
    """nccl-tests bus bandwidth of an allreduce: algbw * 2 * (n - 1) / n."""
    if isinstance(ranks, bool) or not isinstance(ranks, int):
        raise ValueError('ranks must be an integer, got %r' % (ranks,))
    if ranks < 1:
        raise ValueError('ranks must be at least 1, got %d' % ranks)
    if isinstance(algbw, bool) or not isinstance(algbw, (int, float)):
        raise ValueError('algbw must be a number, got %r' % (algbw,))
    if algbw < 0:
        raise ValueError('algbw must not be negative, got %r' % (algbw,))
    return float(algbw) * 2 * (ranks - 1) / ranks


def _strip_prefix(line):
    return _LAUNCHER_PREFIX.sub('', line, count=1)


def _header_prefix(line):
    """Column names before the first 'time' of an nccl-tests header line, or None."""
    fields = line.lstrip('#').split()
    if len(fields) < 5 or fields[0] not in ('size', 'bytes') or 'time' not in fields:
        return None
    return fields[:fields.index('time')]


def _number(token, line):
    try:
        return float(token)
    except ValueError:
        raise BenchParseError(line, 'expected a number, got %r' % token)


def _group(fields, start, line):
    return {
        'time_us': _number(fields[start], line),
        'algbw_gbs': _number(fields[start + 1], line),
        'busbw_gbs': _number(fields[start + 2], line),
    }


def _nccl_row(fields, prefix, line):
    if prefix is None:
        prefix = _LAYOUT_BY_WIDTH.get(len(fields))
        if prefix is None:
            raise BenchParseError(line, 'unexpected number of columns (%d) and no column header seen' % len(fields))
    width = len(prefix) + 2 * len(_GROUP)
    if len(fields) < width:
        raise BenchParseError(line, 'row has %d columns, the header announces %d' % (len(fields), width))
    named = dict(zip(prefix, fields))
    return {
        'size_bytes': int(fields[0]),
        'count': int(fields[1]),
        'type': named.get('type'),
        'redop': named.get('redop', named.get('op')),
        'out_of_place': _group(fields, len(prefix), line),
        'in_place': _group(fields, len(prefix) + len(_GROUP), line),
    }


def _is_row(fields):
    return len(fields) >= 2 and _INT.match(fields[0]) and _INT.match(fields[1])


def parse_nccl_tests(text):
    """Parse nccl-tests ``all_reduce_perf`` output.

    Handles the layout without ``root`` (nccl-tests up to 2.10: ``error`` columns) and the current
    one (``redop``, ``root``, ``#wrong`` columns, ``N/A`` without validation), NCCL INFO/WARN and
    launcher lines anywhere, and launcher prefixes. Returns
    ``{rows, avg_busbw_gbs, out_of_bounds}``; the trailer values are None when the run was cut short.
    """
    rows = []
    prefix = None
    avg = None
    oob = None
    for raw_line in clean(text).splitlines():
        line = _strip_prefix(raw_line).strip()
        if line.startswith('#'):
            prefix = _header_prefix(line) or prefix
            match = _OOB.match(line)
            if match:
                oob = int(match.group(1))
            match = _AVG.match(line)
            if match:
                avg = _number(match.group(1), raw_line)
            continue
        fields = line.split()
        if _is_row(fields):
            rows.append(_nccl_row(fields, prefix, raw_line))
    if not rows:
        raise BenchParseError(_first_line(text), 'no all_reduce_perf result rows found')
    return {'rows': rows, 'avg_busbw_gbs': avg, 'out_of_bounds': oob}


def _metric_name(columns):
    """'Latency (us)' -> 'latency_us', 'Avg Latency(us)' -> 'avg_latency_us', 'Bandwidth (MB/s)' -> 'bandwidth_mb_s'."""
    first = re.split(r'\s{2,}', columns)[0]
    return re.sub(r'[^a-z0-9]+', '_', first.lower()).strip('_')


def parse_osu(text):
    """Parse OSU micro-benchmark output into ``{benchmark, metric, rows: [{size_bytes, value}]}``.

    ``benchmark`` is the title without its version ("OSU MPI Latency Test"), ``metric`` names the
    first value column. Lines that are not rows are skipped: MPI/UCX warnings, comments, and lines
    where a number is followed by words (Open MPI's "2 more processes have sent help message").
    """
    benchmark = None
    metric = None
    rows = []
    for raw_line in clean(text).splitlines():
        line = _strip_prefix(raw_line).strip()
        if line.startswith('#'):
            title = _OSU_TITLE.match(line)
            columns = _OSU_COLUMNS.match(line)
            if title and benchmark is None:
                benchmark = title.group(1)
            elif columns:
                metric = _metric_name(columns.group(1))
            continue
        fields = line.split()
        if not fields or not _INT.match(fields[0]):
            continue
        if len(fields) < 2:
            raise BenchParseError(raw_line, 'OSU result row without a value (output cut short?)')
        if not _FLOAT.match(fields[1]):
            continue
        if metric is None:
            raise BenchParseError(raw_line, "OSU result row before the '# Size ...' column header")
        rows.append({'size_bytes': int(fields[0]), 'value': float(fields[1])})
    if not rows:
        raise BenchParseError(_first_line(text), 'no OSU result rows found')
    return {'benchmark': benchmark, 'metric': metric, 'rows': rows}


def _first_line(text):
    for line in text.splitlines():
        if line.strip():
            return line
    return ''
