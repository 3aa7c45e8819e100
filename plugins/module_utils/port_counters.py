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

- saturated: a ``counters/`` file at the maximum of its field. The kernel reads these from the port's PMA PortCounters,
  whose fields are narrow (``link_downed`` 8 bits, ``symbol_error`` 16, ``excessive_buffer_overrun_errors`` 4) and stop
  at their maximum until someone resets them - they never wrap. A counter stuck there shows no change over any job,
  whatever happened: it is named as saturated, with the reset that makes it count again, never read as "no change".
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

# The width of each PMA PortCounters field (IBA vol. 1, PortCounters attribute) as the kernel's ib core shows it under
# counters/ (drivers/infiniband/core/sysfs.c, its PORT_PMA_ATTR table): a field counts up to 2**bits - 1 and stays there.
PORT_COUNTER_BITS = {
    'symbol_error': 16, 'link_error_recovery': 8, 'link_downed': 8, 'port_rcv_errors': 16,
    'port_rcv_remote_physical_errors': 16, 'port_rcv_switch_relay_errors': 16, 'port_xmit_discards': 16,
    'port_xmit_constraint_errors': 8, 'port_rcv_constraint_errors': 8, 'local_link_integrity_errors': 4,
    'excessive_buffer_overrun_errors': 4, 'VL15_dropped': 16, 'port_xmit_wait': 32,
}
# Data and packets are 32 bits in PortCounters, but the kernel reads them from the 64-bit PortCountersExtended where the
# HCA's PMA has them - and a 64-bit counter can sit at 2**32 - 1 on its way up. The IETF extended set is the one with
# unicast_*/multicast_* files as well: with one of those present these four are 64-bit. Without (a PMA with only
# PortCounters, or the extended set without the IETF counters), such a counter is judged saturated only where it did
# not move over a job: a 64-bit counter does not stop exactly at 2**32 - 1.
DATA_COUNTERS = frozenset(['port_xmit_data', 'port_rcv_data', 'port_xmit_packets', 'port_rcv_packets'])
DATA_BITS = 32
EXTENDED_ONLY = ('unicast_xmit_packets', 'unicast_rcv_packets', 'multicast_xmit_packets', 'multicast_rcv_packets')
SATURATED_ACTION = ('reset the port\'s counters so they count again (as root: perfquery -C %s -P %s -R; perfquery -x '
                    'reads the 64-bit extended counters where the HCA has them), then run the validation again')

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


def saturated_counters(before, after):
    """The ``counters/`` of one port at the maximum of their field after a job: ``{counter: (value, bits)}``.

    ``before`` and ``after`` are the port's two reads (``{group/name: value}``). A counter of :data:`PORT_COUNTER_BITS`
    is saturated when it reads its maximum after the job (if it reached it during the job, its delta is only a lower
    bound); a data or packet counter only where it is 32-bit (:data:`DATA_COUNTERS`) and read 2**32 - 1 before and
    after the job.
    """
    extended = any('counters/%s' % name in after for name in EXTENDED_ONLY)
    saturated = {}
    for name, value in sorted(after.items()):
        group, dummy, leaf = name.partition('/')
        if group != 'counters':
            continue
        if leaf in PORT_COUNTER_BITS:
            bits = PORT_COUNTER_BITS[leaf]
            stuck = value >= 2 ** bits - 1
        elif leaf in DATA_COUNTERS and not extended:
            bits = DATA_BITS
            stuck = value == before.get(name) == 2 ** bits - 1
        else:
            continue
        if stuck:
            saturated[name] = (value, bits)
    return saturated


def _where(host, interface, rdma_port):
    return '%s %s%s' % (host, interface, ' (%s)' % rdma_port if rdma_port else '')


def port_findings(host, interface, port, seconds, job, fatal, warn_rates):
    """The fatal increases and the rates above their warning limits of one port over one job.

    A counter that reached its maximum during the job (in ``port['saturated']``) rose by at least its delta: the
    messages say so.
    """
    findings = []
    where = _where(host, interface, port['rdma_port'])
    for counter, delta in sorted(port['deltas'].items()):
        base = {'job': job, 'host': host, 'port': interface, 'rdma_port': port['rdma_port'], 'counter': counter,
                'delta': delta, 'seconds': seconds}
        least = 'at least ' if counter in port.get('saturated', ()) else ''
        if _rule_for(counter, fatal):
            findings.append(dict(base, severity='fatal', rate_per_s=None, limit_per_s=None, message=(
                '%s: %s rose by %s%d during %s' % (where, counter, least, delta, job))))
            continue
        rule = _rule_for(counter, warn_rates)
        if rule is None or not seconds:
            continue
        rate = delta / seconds
        if rate > warn_rates[rule]:
            findings.append(dict(base, severity='warning', rate_per_s=round(rate, 3), limit_per_s=warn_rates[rule],
                                 message='%s: %s at %s%.3g/s over the %.0f s of %s, above %.3g/s' % (
                                     where, counter, least, rate, seconds, job, warn_rates[rule])))
    return findings


