# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Fabric port counters around a job: read them on a node, take the deltas, judge them.

A node's read (the ``port_counters`` module) is ``{read_at, ports: {interface: {rdma_port, counters}}}`` where each
counter is named by where it came from: ``statistics/rx_bytes`` (``/sys/class/net/IF/statistics``),
``counters/link_downed`` and ``hw_counters/out_of_buffer`` (``/sys/class/infiniband/DEV/ports/N/``) and
``ethtool/rx_prio3_pause`` (``ethtool -S IF``, flow control counters only). Two reads of a host, before and after a
job, give its deltas; the rules turn deltas into findings:

- fatal: any increase of a counter in ``fatal`` (by default ``link_downed``, ``excessive_buffer_overrun_errors``,
  ``local_link_integrity_errors``: NVIDIA NVSentinel's NIC health monitor treats any increase of these as fatal,
  docs/nic-health-monitor/link-counter-detection.md, appendix A);
- warning: a counter of ``warn_rates`` rising faster than its rate per second over the job (NVSentinel's defaults in
  the same table: ``symbol_error`` 10/s, ``port_rcv_errors`` 10/s, ``port_xmit_discards`` 100/s,
  ``roce_slow_restart`` 10/s, ``local_ack_timeout_err`` 1/s, ``link_error_recovery`` 5/min, 0.0833/s).

A rule names a counter by its file name (``link_downed``, any group) or by group and name (``counters/link_downed``).
"""

from __future__ import annotations

import os
import re

from ansible_collections.hpcfabric.cluster.plugins.module_utils import pasted_text

RDMA_GROUPS = ('counters', 'hw_counters')
NETDEV_GROUP = 'statistics'
ETHTOOL_GROUP = 'ethtool'

# hw_counters/lifespan is the driver's refresh period for the others (a setting in ms), not a counter
_NOT_COUNTERS = frozenset(['hw_counters/lifespan'])
# ethtool -S prints hundreds of counters; the report keeps the flow control frames, the lossless class's evidence that
# only ethtool gives: mlx5 names them pause (rx_prio3_pause, its duration and transitions, global pause, pause storms),
# Intel's ice XON/XOFF per priority (tx_priority_3_xoff.nic)
_ETHTOOL_KEEP_RE = re.compile(r'pause|xon|xoff')
_ETHTOOL_LINE_RE = re.compile(r'^\s*(.+?):\s*(-?\d+)\s*$')
_ETHTOOL_HEADER = 'NIC statistics:'

SUMMARY_WARNINGS = 5
DEFAULT_FATAL = ('link_downed', 'excessive_buffer_overrun_errors', 'local_link_integrity_errors')
DEFAULT_WARN_RATES = {'symbol_error': 10, 'port_rcv_errors': 10, 'port_xmit_discards': 100, 'roce_slow_restart': 10,
                      'local_ack_timeout_err': 1, 'link_error_recovery': 0.0833}


class EthtoolParseError(ValueError):
    """``ethtool -S`` text without any counter line."""

    def __init__(self, message, line=None, lineno=None):
        super(EthtoolParseError, self).__init__(message)
        self.line = line
        self.lineno = lineno


def parse_ethtool_stats(text):
    """``ethtool -S IF`` text -> ``({ethtool/name: value}, [(line number, unreadable line)])``, flow control only.

    Terminal escapes of a pasted copy are removed first, and the ``NIC statistics:`` header may be missing (a saved
    ``ethtool -S IF | grep prio``). Names are split at the last colon, as drivers print queue prefixes with colons
    (``rxq0: rx_bytes: 1``).
    """
    numbered = [(number, line) for number, line in enumerate(pasted_text.clean(text).splitlines(), 1)
                if line.strip() and line.strip() != _ETHTOOL_HEADER]
    values = {}
    unreadable = []
    for number, line in numbered:
        match = _ETHTOOL_LINE_RE.match(line)
        if not match:
            unreadable.append((number, line))
        elif _ETHTOOL_KEEP_RE.search(match.group(1)):
            values['%s/%s' % (ETHTOOL_GROUP, match.group(1))] = int(match.group(2))
    if len(unreadable) == len(numbered):
        number, line = numbered[0] if numbered else (None, None)
        raise EthtoolParseError('no "name: value" counter line; %s' % (
            'line %d: %r' % (number, line.strip()) if numbered else 'no text'), line=line, lineno=number)
    return values, unreadable


def read_counter_dir(path, group):
    """Every integer file of the directory ``path`` as ``{group/name: value}``; unreadable files are left out.

    Some hw_counters cannot be read on every firmware (EOPNOTSUPP): a counter that cannot be read has no delta.
    """
    try:
        names = sorted(os.listdir(path))
    except OSError:
        return {}
    values = {}
    for name in names:
        key = '%s/%s' % (group, name)
        if key in _NOT_COUNTERS:
            continue
        try:
            with open(os.path.join(path, name)) as handle:
                values[key] = int(handle.read().strip())
        except (OSError, ValueError, UnicodeDecodeError):
            continue
    return values


def rdma_port_dir(class_dir, rdma_port):
    """``mlx5_0:1`` -> ``<class_dir>/mlx5_0/ports/1``."""
    device, dummy, port = rdma_port.rpartition(':')
    return os.path.join(class_dir, device, 'ports', port)


def read_port(net_dir, class_dir, interface, rdma_port):
    """The sysfs counters of one fabric interface: its netdev statistics and, with an RDMA port, that port's."""
    counters = read_counter_dir(os.path.join(net_dir, interface, NETDEV_GROUP), NETDEV_GROUP)
    if rdma_port:
        for group in RDMA_GROUPS:
            counters.update(read_counter_dir(os.path.join(rdma_port_dir(class_dir, rdma_port), group), group))
    return {'rdma_port': rdma_port, 'counters': counters}


