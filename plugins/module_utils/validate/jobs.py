# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The validation's jobs as Ansible ran them: a hostfile's entries, each node's entry (paired by name through the
cluster model) and the mpirun host list made from them, why a job failed (its registered ``command`` result), and an
isolation round's runs with what they gave (the registered results of their ends and the ``slurp`` of their JSON).

Bad input raises :class:`ValueError` naming what is wrong; the filter plugins turn it into an AnsibleFilterError.
"""
from __future__ import annotations

import base64
import json
import re
import signal

from ansible_collections.hpcfabric.cluster.plugins.module_utils.perftest import bench_of_report

# what a failed job's message keeps of mpirun's stderr: the end, where the bench says what went wrong and Open MPI
# names the first rank that failed and its exit code (its banner takes 6 lines once its rules are left out)
STDERR_LINES = 8
# seconds salloc waits for the tested nodes, which the validation's reservation already keeps for it
SALLOC_WAIT = 120
# validate_launcher's values: what starts the validation's jobs
LAUNCHERS = ('mpirun', 'slurm')


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


def hostfile_hosts(entries, model, hosts, launcher='mpirun'):
    """Each node's entry for the jobs' host lists: ``{entries: {host: entry}, problems}``; ``launcher`` is
    ``validate_launcher`` (``mpirun`` or ``slurm``).

    For ``mpirun``, each of ``hosts`` paired with the hostfile line that names it. ``entries`` are the hostfile's lines
    (``hostfile_entries``), ``model`` the cluster model's ``hostfile`` (``[{host, name, slots}]``). A host's line is
    the one named by its model ``name`` (its primary fabric name) or by the host itself (the mpi_hostfile role writes
    either); its ``name`` and ``slots`` are the line's, as mpirun reads them. The lines pair by name, never by
    position: they may be in any order, and may list nodes that are not in ``hosts`` (a run with ``--limit``).
    ``problems`` names each host no line names, each host two lines name, and each line that names no node of the
    model (a stale hostfile).

    For ``slurm``, no hostfile: srun takes Slurm's node names, the inventory's, and ``entries`` is not read. Every
    node of the model is its own entry, the model's ``{host, name, slots}``, and there are no problems.
    """
    _check_launcher(launcher)
    if not isinstance(entries, (list, tuple)):
        raise ValueError('hostfile entries must be a list of {name, slots}, got %r' % (entries,))
    if not isinstance(model, (list, tuple)):
        raise ValueError("the cluster model's hostfile must be a list of {host, name, slots}, got %r" % (model,))
    if not isinstance(hosts, (list, tuple)):
        raise ValueError('hosts must be a list of inventory names, got %r' % (hosts,))
    owner = {}
    names = {}
    for node in model:
        if not isinstance(node, dict) or not node.get('host') or not node.get('name'):
            raise ValueError("each entry of the cluster model's hostfile must be {host, name, slots}, got %r" % (node,))
        names[node['host']] = (node['name'], node['host'])
        owner.setdefault(node['name'], node['host'])
        owner.setdefault(node['host'], node['host'])
    unknown = [host for host in hosts if host not in names]
    if unknown:
        raise ValueError('the cluster model has no node %s' % ', '.join(unknown))
    if launcher == 'slurm':
        return {'entries': dict((node['host'], dict(node)) for node in model), 'problems': []}
    lines = {}
    problems = []
    for entry in entries:
        if not isinstance(entry, dict) or not entry.get('name') or not isinstance(entry.get('slots'), int):
            raise ValueError('each hostfile entry must be {name, slots}, got %r' % (entry,))
        host = owner.get(entry['name'])
        if host is None:
            problems.append('%s: names no node of the cluster model' % entry['name'])
        else:
            lines.setdefault(host, []).append(entry)
    paired = {}
    for host in hosts:
        found = lines.get(host, [])
        if not found:
            problems.append('%s: no line names it (%s)' % (host, ' or '.join(dict.fromkeys(names[host]))))
        elif len(found) > 1:
            problems.append('%s: %d lines name it (%s)' % (host, len(found), ', '.join(e['name'] for e in found)))
        else:
            paired[host] = {'name': found[0]['name'], 'slots': found[0]['slots']}
    return {'entries': paired, 'problems': problems}


def mpirun_hosts(entries, rotate=0):
    """``['--host', 'a:8,b:8', '-np', '16']``: mpirun's arguments for the hostfile entries ``[{name, slots}]``, one
    rank per slot. ``rotate`` moves that many entries from the front to the back, so rank 0 lands on another node.
    """
    ordered = _rotated(entries, rotate, '{name, slots}')
    for entry in ordered:
        if not isinstance(entry, dict) or not entry.get('name') or not isinstance(entry.get('slots'), int):
            raise ValueError('each entry must be {name, slots}, got %r' % (entry,))
    return ['--host', ','.join('%s:%d' % (entry['name'], entry['slots']) for entry in ordered),
            '-np', str(sum(entry['slots'] for entry in ordered))]


def _rotated(entries, rotate, what):
    if not isinstance(entries, (list, tuple)) or not entries:
        raise ValueError('entries must be a non-empty list of %s, got %r' % (what, entries))
    if not isinstance(rotate, int) or isinstance(rotate, bool) or rotate < 0:
        raise ValueError('rotate must be a whole number of at least 0, got %r' % (rotate,))
    shift = rotate % len(entries)
    return list(entries[shift:]) + list(entries[:shift])


def srun_hosts(entries, rotate=0):
    """srun's arguments for ``[{host, slots}]`` (Slurm's node names are the inventory's), one task per slot, rank 0
    on the first entry after the rotation, as mpirun puts it: ``--distribution=arbitrary`` with every task's node
    listed in order (any other distribution places tasks in Slurm's node order, whatever the list's order, and an
    isolation run's leader, which reads the run's results, would not hold rank 0). No ``--nodes``: the list gives
    them, and Slurm 24.11 refuses it beside ``--distribution=arbitrary`` (22.05 took both).
    """
    ordered = _rotated(entries, rotate, '{host, slots}')
    for entry in ordered:
        slots = entry.get('slots') if isinstance(entry, dict) else None
        if not (isinstance(entry, dict) and entry.get('host') and isinstance(slots, int)
                and not isinstance(slots, bool) and slots >= 1):
            raise ValueError('each entry must be {host, slots} with at least one slot, got %r' % (entry,))
    return ['--ntasks=%d' % sum(entry['slots'] for entry in ordered),
            '--distribution=arbitrary',
            '--nodelist=%s' % ','.join(entry['host'] for entry in ordered for _slot in range(entry['slots']))]


def job_hosts(entries, hosts, launcher, rotate=0):
    """The host arguments of a job on ``hosts``: mpirun's (``--host``, ``-np``) by each host's hostfile name, or
    srun's by its inventory name. ``entries`` maps each host to its ``{name, slots}``; ``launcher`` is
    ``validate_launcher`` (``mpirun`` or ``slurm``)."""
    _check_launcher(launcher)
    if not isinstance(entries, dict):
        raise ValueError('entries must map each host to its {name, slots}, got %r' % (entries,))
    missing = [host for host in hosts if host not in entries]
    if missing:
        raise ValueError('no hostfile entry for %s' % ', '.join(missing))
    if launcher == 'mpirun':
        return mpirun_hosts([entries[host] for host in hosts], rotate)
    return srun_hosts([{'host': host, 'slots': entries[host]['slots']} for host in hosts], rotate)


def _check_launcher(launcher):
    if launcher not in LAUNCHERS:
        raise ValueError('validate_launcher must be %s, got %r' % (' or '.join(LAUNCHERS), launcher))


def salloc_argv(hold, hosts, minutes, gpus_per_node):
    """The validation's one Slurm allocation: every tested node whole, with all its memory and GPUs, in the
    reservation ``hold``, for ``minutes``; ``--no-shell``, so that every job of the validation is a step of it, and
    ``--immediate``, so that a node another job still holds fails the run instead of leaving it waiting."""
    if not hosts:
        raise ValueError('the allocation needs at least one node')
    argv = ['salloc', '--no-shell', '--job-name=hpcfabric-validate', '--reservation=%s' % hold,
            '--nodes=%d' % len(hosts), '--nodelist=%s' % ','.join(hosts), '--exclusive', '--mem=0',
            '--time=%d' % max(1, int(minutes)), '--immediate=%d' % SALLOC_WAIT]
    if gpus_per_node:
        argv.append('--gpus-per-node=%d' % int(gpus_per_node))
    return argv


def salloc_job(stderr):
    """The job id in salloc's ``Granted job allocation N``; raises naming what salloc said instead."""
    found = re.search(r'Granted job allocation (\d+)', stderr or '')
    if not found:
        raise ValueError('salloc granted no allocation: %s' % ' '.join((stderr or '').split())[-400:])
    return found.group(1)


