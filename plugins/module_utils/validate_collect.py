# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""What the validate role's tasks gathered, put into the shapes its checks and its report read.

Inputs are Ansible's own results: the setup module's network facts, a hostfile's text, the registered results of
``command`` and ``slurp``, the bench JSON of ``files/bench/allreduce.py``. Bad input raises :class:`ValueError`
naming what is wrong; the filter plugins turn it into an AnsibleFilterError.
"""
from __future__ import annotations

import base64
import json

# what a failed pair's error keeps of mpirun's stderr: the end, where MPI and the bench say what went wrong
PAIR_STDERR_LINES = 5


def interface_states(facts, names):
    """``{name: {mtu, operstate}}`` of the named interfaces, from the setup module's network facts.

    Setup keys an interface's facts by its name with ``-`` turned into ``_``; an interface it does not report has
    ``mtu`` and ``operstate`` None, and ``operstate`` is None too when setup gives no ``active`` flag.
    """
    if not isinstance(facts, dict):
        raise ValueError('facts must be the host\'s ansible_facts, got %s' % type(facts).__name__)
    if not isinstance(names, (list, tuple)):
        raise ValueError('interface names must be a list, got %s' % type(names).__name__)
    states = {}
    for name in names:
        seen = facts.get(str(name).replace('-', '_'))
        seen = seen if isinstance(seen, dict) else {}
        active = seen.get('active')
        states[name] = {'mtu': seen.get('mtu'), 'operstate': None if active is None else ('up' if active else 'down')}
    return states


def _slots(field, number):
    try:
        slots = int(field[len('slots='):])
    except ValueError:
        raise ValueError('hostfile line %d: %s is not a slot count' % (number, field)) from None
    if slots < 1:
        raise ValueError('hostfile line %d: %s, a node needs at least one slot' % (number, field))
    return slots


def hostfile_entries(text):
    """``[{name, slots}]``, one per host line of an Open MPI hostfile, in order.

    Blank lines and ``#`` comments are skipped; a line without ``slots=`` has one slot, as Open MPI reads it.
    """
    if not isinstance(text, str):
        raise ValueError('hostfile must be text, got %s' % type(text).__name__)
    entries = []
    for number, line in enumerate(text.splitlines(), 1):
        fields = line.split('#', 1)[0].split()
        if not fields:
            continue
        slots = [field for field in fields[1:] if field.startswith('slots=')]
        entries.append({'name': fields[0], 'slots': _slots(slots[0], number) if slots else 1})
    return entries


def _pair_bench(fetched):
    """The bench JSON a pair's leader fetched with slurp; None when there is none."""
    content = fetched.get('content') if isinstance(fetched, dict) else None
    if content is None:
        return None
    return json.loads(base64.b64decode(content))


def _mpirun_error(run):
    run = run if isinstance(run, dict) else {}
    stderr = run.get('stderr_lines') or []
    return 'mpirun exit %s: %s' % (run.get('rc', '?'), ' / '.join(str(line) for line in stderr[-PAIR_STDERR_LINES:]))


def pair_results(pairs, runs, fetched):
    """``[{hosts, bench, error}]``, one per pair of an isolation round, for ``isolation_verdict``.

    ``runs`` and ``fetched`` are the pairs' leaders' registered results, in the order of ``pairs``: the mpirun
    ``command`` and the ``slurp`` of the bench JSON. A pair without results gets an error with mpirun's exit status
    and the end of its stderr; so does one whose results are not JSON.
    """
    for name, value in (('pairs', pairs), ('runs', runs), ('fetched', fetched)):
        if not isinstance(value, (list, tuple)):
            raise ValueError('%s must be a list, got %s' % (name, type(value).__name__))
    if not len(pairs) == len(runs) == len(fetched):
        raise ValueError('one run and one fetched result per pair: %d pairs, %d runs, %d fetched'
                         % (len(pairs), len(runs), len(fetched)))
    results = []
    for pair, run, got in zip(pairs, runs, fetched):
        try:
            bench = _pair_bench(got)
        # a truncated or garbled file (base64 or JSON) is a failed pair, not a failed validation
        except ValueError as exc:
            results.append({'hosts': list(pair), 'bench': None,
                            'error': 'results are not JSON (%s); %s' % (exc, _mpirun_error(run))})
            continue
        results.append({'hosts': list(pair), 'bench': bench,
                        'error': None if bench is not None else _mpirun_error(run)})
    return results


def report_runs(bench, pairs=None):
    """The report's runs: the all-node run, then every pair of the isolation that has results.

    ``bench`` is the all-node bench JSON, ``pairs`` the isolation's ``[{hosts, bench, error}]`` (None when it did
    not run). Each run is ``{name, hosts, bench}``.
    """
    if not isinstance(bench, dict) or 'world_size' not in bench:
        raise ValueError('bench must be the JSON of files/bench/allreduce.py, got %r' % (bench,))
    runs = [{'name': 'all nodes (%d ranks)' % bench['world_size'], 'hosts': bench.get('hosts'), 'bench': bench}]
    for pair in pairs or []:
        if not isinstance(pair, dict) or 'hosts' not in pair:
            raise ValueError('isolation pairs must be {hosts, bench, error}, got %r' % (pair,))
        if pair.get('bench'):
            runs.append({'name': 'pair ' + ' + '.join(pair['hosts']), 'hosts': pair['hosts'], 'bench': pair['bench']})
    return runs


def host_problems(problems_by_host):
    """``['<host>: <problem>', ...]``: every host's problems in one list, host by host, for one verdict."""
    if not isinstance(problems_by_host, dict):
        raise ValueError('problems must map each host to its list of problems, got %s'
                         % type(problems_by_host).__name__)
    lines = []
    for host, problems in problems_by_host.items():
        if not isinstance(problems, (list, tuple)):
            raise ValueError('the problems of %s must be a list, got %s' % (host, type(problems).__name__))
        lines.extend('%s: %s' % (host, problem) for problem in problems)
    return lines
