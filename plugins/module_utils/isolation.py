# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The fault isolation engine of the validate role: which pairs run next, and what their results prove.

After a failed all-node allreduce the role asks :func:`isolation_step` for the next round, runs its pairs at once
(every pair of a round shares no node on its rail), feeds the results back and asks again, until the step says
``done``. The engine keeps no state between calls: every answer is worked out again from the results so far, so
the role only loops and launches. The rounds, per rail, every rail in each round:

1. ``ring``: the ring of nodes in rounds of disjoint pairs (2 rounds for an even ring, 3 for an odd one);
2. ``confirm``: one round in which every suspect port - a node's rail that failed with every partner - and both
   ends of a failed pair whose nodes passed with others are each re-tested against a partner that passed (and,
   where there is one, never failed) on that rail;
3. ``repeat``: ``repeats`` random re-pairings (seeded, so a run can be reproduced), for pass ratios and flaky ports.

A port that passed once is never named bad; a port is bad only when it passed with no one and failed the
confirmation against a partner that passed. Findings follow the report contract (docs/validate.md):
``{kind, host, rail, interface, evidence, action}``.
"""

from __future__ import annotations

import random

from ansible_collections.hpcfabric.cluster.plugins.module_utils.validate.units import format_gbs
from ansible_collections.hpcfabric.cluster.plugins.module_utils.validate.verdicts import allreduce_verdict

STAGES = ('ring', 'confirm', 'repeat')
DEFAULT_SEED = 20240601
# a fabric-wide finding over a thousand nodes would otherwise carry every run as its evidence
EVIDENCE_RUNS = 8


def ring_rounds(hosts):
    """Split the ring h0-h1, h1-h2, ..., h(n-1)-h0 into rounds of disjoint pairs.

    Every pair of a round can run at the same time: an even ring takes 2 rounds, an odd one 3 (the last
    holds only the closing pair), whatever the node count. Two hosts give one round of one pair.
    """
    if not isinstance(hosts, (list, tuple)):
        raise ValueError('hosts must be a list of host names, got %s' % type(hosts).__name__)
    names = []
    for host in hosts:
        if not isinstance(host, str) or not host.strip():
            raise ValueError('host names must be non-empty strings, got %r' % (host,))
        names.append(host)
    seen = set()
    duplicates = sorted(set(name for name in names if name in seen or seen.add(name)))
    if duplicates:
        raise ValueError('duplicate host names: %s' % ', '.join(duplicates))
    count = len(names)
    if count < 2:
        return []
    if count == 2:
        return [[[names[0], names[1]]]]
    edges = [[names[i], names[(i + 1) % count]] for i in range(count)]
    if count % 2 == 0:
        return [edges[0::2], edges[1::2]]
    return [edges[0:count - 1:2], edges[1:count - 1:2], [edges[-1]]]


def isolation_rails(nodes, hosts):
    """``{host: {rail: {interface, net_device}}}`` from the cluster model's nodes (their ``rails``), rails as strings
    (JSON keys). ``interface`` is the fabric netdev; ``net_device`` what pins a job to that rail in
    ``UCX_NET_DEVICES``. A host without fabric interfaces has one rail, 0, that pins nothing.
    """
    if not isinstance(nodes, dict):
        raise ValueError('nodes must be the cluster model\'s nodes, got %s' % type(nodes).__name__)
    rails = {}
    for host in hosts:
        node = nodes.get(host)
        if not isinstance(node, dict):
            raise ValueError('the cluster model has no node %s' % host)
        own = dict((str(rail['rail']), {'interface': rail['interface'], 'net_device': rail['net_device']})
                   for rail in node.get('rails') or [])
        rails[host] = own or {'0': {'interface': None, 'net_device': None}}
    return rails


def _rc_failed(rc):
    return isinstance(rc, int) and not isinstance(rc, bool) and rc != 0


def judge_run(entry, threshold, min_size_bytes):
    """One pair's run judged: ``{round, stage, rail, hosts, tool, passed, busbw_gbs, mpirun_rc, reason}``.

    A run that exited non-zero fails whatever its numbers, so a node never passes through it; ``busbw_gbs`` is the
    lowest bus bandwidth at the checked sizes, None without results.
    """
    if not isinstance(entry, dict) or not isinstance(entry.get('hosts'), (list, tuple)) or len(entry['hosts']) != 2:
        raise ValueError('an isolation run must be {hosts: [a, b], rail, round, stage, bench, error}, got %r' % (entry,))
    hosts = [str(host) for host in entry['hosts']]
    judged = {'round': entry.get('round', 0), 'stage': entry.get('stage', 'ring'), 'rail': int(entry.get('rail') or 0),
              'hosts': hosts, 'tool': entry.get('tool') or 'mpi', 'mpirun_rc': entry.get('mpirun_rc')}
    if entry.get('bench') is None:
        return dict(judged, passed=False, busbw_gbs=None, reason='run failed: %s' % (entry.get('error') or 'no results'))
    bench = entry['bench']
    try:
        # an ib_write_bw run is judged at its one message size: allreduce_verdict knows
        verdict = allreduce_verdict(bench, threshold, min_size_bytes, run_error=entry.get('error') or None)
    except ValueError as exc:
        raise ValueError('pair %s: %s' % (' + '.join(hosts), exc))
    return dict(judged, passed=verdict['passed'], reason=verdict['reason'],
                busbw_gbs=min(item['busbw_gbs'] for item in verdict['checked']))


def run_text(run):
    """``node01 + node02 rail 0 (ring): 0.01 GB/s``, with the exit status where it was not 0."""
    if run['busbw_gbs'] is None:
        result = 'run failed'
    else:
        result = '%s GB/s' % format_gbs(run['busbw_gbs'])
    if _rc_failed(run['mpirun_rc']):
        result += ', exit %s' % run['mpirun_rc']
    return '%s rail %d (%s): %s%s' % (' + '.join(run['hosts']), run['rail'], run['stage'], result,
                                      '' if run['passed'] else ' FAIL')


class _Rail(object):
    """What one rail's runs say about its ports (a node's NIC, cable and switch port on this rail)."""

    def __init__(self, hosts, runs):
        self.hosts = hosts
        self.order = dict((host, index) for index, host in enumerate(hosts))
        self.runs = runs
        self.passes = dict((host, 0) for host in hosts)
        self.fails = dict((host, 0) for host in hosts)
        self.partners = dict((host, set()) for host in hosts)
        self.runs_of = dict((host, []) for host in hosts)
        for run in runs:
            for host in run['hosts']:
                (self.passes if run['passed'] else self.fails)[host] += 1
                self.runs_of[host].append(run)
            first, second = run['hosts']
            self.partners[first].add(second)
            self.partners[second].add(first)

    def fails_apart(self, host, suspects):
        """The port's failures with partners that are not suspects."""
        return sum(1 for run in self.runs_of[host] if not run['passed'] and _other(run, host) not in suspects)

    def any_passed(self):
        return any(run['passed'] for run in self.runs)

    def suspects(self):
        """Ports that failed with every partner so far."""
        return [host for host in self.hosts if self.fails[host] and not self.passes[host]]

    def bad(self):
        """Ports that passed with no one and, after the ring, failed again with a partner that passed."""
        bad = []
        for host in self.suspects():
            if any(run['stage'] != 'ring' and not run['passed'] and self.passes[_other(run, host)]
                   for run in self.runs_of[host]):
                bad.append(host)
        return bad

    def unexplained(self, blamed):
        """Failed runs in which none of the ``blamed`` ports took part."""
        blamed = set(blamed)
        return [run for run in self.runs if not run['passed'] and not blamed.intersection(run['hosts'])]

    def flaky(self, suspects):
        """``(flaky ports, runs left unexplained)``: a port that passed and failed with 2 or more partners of its
        own is flaky; the port with the most such failures is taken first, so that its partners' one failure each is
        put down to it.
        """
        left = self.unexplained(suspects)
        flaky = []
        while True:
            partners = {}
            for run in left:
                for host in run['hosts']:
                    if self.passes[host]:
                        partners.setdefault(host, set()).add(_other(run, host))
            ranked = sorted((host for host in partners if len(partners[host]) >= 2),
                            key=lambda host: (-len(partners[host]), self.order[host]))
            if not ranked:
                return flaky, left
            flaky.append(ranked[0])
            left = [run for run in left if ranked[0] not in run['hosts']]