def srun_argv(job, gpus_per_node, extra_args=()):
    """A step of the validation's allocation ``job``: PMIx; ``--overlap``, so that the isolation's runs of one round
    share their nodes; every GPU of each node (never one per task: that hides the others and breaks CUDA IPC under
    ``ConstrainDevices``; the rank wrapper picks each rank's from ``SLURM_LOCALID``); no CPU binding of Slurm's (the
    wrapper binds to the GPU's NUMA node); then ``validate_srun_extra_args``."""
    argv = ['srun', '--jobid=%s' % job, '--overlap', '--mpi=pmix', '--cpu-bind=none']
    if gpus_per_node:
        argv.append('--gpus-per-node=%d' % int(gpus_per_node))
    return argv + list(extra_args or ())


def fetched_json(fetched):
    """The JSON file a ``slurp`` fetched; None when there is none."""
    content = fetched.get('content') if isinstance(fetched, dict) else None
    if content is None:
        return None
    return json.loads(base64.b64decode(content))


def exit_status(run):
    """mpirun's exit status from the registered command; None when there is none (an unreachable launcher)."""
    rc = run.get('rc') if isinstance(run, dict) else None
    return rc if isinstance(rc, int) and not isinstance(rc, bool) else None


def _stderr_tail(run):
    lines = run.get('stderr_lines')
    if not isinstance(lines, list):
        lines = str(run.get('stderr') or '').splitlines()
    # Open MPI pads its messages and frames them with rules of dashes
    lines = [' '.join(str(line).split()) for line in lines]
    return [line for line in lines if line.strip('-')][-STDERR_LINES:]


