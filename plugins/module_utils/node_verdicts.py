# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""One verdict per node from everything the validate role's report holds, and the isolation's node x rail matrix.

:func:`node_verdicts` is the one rule behind report.json's ``verdicts``, the **Nodes** table of report.md and
``validate_bad_hosts_file`` (the hosts whose verdict is FAIL). :func:`rail_matrix` is what ``rails.png`` draws. Both
are pure functions of the report dict documented in the ``allreduce_report`` module.

A reason's verdict, by source (the node's verdict is its worst reason's, FAIL > WARN > UNKNOWN > PASS):

- ``preflight``: every problem is FAIL - the role stops before any job while a node has one.
- ``isolation``: ``node`` and ``link`` findings are FAIL (confirmed against a partner that passed); a ``flaky`` port
  is FAIL too: it is named only after failing with 2 or more partners that pass elsewhere, and an allreduce is as
  fast as its slowest link, so the jobs it takes part in fail now and then. A port that failed with every partner
  but could not be confirmed (``unconfirmed``: more ports failing than passing on its rail) is WARN, as the engine
  blames no one there. Findings with no host (``fabric``; a 2-node ``link``; a ``flaky`` pair neither end explains)
  are cluster lines, not a node's.
- ``counters``: a ``fatal`` finding is FAIL (the role fails the validation on it), a ``warning`` WARN (a rate above
  its limit: the link works, watch it); a host whose counters were not read around a job is WARN.
- ``drift``: FAIL when the report's ``drift_fail`` is true (``validate_drift_fail``), else WARN. The role writes a
  report with drift findings only when drift does not fail (it stops in preflight otherwise), so a report without
  ``drift_fail`` is read as WARN.
- ``health``: FAIL, or WARN for an entry whose ``severity`` says ``warning``; a missing or null ``health`` is a check
  that did not run.
- not proven (UNKNOWN): when the all-node run failed, a node is good only if a pair run with it passed on each of
  its rails; without the isolation, or on a rail where none of its runs passed and no finding names it (a rail on
  which every pair failed, a node with no run), it is UNKNOWN. When the all-node run passed, it proves every node in
  it.
"""

from __future__ import annotations

from ansible_collections.hpcfabric.cluster.plugins.module_utils.drift import finding_message

PASS, UNKNOWN, WARN, FAIL = 'PASS', 'UNKNOWN', 'WARN', 'FAIL'
RANK = {PASS: 0, UNKNOWN: 1, WARN: 2, FAIL: 3}
# the checks a report may lack; the isolation is not one of them: where the all-node run failed without it, every
# node says so itself (UNKNOWN), and where that run passed it is not needed
CHECKS = ('preflight', 'counters', 'drift', 'health')
# rails.png stays readable up to this many rows: beyond it, the rows with the lowest cells (report.json has them all)
MATRIX_ROWS = 48
ALL_RAILS = 'all rails'


def _reason(source, verdict, reason, action):
    return {'source': source, 'verdict': verdict, 'reason': reason, 'action': action}


def _rail_text(rail, interface=None):
    return 'rail %s%s' % (rail, ' (%s)' % interface if interface else '')


def _isolation_host_reason(finding):
    kind = finding.get('kind')
    if kind == 'node':
        text = 'node: fails with every partner on every rail'
    elif kind == 'link':
        text = 'link: %s fails with every partner, confirmed against one that passed' % _rail_text(
            finding.get('rail'), finding.get('interface'))
    else:
        text = 'flaky: %s passes with some partners and fails with others' % _rail_text(
            finding.get('rail'), finding.get('interface'))
    return _reason('isolation', FAIL, text, finding.get('action'))


def _isolation_cluster_reason(finding):
    where = ' on %s' % _rail_text(finding['rail']) if finding.get('rail') is not None else ''
    evidence = finding.get('evidence') or []
    text = '%s%s%s' % (finding.get('kind'), where, ': ' + evidence[0] if evidence else '')
    return _reason('isolation', WARN if finding.get('kind') == 'flaky' else FAIL, text, finding.get('action'))


def _isolation_reasons(isolation, add, cluster):
    """The findings and unconfirmed suspects; returns ``{host: rails named}`` (None: every rail)."""
    named = {}
    for finding in isolation.get('findings') or []:
        host = finding.get('host')
        if host is None:
            cluster.append(_isolation_cluster_reason(finding))
            continue
        add(host, _isolation_host_reason(finding))
        rails = named.get(host, set())
        named[host] = None if finding.get('kind') == 'node' or rails is None else rails | {str(finding.get('rail'))}
    for item in isolation.get('unconfirmed') or []:
        add(item['host'], _reason(
            'isolation', WARN, '%s failed with every partner, not confirmed (no partner that passed was left)'
            % _rail_text(item['rail']),
            'test it against a node known good; fix the rail\'s other failing ports first'))
        rails = named.get(item['host'], set())
        named[item['host']] = None if rails is None else rails | {str(item['rail'])}
    return named


def _not_proven(isolation, hosts, named, add):
    """UNKNOWN for each node's rail on which none of its pair runs passed and no finding names it."""
    passed = set()
    for run in isolation.get('runs') or []:
        if run.get('passed'):
            passed.update((host, str(run.get('rail'))) for host in run.get('hosts') or [])
    ratios = isolation.get('pass_ratios') or {}
    for host in hosts:
        if named.get(host, set()) is None:
            continue
        if host not in ratios:
            add(host, _reason('isolation', UNKNOWN, 'not in the isolation\'s pair runs',
                              'not proven good: test it in a pair with a node known good'))
            continue
        for rail in sorted(ratios[host].get('rails') or {'0': None}, key=_rail_key):
            if (host, rail) in passed or rail in named.get(host, set()):
                continue
            add(host, _reason('isolation', UNKNOWN, '%s: no pair run with it passed, and no finding names it'
                              % _rail_text(rail),
                              'not proven good: fix what the cluster lines name, then run the validation again'))