def _other(run, host):
    return run['hosts'][1] if run['hosts'][0] == host else run['hosts'][0]


def _pair_run(first, second, rail, rails):
    devices = [rails[host][str(rail)]['net_device'] for host in (first, second)]
    devices = [device for index, device in enumerate(devices) if device and device not in devices[:index]]
    return {'hosts': [first, second], 'rail': rail, 'net_devices': ','.join(devices) or None}


class _Engine(object):

    def __init__(self, hosts, rails, results, threshold, min_size_bytes, repeats, seed):
        if not isinstance(rails, dict):
            raise ValueError('rails must map each host to its rails (isolation_rails), got %s' % type(rails).__name__)
        missing = [host for host in hosts if not isinstance(rails.get(host), dict) or not rails[host]]
        if missing:
            raise ValueError('no rail for %s in the rails map' % ', '.join(missing))
        if not isinstance(results, (list, tuple)):
            raise ValueError('isolation results must be a list, got %s' % type(results).__name__)
        if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 0:
            raise ValueError('validate_isolation_repeats must be a whole number of at least 0, got %r' % (repeats,))
        self.hosts = list(hosts)
        self.rails = rails
        self.repeats = repeats
        self.seed = seed
        self.rail_hosts = {}
        for host in self.hosts:
            for rail in rails[host]:
                self.rail_hosts.setdefault(int(rail), []).append(host)
        self.runs = [judge_run(entry, threshold, min_size_bytes) for entry in results]
        self.ring = {}
        for rail, members in self.rail_hosts.items():
            for index, pairs in enumerate(ring_rounds(members)):
                self.ring.setdefault(index, []).extend(_pair_run(a, b, rail, rails) for a, b in pairs)
        self.by_rail = dict((rail, _Rail(members, [run for run in self.runs if run['rail'] == rail]))
                            for rail, members in sorted(self.rail_hosts.items()))

    def rounds_of(self, stage):
        return sorted(set(run['round'] for run in self.runs if run['stage'] == stage))

    def rounds_done(self):
        return len(set(run['round'] for run in self.runs))

    def every_run_exited(self):
        return bool(self.runs) and all(_rc_failed(run['mpirun_rc']) for run in self.runs)

    def dead_rails(self):
        """Rails on which nothing passed: no partner to confirm a suspect against."""
        return [rail for rail, state in self.by_rail.items() if state.runs and not state.any_passed()]

    def live_rails(self):
        """``(rail, state)`` of the rails on which something passed: only there can a partner confirm anything."""
        dead = self.dead_rails()
        return [(rail, state) for rail, state in self.by_rail.items() if rail not in dead]

    def confirm_runs(self):
        runs = []
        for rail, state in self.live_rails():
            suspects = state.suspects()
            passed = [host for host in state.hosts if state.passes[host]]
            if len(suspects) > len(passed):
                # more ports failing than passing is not a bad port here and there: they stay unconfirmed, and the
                # summary says so rather than blame half a rail
                continue
            retest = [host for run in state.unexplained(suspects) for host in run['hosts'] if host not in suspects]
            to_test = suspects + list(dict.fromkeys(retest))
            used = set()
            for host in to_test:
                # best a partner whose only failures were with suspects, and new to this port; on a small cluster one
                # it already ran with (three nodes: every other node has)
                partners = sorted((other for other in passed if other not in to_test and other not in used),
                                  key=lambda other: (state.fails_apart(other, suspects) > 0, other in state.partners[host],
                                                     state.order[other]))
                partner = partners[0] if partners else None
                if partner is not None:
                    used.add(partner)
                    runs.append(_pair_run(partner, host, rail, self.rails))
        return runs

    def repeat_runs(self, number):
        runs = []
        for rail, state in self.live_rails():
            bad = state.bad()
            members = [host for host in state.hosts if host not in bad]
            # a string seed is hashed the same way by every Python 3: the same seed gives the same pairs
            random.Random('%s:%d:%d' % (self.seed, number, rail)).shuffle(members)
            runs.extend(_pair_run(members[i], members[i + 1], rail, self.rails) for i in range(0, len(members) - 1, 2))
        return runs

    def next_round(self):
        """``{round, stage, runs}`` of the next round, or None when isolation is done."""
        done = self.rounds_done()
        if done < len(self.ring):
            return {'round': done, 'stage': 'ring', 'runs': self.ring[done]}
        if not self.runs or self.every_run_exited() or len(self.dead_rails()) == len(self.by_rail):
            return None
        if not self.rounds_of('confirm') and not self.rounds_of('repeat'):
            runs = self.confirm_runs()
            if runs:
                return {'round': done, 'stage': 'confirm', 'runs': runs}
        repeated = len(self.rounds_of('repeat'))
        if repeated < self.repeats:
            runs = self.repeat_runs(repeated)
            if runs:
                return {'round': done, 'stage': 'repeat', 'runs': runs}
        return None

    def max_rounds(self):
        return len(self.ring) + 1 + self.repeats

    def _interface(self, host, rail):
        return self.rails[host][str(rail)]['interface']

    def _port_name(self, host, rail):
        own = self.rails[host][str(rail)]
        names = [name for name in (own['interface'], own['net_device']) if name]
        return 'rail %d of %s%s' % (rail, host, ' (%s)' % ', '.join(dict.fromkeys(names)) if names else '')

    def findings(self):
        # two nodes alone: their failed pair says nothing of the stack either (the dead-rail rule below says why)
        if self.every_run_exited() and len(self.hosts) > 2:
            codes = ', '.join(str(rc) for rc in sorted(set(run['mpirun_rc'] for run in self.runs)))
            return [_finding('fabric', None, None, None, self.runs,
                             'every pair on every rail exited non-zero (exit %s): not one node; check the MPI '
                             'installation, the job environment and the benchmark (run one pair by hand)' % codes)]
        dead = self.dead_rails()
        if dead and len(dead) == len(self.by_rail) and len(self.hosts) > 2:
            return [_finding('fabric', None, None, None, _best(self.runs),
                             'every pair on every rail is below the threshold: check the switches (port speed, MTU, '
                             'PFC/ECN) and the threshold (validate_allreduce_min_busbw_gbs, or calibrate)')]
        findings = []
        bad_by_host = {}
        for rail, state in self.by_rail.items():
            if rail in dead:
                findings.append(self._dead_rail(rail, state))
                continue
            bad = state.bad()
            for host in bad:
                bad_by_host.setdefault(host, []).append(rail)
            # failures with an unconfirmed suspect are put down to it, not to its partners
            flaky, left = state.flaky(state.suspects())
            for host in flaky:
                findings.append(_finding(
                    'flaky', host, rail, self._interface(host, rail), state.runs_of[host],
                    '%s passes with some partners and fails with others (%d of %d runs passed): reseat or replace '
                    'its cable or optic, check the switch port\'s errors' % (
                        self._port_name(host, rail), state.passes[host], state.passes[host] + state.fails[host])))
            for run in left:
                findings.append(_finding(
                    'flaky', None, rail, None, [run],
                    '%s failed while both pass with other partners: an intermittent fault on either port or the '
                    'switch path between them; run again with validate_isolation_repeats > 0 to tell which'
                    % ' + '.join(run['hosts'])))
        for host, bad_rails in bad_by_host.items():
            evidence = [run for run in self.runs if host in run['hosts']]
            if len(bad_rails) == len(self.rails[host]):
                findings.append(_finding(
                    'node', host, None, None, evidence,
                    'drain %s: it fails with every partner on every rail%s; check its NICs, PCIe, CPU and memory '
                    'settings before the cables' % (host, '' if len(bad_rails) == 1 else ' (%d rails)' % len(bad_rails))))
                continue
            for rail in bad_rails:
                findings.append(_finding(
                    'link', host, rail, self._interface(host, rail), [run for run in evidence if run['rail'] == rail],
                    'reseat or replace the cable or optic on %s, then check its NIC and its switch port; its other '
                    'rails pass' % self._port_name(host, rail)))
        order = dict((host, index) for index, host in enumerate(self.hosts))
        return sorted(findings, key=lambda item: (order.get(item['host'], -1), item['rail'] if item['rail'] is not None
                                                  else -1, item['kind']))

    def _dead_rail(self, rail, state):
        if len(state.hosts) == 2:
            return _finding('link', None, rail, None, state.runs,
                            'with 2 nodes a bad node cannot be told from a bad link: check both ends of rail %d '
                            '(%s), or test each against a third node known good' % (rail, ' and '.join(state.hosts)))
        return _finding('fabric', None, rail, None, _best(state.runs),
                        'every pair on rail %d is below the threshold while other rails pass: check rail %d\'s '
                        'switches (port speed, MTU, PFC/ECN)' % (rail, rail))

    def pass_ratios(self):
        """Per host, the share of its runs that passed, overall and per rail; runs with a bad partner do not count."""
        ratios = {}
        bad = dict((rail, state.bad()) for rail, state in self.by_rail.items())
        for host in self.hosts:
            counts = {}
            for rail in sorted(self.rails[host], key=int):
                runs = [run for run in self.by_rail[int(rail)].runs_of[host] if _other(run, host) not in bad[int(rail)]]
                counts[rail] = (sum(1 for run in runs if run['passed']), len(runs))
            passed = sum(count[0] for count in counts.values())
            total = sum(count[1] for count in counts.values())
            ratios[host] = {'all': _ratio(passed, total),
                            'rails': dict((rail, _ratio(*count)) for rail, count in counts.items())}
        return ratios

    def unconfirmed(self):
        """Ports that failed with every partner but could not be confirmed: no partner was left that passed."""
        return [{'host': host, 'rail': rail} for rail, state in self.live_rails()
                for host in state.suspects() if host not in state.bad()]