def _status_text(rc):
    if rc < 0:
        # the command module's status of a process killed by a signal (mpirun itself)
        return 'was killed by signal %d%s' % (-rc, _signal_name(-rc))
    if rc > 128 and _signal_name(rc - 128):
        # mpirun's status when a rank died of a signal: 128 + the signal
        return 'exited %d (128 + signal %d%s)' % (rc, rc - 128, _signal_name(rc - 128))
    return 'exited %d' % rc


def _signal_name(number):
    try:
        return ', ' + signal.Signals(number).name
    except ValueError:
        return ''


def mpirun_error(run, job, launcher, tool='mpirun'):
    """Why a job failed, one line: the job, its exit status, the launcher and the end of stderr; None when it exited 0.

    ``run`` is the job's registered ``command`` result (``tool``, mpirun unless said), ``job`` what ran (``allreduce on
    all nodes``, ``isolation pair a + b``, ...) and ``launcher`` the host it ran on. Any exit status but 0 is a
    failure, whatever the job wrote: a job that writes its results and then dies (in MPI_Finalize, say) does not pass.
    """
    for name, value in (('job', job), ('launcher', launcher)):
        if not isinstance(value, str) or not value:
            raise ValueError('%s must be a non-empty string, got %r' % (name, value))
    run = run if isinstance(run, dict) else {}
    rc = exit_status(run)
    if rc == 0:
        return None
    lines = _stderr_tail(run) or ([str(run['msg'])] if run.get('msg') else [])
    status = 'gave no exit status' if rc is None else _status_text(rc)
    text = '%s %s (%s on %s)' % (job, status, tool, launcher)
    return text + (': ' + ' / '.join(lines) if lines else '')