def rule_problems(fatal, warn_rates):
    """What is wrong with the rules, one line each naming the role variable."""
    problems = []
    if not isinstance(fatal, (list, tuple)) or not all(isinstance(name, str) and name for name in fatal):
        problems.append('validate_counters_fatal must be a list of counter names, got %r' % (fatal,))
    if not isinstance(warn_rates, dict):
        return problems + ['validate_counters_warn_rates must map counter names to rates per second, got %r'
                           % (warn_rates,)]
    for name, rate in sorted(warn_rates.items()):
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or rate < 0:
            problems.append('validate_counters_warn_rates.%s must be a number of events per second >= 0, got %r'
                            % (name, rate))
    return problems


def _rule_for(counter, rules):
    leaf = counter.rpartition('/')[2]
    for key in (counter, leaf):
        if key in rules:
            return key
    return None


def port_deltas(before, after):
    """Deltas of one port's counters between two reads: ``({counter: delta != 0}, [counters that went back])``.

    A counter that went back was reset (driver reload, ``perfquery -R``) or wrapped: its delta is unknown.
    """
    deltas = {}
    went_back = []
    for name, value in sorted(after.items()):
        if name not in before:
            continue
        delta = value - before[name]
        if delta < 0:
            went_back.append(name)
        elif delta:
            deltas[name] = delta
    return deltas, went_back


def _where(host, interface, rdma_port):
    return '%s %s%s' % (host, interface, ' (%s)' % rdma_port if rdma_port else '')


def port_findings(host, interface, port, seconds, job, fatal, warn_rates):
    """The fatal increases and the rates above their warning limits of one port over one job."""
    findings = []
    for counter, delta in sorted(port['deltas'].items()):
        base = {'job': job, 'host': host, 'port': interface, 'rdma_port': port['rdma_port'], 'counter': counter,
                'delta': delta, 'seconds': seconds}
        if _rule_for(counter, fatal):
            findings.append(dict(base, severity='fatal', rate_per_s=None, limit_per_s=None, message=(
                '%s: %s rose by %d during %s' % (_where(host, interface, port['rdma_port']), counter, delta, job))))
            continue
        rule = _rule_for(counter, warn_rates)
        if rule is None or not seconds:
            continue
        rate = delta / seconds
        if rate > warn_rates[rule]:
            findings.append(dict(base, severity='warning', rate_per_s=round(rate, 3), limit_per_s=warn_rates[rule],
                                 message='%s: %s at %.3g/s over the %.0f s of %s, above %.3g/s' % (
                                     _where(host, interface, port['rdma_port']), counter, rate, seconds, job,
                                     warn_rates[rule])))
    return findings


def counters_report(reads_by_host, fatal=DEFAULT_FATAL, warn_rates=None):
    """The report's ``counters``: per job, host and port the non-zero deltas, and the findings of the rules.

    ``reads_by_host`` is ``{host: {job: {before: read, after: read}}}``; a host or job without both reads (a node that
    failed in between) is listed under ``unread``. Returns ``{jobs: [{name, hosts: {host: {seconds, ports:
    {interface: {rdma_port, deltas, went_back}}}}}], findings, unread, passed, summary}``; ``passed`` is false when a
    fatal counter rose.
    """
    warn_rates = DEFAULT_WARN_RATES if warn_rates is None else warn_rates
    problems = rule_problems(fatal, warn_rates)
    if problems:
        raise ValueError('; '.join(problems))
    if not isinstance(reads_by_host, dict):
        raise ValueError('the reads must map hosts to {job: {before, after}}, got %s' % type(reads_by_host).__name__)
    jobs = {}
    order = []
    findings = []
    unread = []
    for host in sorted(reads_by_host):
        for job, reads in sorted((reads_by_host[host] or {}).items()):
            if job not in jobs:
                jobs[job] = {}
                order.append(job)
            before, after = (reads or {}).get('before'), (reads or {}).get('after')
            if not before or not after:
                unread.append({'job': job, 'host': host})
                continue
            seconds = round(max(after['read_at'] - before['read_at'], 0.0), 3)
            ports = {}
            for interface, port in sorted(after['ports'].items()):
                if interface not in before['ports']:
                    continue
                deltas, went_back = port_deltas(before['ports'][interface]['counters'], port['counters'])
                ports[interface] = {'rdma_port': port.get('rdma_port'), 'deltas': deltas, 'went_back': went_back}
                findings += port_findings(host, interface, ports[interface], seconds, job, fatal, warn_rates)
            jobs[job][host] = {'seconds': seconds, 'ports': ports}
    fatal_findings = [finding['message'] for finding in findings if finding['severity'] == 'fatal']
    warnings = [finding['message'] for finding in findings if finding['severity'] == 'warning']
    summary = '; '.join(fatal_findings) or 'no fatal counter rose on %d hosts' % len(reads_by_host)
    if warnings:
        # the play's last lines name the first few; report.json and report.md have them all
        more = '; ...' if len(warnings) > SUMMARY_WARNINGS else ''
        summary += '; %d warnings: %s%s' % (len(warnings), '; '.join(warnings[:SUMMARY_WARNINGS]), more)
    return {'jobs': [{'name': job, 'hosts': jobs[job]} for job in order], 'findings': findings, 'unread': unread,
            'passed': not fatal_findings, 'summary': summary}