def _finding(kind, host, rail, interface, evidence, action):
    return {'kind': kind, 'host': host, 'rail': rail, 'interface': interface, 'action': action,
            'evidence': [run_text(run) for run in evidence[:EVIDENCE_RUNS]]
            + (['and %d more runs' % (len(evidence) - EVIDENCE_RUNS)] if len(evidence) > EVIDENCE_RUNS else [])}


def _ratio(passed, total):
    return round(float(passed) / total, 3) if total else None


def _best(runs):
    return sorted(runs, key=lambda run: -(run['busbw_gbs'] or 0))


def _summary(findings, runs, unconfirmed, rounds):
    if not runs:
        return 'no pair was run (fewer than 2 nodes)'
    head = '%d runs in %d rounds' % (len(runs), rounds)
    parts = []
    for item in findings:
        where = ' '.join(text for text in (item['host'], 'rail %d' % item['rail'] if item['rail'] is not None else None)
                         if text)
        parts.append('%s%s: %s' % (item['kind'], ' ' + where if where else '', item['action']))
    if unconfirmed:
        parts.append('not confirmed (no partner that passed was left): %s'
                     % ', '.join('%s rail %d' % (item['host'], item['rail']) for item in unconfirmed))
    if not parts:
        return '%s: every pair passed, no node or link to blame' % head
    return '%s; %s' % (head, '; '.join(parts))