def _rail_key(rail):
    try:
        return (0, int(rail), '')
    except (TypeError, ValueError):
        return (1, 0, str(rail))


def _counter_reasons(counters, add):
    for finding in counters.get('findings') or []:
        port = finding.get('port')
        if finding.get('severity') == 'fatal':
            add(finding.get('host'), _reason(
                'counters', FAIL, finding.get('message'),
                'check %s: reseat or replace its cable or optic, check its switch port; drain the node if it rises '
                'again' % port))
        else:
            # a saturated counter carries its own action (reset it, or read the 64-bit extended counters)
            add(finding.get('host'), _reason(
                'counters', WARN, finding.get('message'),
                finding.get('action') or 'watch %s\'s %s; clean or reseat its optic if it keeps rising'
                % (port, finding.get('counter'))))
    for item in counters.get('unread') or []:
        add(item.get('host'), _reason('counters', WARN, 'port counters not read around %s' % item.get('job'),
                                      'check that the node stayed reachable during the job'))


def _drift_reasons(drift, fails, add):
    for finding in drift:
        host = finding.get('host')
        message = finding_message(finding)
        prefix = '%s: ' % host
        add(host, _reason(
            'drift', FAIL if fails else WARN, message[len(prefix):] if message.startswith(prefix) else message,
            'install %s %s on %s, or set validate_golden to the version wanted' % (
                finding.get('component'), finding.get('expected') or '(none: remove it)', host)))


def _health_reasons(health, add):
    for item in health:
        severity = str(item.get('severity') or '').lower()
        seen = item.get('seen')
        add(item.get('host'), _reason(
            'health', WARN if severity in ('warn', 'warning') else FAIL,
            '%s %s%s' % (item.get('device') or '-', item.get('check'), '' if seen is None else ': %s' % (seen,)),
            item.get('action')))


def _allreduce_line(verdict, isolation):
    if isolation is None:
        action = ('nothing tells one node from another: run the validation with validate_isolation on_failure (the '
                  'default) or always to name the node or link')
    elif not (isolation.get('findings') or isolation.get('unconfirmed')):
        action = ('every pair passed: look at what only the full run exercises - the switches\' uplinks and spines, '
                  'the threshold for this node count')
    else:
        action = 'see the nodes the isolation names'
    return _reason('allreduce', FAIL, verdict.get('reason') or 'the all-node run failed', action)


def node_verdicts(report):
    """``{nodes, cluster, bad_hosts, not_checked}`` of a report.

    ``nodes``: ``[{host, verdict, reasons: [{source, verdict, reason, action}]}]`` in the cluster's host order (hosts
    only the findings name after them, sorted); ``cluster``: the lines no node owns, ``[{source, verdict, reason,
    action}]``; ``bad_hosts``: the hosts whose verdict is FAIL, in the same order; ``not_checked``: the checks
    (preflight, counters, drift, health) the report does not carry; ``not_read``: the health sources a node could not
    read (``health_unread``, ``[{host, source, why}]``), whose checks a PASS there does not cover.
    """
    if not isinstance(report, dict):
        raise ValueError('report must be a dict, got %s' % type(report).__name__)
    reasons = {}

    def add(host, reason):
        if host is None:
            return
        found = reasons.setdefault(str(host), [])
        if reason not in found:
            found.append(reason)

    hosts = [str(host) for host in (report.get('cluster') or {}).get('hosts') or []]
    cluster = []
    preflight = report.get('preflight')
    for host, problems in sorted((preflight or {}).items()):
        reasons.setdefault(str(host), [])
        for problem in problems or []:
            add(host, _reason('preflight', FAIL, problem, 'fix it and run the validation again; preflight stops every '
                              'job while a node has a problem'))
    verdict = report.get('verdict') or {}
    isolation = report.get('isolation')
    all_failed = verdict.get('passed') is False
    if all_failed:
        cluster.append(_allreduce_line(verdict, isolation))
    named = _isolation_reasons(isolation, add, cluster) if isolation else {}
    if report.get('counters'):
        _counter_reasons(report['counters'], add)
    if report.get('drift'):
        _drift_reasons(report['drift'], bool(report.get('drift_fail')), add)
    if report.get('health'):
        _health_reasons(report['health'], add)
    order = hosts + sorted(host for host in reasons if host not in hosts)
    if all_failed and isolation:
        _not_proven(isolation, order, named, add)
    elif all_failed:
        for host in order:
            add(host, _reason('isolation', UNKNOWN, 'not isolated: the all-node run failed and no pair run tested it',
                              'not proven good: run the validation with validate_isolation on_failure or always'))
    nodes = []
    for host in order:
        found = reasons.get(host, [])
        nodes.append({'host': host, 'verdict': max([PASS] + [item['verdict'] for item in found], key=RANK.get),
                      'reasons': found})
    return {'nodes': nodes, 'cluster': cluster, 'bad_hosts': [node['host'] for node in nodes if node['verdict'] == FAIL],
            'not_checked': [source for source in CHECKS if report.get(source) is None],
            'not_read': list(report.get('health_unread') or [])}