def _end_of(result):
    """``(run, end)`` of a registered result: the ``run`` and ``end`` of its loop item (round_launches), through the
    items of an async start and its ``async_status``; None when there is none."""
    item = result
    while isinstance(item, dict):
        if isinstance(item.get('run'), int) and not isinstance(item.get('run'), bool) and 'argv' in item:
            return item['run'], item.get('end')
        item = item.get('item')
    return None


def _by_end(results, name):
    if not isinstance(results, (list, tuple)):
        raise ValueError('%s must be a list of registered results, got %s' % (name, type(results).__name__))
    return dict((_end_of(result), result) for result in results if _end_of(result) is not None)


def pair_results(launch, ends, fetched):
    """The runs of an isolation round (``round_launches``) with what they gave: ``bench``, ``error`` and
    ``mpirun_rc`` (the client's exit status, None when there is none) added to each.

    ``ends`` and ``fetched`` are every node's registered results of the round, found by the ``run`` and ``end`` of
    their loop items: each run's client (mpirun, or ib_write_bw's client) and ib_write_bw's server, and the ``slurp``
    of each MPI run's bench JSON. An MPI run's ``bench`` is its JSON, kept whatever the exit status; an ib_write_bw
    run's is its client's report (perftest.bench_of_report). ``error`` says why the run failed (the client's or the
    server's exit, results missing or unreadable), None when it is left to judging.
    """
    if not isinstance(launch, dict) or not isinstance(launch.get('runs'), (list, tuple)):
        raise ValueError('launch must be round_launches\' result, got %r' % (launch,))
    ends, fetched = _by_end(ends, 'ends'), _by_end(fetched, 'fetched')
    results = []
    for index, pair in enumerate(launch['runs']):
        if not isinstance(pair, dict) or not isinstance(pair.get('hosts'), (list, tuple)) or len(pair['hosts']) != 2:
            raise ValueError('each run must be {hosts: [leader, partner], rail, tool, ...}, got %r' % (pair,))
        hosts = [str(host) for host in pair['hosts']]
        job = _pair_job(hosts, pair.get('rail'))
        client = ends.get((index, 'client'))
        if pair.get('tool') == 'ib_write_bw':
            bench, error = _perftest_result(job, hosts, client, ends.get((index, 'server')), pair.get('cuda'))
        else:
            bench, error = _mpi_result(job, hosts, client, fetched.get((index, 'client')))
        results.append(dict(pair, hosts=hosts, bench=bench, error=error, mpirun_rc=exit_status(client)))
    return results


def _mpi_result(job, hosts, run, got):
    error = mpirun_error(run, job, hosts[0])
    try:
        bench = fetched_json(got)
    # a truncated or garbled file (base64 or JSON) is a failed pair, not a failed validation
    except ValueError as exc:
        bench = None
        error = '%s; results are not JSON (%s)' % (error, exc) if error else '%s: results are not JSON (%s)' % (job, exc)
    if bench is None and error is None:
        error = '%s wrote no results, though mpirun on %s exited 0' % (job, hosts[0])
    return bench, error


def _perftest_result(job, hosts, client, server, cuda):
    # the server's own failure (its device, its GPU) says more than the client's "Couldn't connect"
    errors = [error for error in (mpirun_error(client, job, hosts[0], 'ib_write_bw'),
                                  mpirun_error(server, job + ' (server)', hosts[1], 'ib_write_bw')) if error]
    if errors:
        return None, '; '.join(errors)
    try:
        return bench_of_report(str(client.get('stdout') or ''), hosts, cuda), None
    except ValueError as exc:
        return None, '%s: ib_write_bw on %s exited 0, but %s' % (job, hosts[0], exc)


def _pair_job(hosts, rail):
    return 'isolation pair %s%s' % (' + '.join(hosts), '' if rail is None else ' on rail %s' % rail)