def isolation_step(results, hosts, rails, threshold, min_size_bytes, repeats=0, seed=DEFAULT_SEED):
    """The isolation so far, and its next round.

    ``results`` are the runs so far, ``{hosts, rail, round, stage, bench, error, mpirun_rc}`` (the planned run of
    ``next.runs`` with what ``pair_results`` gathered); ``hosts`` the nodes in ring order; ``rails`` each host's rails
    (:func:`isolation_rails`); ``threshold`` and ``min_size_bytes`` judge each run as the all-node run is judged;
    ``repeats`` and ``seed`` the random re-pairings.

    Returns ``{done, next, max_rounds, rounds, runs, findings, bad_hosts, pass_ratios, unconfirmed, summary,
    threshold}``:
    ``next`` is ``{round, stage, runs: [{hosts, rail, net_devices}]}`` (None when done), ``max_rounds`` the most rounds
    the isolation can take, ``runs`` every run judged, ``bad_hosts`` the hosts the findings name, ``threshold`` the one
    the runs were judged against.
    """
    if not isinstance(hosts, (list, tuple)):
        raise ValueError('hosts must be a list of host names, got %s' % type(hosts).__name__)
    engine = _Engine(hosts, rails, results, threshold, min_size_bytes, repeats, seed)
    planned = engine.next_round()
    findings = engine.findings() if planned is None else []
    unconfirmed = engine.unconfirmed() if planned is None else []
    rounds = engine.rounds_done()
    return {
        'done': planned is None,
        'next': planned,
        'max_rounds': engine.max_rounds(),
        'rounds': rounds,
        'stages': dict((stage, len(engine.rounds_of(stage))) for stage in STAGES),
        'runs': engine.runs,
        'findings': findings,
        'bad_hosts': list(dict.fromkeys(item['host'] for item in findings if item['host'])),
        'pass_ratios': engine.pass_ratios(),
        'unconfirmed': unconfirmed,
        'summary': _summary(findings, engine.runs, unconfirmed, rounds) if planned is None else '',
        'threshold': threshold,
    }