def reference_threshold(threshold):
    """One threshold in GB/s to colour against: the explicit or derived one, or a calibrated baseline's lowest at the
    checked sizes (each pair run's ``busbw_gbs`` is its lowest there); None when there is none."""
    threshold = threshold or {}
    if threshold.get('min_busbw_gbs') is not None:
        return float(threshold['min_busbw_gbs'])
    min_size = threshold.get('min_size_bytes') or 0
    values = [float(value) for size, value in (threshold.get('per_size_gbs') or {}).items()
              if value is not None and int(size) >= min_size]
    return min(values) if values else None


def _cell(runs, ratio):
    """A node's rail: the best ``busbw_gbs`` of its passing runs, else of all its runs (None: none had results)."""
    if not runs:
        return None
    passed = [run for run in runs if run.get('passed')]
    values = [run['busbw_gbs'] for run in passed or runs if run.get('busbw_gbs') is not None]
    return {'busbw_gbs': max(values) if values else None, 'passed': bool(passed), 'runs': len(runs),
            'pass_ratio': ratio}


def _row_score(row, threshold):
    scores = []
    for cell in row:
        if cell is None:
            continue
        value = cell['busbw_gbs'] or 0.0
        ratio = 1.0 if cell['pass_ratio'] is None else cell['pass_ratio']
        # failed first, then the flaky (a best run that passed, a pass ratio below 1), then the slowest
        scores.append((cell['passed'], ratio, value / threshold if threshold else value))
    return min(scores) if scores else (True, 1.0, float('inf'))


def rail_matrix(report, limit=MATRIX_ROWS):
    """What rails.png draws: ``{hosts, rails, cells, threshold_gbs, total}``, or None when no pair ran.

    ``hosts`` are the rows (the cluster's order; past ``limit`` rows, the ``limit`` nodes with the lowest cells - no
    passing run, then the lowest pass ratio, then the lowest bandwidth - and ``total`` says how many there were),
    ``rails`` the column labels (``rail N``; ``all rails`` for runs without a rail), ``cells[row][column]``
    ``{busbw_gbs, passed, runs, pass_ratio}`` or None where the node had no run on that rail (``passed``: one of its
    runs passed; ``pass_ratio`` the isolation's, runs with a bad partner left out).
    A cell is the best bus bandwidth the node reached on that rail with any partner - over its passing runs when one
    passed: a bad partner washes out, a bad port stays low.
    """
    isolation = report.get('isolation') or {}
    runs = isolation.get('runs') or []
    if not runs:
        return None
    hosts = [str(host) for host in (report.get('cluster') or {}).get('hosts') or []]
    seen = []
    by_cell = {}
    for run in runs:
        rail = run.get('rail')
        for host in run.get('hosts') or []:
            seen.append(host)
            by_cell.setdefault((host, rail), []).append(run)
    order = [host for host in hosts if host in seen]
    order += sorted(set(host for host in seen if host not in order))
    rails = sorted(set(rail for host, rail in by_cell), key=_rail_key)
    ratios = isolation.get('pass_ratios') or {}
    cells = [[_cell(by_cell.get((host, rail)), ((ratios.get(host) or {}).get('rails') or {}).get(str(rail)))
              for rail in rails] for host in order]
    # the pair runs' own threshold (one rail each), which the isolation carries
    threshold = reference_threshold(isolation.get('threshold') or report.get('threshold'))
    rows = list(zip(order, cells))
    if limit and len(rows) > limit:
        keep = set(host for host, row in sorted(rows, key=lambda item: _row_score(item[1], threshold))[:limit])
        rows = [(host, row) for host, row in rows if host in keep]
    labels = [ALL_RAILS if rail is None else 'rail %s' % rail for rail in rails]
    return {'hosts': [host for host, row in rows], 'rails': labels,
            'cells': [row for host, row in rows], 'threshold_gbs': threshold, 'total': len(order)}