def saturated_finding(host, interface, port, seconds, job, counter, value, bits, fatal):
    """The finding of a counter at its maximum: it cannot count, so what it did over ``job`` is unknown."""
    where = _where(host, interface, port['rdma_port'])
    device, dummy, number = (port['rdma_port'] or '').rpartition(':')
    if _rule_for(counter, fatal):
        unknown = 'whether it rose during %s is unknown' % job
    else:
        unknown = 'what it did during %s is unknown' % job
    return {'job': job, 'host': host, 'port': interface, 'rdma_port': port['rdma_port'], 'counter': counter,
            'delta': port['deltas'].get(counter, 0), 'seconds': seconds, 'severity': 'saturated', 'rate_per_s': None,
            'limit_per_s': None, 'value': value, 'bits': bits,
            'message': '%s: %s is saturated at %d, the most its %d-bit field holds: it no longer counts, so %s' % (
                where, counter, value, bits, unknown),
            'action': SATURATED_ACTION % (device or 'DEV', number or 'PORT')}


def counters_report(reads_by_host, fatal=DEFAULT_FATAL, warn_rates=None):
    """The report's ``counters``: per job, host and port the non-zero deltas, and the findings of the rules.

    ``reads_by_host`` is ``{host: {job: {before: read, after: read}}}``; a host or job without both reads (a node that
    failed in between) is listed under ``unread``. Returns ``{jobs: [{name, hosts: {host: {seconds, ports:
    {interface: {rdma_port, deltas, went_back, saturated}}}}}], findings, unread, passed, summary}``; ``passed`` is
    false when a fatal counter rose. A counter at its maximum (:func:`saturated_counters`) is a ``saturated`` finding,
    once per host, port and counter, with ``value``, ``bits`` and the ``action`` that makes it count again; it does
    not fail ``passed`` (the node's verdict warns), and the summary names it.
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
    # a counter stuck at its maximum is the same in every job: it is named once, at the first job it was seen in
    named = set()
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
                previous = before['ports'][interface]['counters']
                deltas, went_back = port_deltas(previous, port['counters'])
                saturated = saturated_counters(previous, port['counters'])
                ports[interface] = {'rdma_port': port.get('rdma_port'), 'deltas': deltas, 'went_back': went_back,
                                    'saturated': sorted(saturated)}
                findings += port_findings(host, interface, ports[interface], seconds, job, fatal, warn_rates)
                for counter, (value, bits) in sorted(saturated.items()):
                    if (host, interface, counter) not in named:
                        named.add((host, interface, counter))
                        findings.append(saturated_finding(host, interface, ports[interface], seconds, job, counter,
                                                          value, bits, fatal))
            jobs[job][host] = {'seconds': seconds, 'ports': ports}
    fatal_findings = [finding['message'] for finding in findings if finding['severity'] == 'fatal']
    warnings = [finding['message'] for finding in findings if finding['severity'] == 'warning']
    saturated = [finding for finding in findings if finding['severity'] == 'saturated']
    # "no fatal counter rose" is not said of a fatal counter that cannot count
    blind = any(_rule_for(finding['counter'], fatal) for finding in saturated)
    summary = '; '.join(fatal_findings) or 'no fatal counter %srose on %d hosts' % (
        'that can count ' if blind else '', len(reads_by_host))
    if saturated:
        more = '; ...' if len(saturated) > SUMMARY_WARNINGS else ''
        named = ['%s: %s at %d' % (_where(f['host'], f['port'], f['rdma_port']), f['counter'], f['value'])
                 for f in saturated[:SUMMARY_WARNINGS]]
        summary += '; %d saturated (at their maximum they no longer count; reset them): %s%s' % (
            len(saturated), '; '.join(named), more)
    if warnings:
        # the play's last lines name the first few; report.json and report.md have them all
        more = '; ...' if len(warnings) > SUMMARY_WARNINGS else ''
        summary += '; %d warnings: %s%s' % (len(warnings), '; '.join(warnings[:SUMMARY_WARNINGS]), more)
    return {'jobs': [{'name': job, 'hosts': jobs[job]} for job in order], 'findings': findings, 'unread': unread,
            'passed': not fatal_findings, 'summary': summary}
