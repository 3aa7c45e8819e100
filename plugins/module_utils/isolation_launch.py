# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""What each run of an isolation round starts, on which node: the per-link test of one pair on one rail.

Where both ends of a run have an RDMA port on its rail and ib_write_bw (perftest), the run is ``ib_write_bw``
between those two ports (module_utils/perftest.py): a server on the pair's second node, a client on its first. Else
it is an MPI job of one rank per node on the rail alone (files/bench/allreduce.py, ``rank_env.sh --rail``, UCX pinned
to the rail). ``validate_isolation_tool`` can ask for either; asking for perftest where a run cannot have it is a
problem named before any job.
"""

from __future__ import annotations

from ansible_collections.hpcfabric.cluster.plugins.module_utils.perftest import bw_argv
from ansible_collections.hpcfabric.cluster.plugins.module_utils.validate.jobs import job_hosts

TOOLS = ('auto', 'mpi', 'perftest')
# seconds an ib_write_bw end may take beyond its test before it is stopped: its client may come only after every server
# of the round listens (a server that died at once holds the others' clients for the role's wait), then set up a GPU
PERFTEST_GRACE = 120


def _rail(nodes, host, rail):
    """``{interface, net_device, local_rank, address, port}`` of a host's rail: ``port`` the RDMA port behind its
    netdev (``{device, port, gid_index, link_layer}``), None where there is none."""
    node = nodes.get(host)
    if not isinstance(node, dict):
        raise ValueError('the cluster model has no node %s' % host)
    own = next((item for item in node.get('rails') or [] if item.get('rail') == rail), None)
    if own is None:
        raise ValueError('%s has no rail %s in the cluster model' % (host, rail))
    port = next((item for item in node.get('rdma_ports') or [] if item.get('netdev') == own['interface']), None)
    iface = next((item for item in node.get('interfaces') or [] if item.get('name') == own['interface']), {})
    address = str(iface.get('address') or '').split('/', 1)[0] or None
    return dict(own, address=address, port=port)


def _end_problems(nodes, host, rail, perftest):
    """Why ``host`` cannot be an end of an ib_write_bw run on ``rail``; ``perftest`` maps each host to its
    ``{path, cuda}`` (None without ib_write_bw)."""
    own = _rail(nodes, host, rail)
    reasons = []
    if own['port'] is None:
        reasons.append('no RDMA port on rail %s (%s)' % (rail, own['interface']))
    elif not own['address']:
        reasons.append('no address on rail %s (%s) for ib_write_bw to connect to' % (rail, own['interface']))
    if not (perftest or {}).get(host):
        reasons.append('no ib_write_bw')
    return reasons


def perftest_problems(hosts, nodes, perftest):
    """``validate_isolation_tool: perftest`` checked before any job: one line per host and what it lacks."""
    problems = []
    for host in hosts:
        if not isinstance(nodes.get(host), dict):
            raise ValueError('the cluster model has no node %s' % host)
        rails = [item['rail'] for item in nodes[host].get('rails') or []]
        reasons = list(dict.fromkeys(reason for rail in rails for reason in _end_problems(nodes, host, rail, perftest)))
        if reasons:
            problems.append('%s: validate_isolation_tool=perftest, but %s' % (host, '; '.join(reasons)))
    return problems


def round_launches(runs, nodes, settings):
    """The round's ``runs`` (``isolation_step``'s ``next.runs``) as commands: ``{runs, servers, clients}``.

    ``runs`` are the planned runs with ``tool`` (``mpi`` or ``ib_write_bw``) and ``json`` (where an MPI run's leader
    writes its results, None for ib_write_bw) added; ``servers`` and ``clients`` map each host to what it starts,
    ``[{run, end, argv, tcp_port}]`` (``run`` the run's index, ``end`` client or server, ``tcp_port`` where an
    ib_write_bw server listens, None for MPI; a server's ``address`` is its rail address, where its client
    connects). ``settings``: ``tool`` (``auto``, ``mpi``, ``perftest``), ``device``, ``work_dir``, ``perftest`` (each
    host's ``{path, cuda}``, None without ib_write_bw), ``perftest_bytes``, ``perftest_seconds``, ``perftest_port``
    (rail N listens on it + N, so that every rail of a pair runs at once), ``perftest_args``, and for MPI runs
    ``launcher`` (``validate_launcher``: ``mpirun``, the default, or ``slurm``), ``launch`` (mpirun's or srun's argv
    up to the hosts), ``entries`` (each host's hostfile entry, ``{name, slots}``), ``rank_argv`` (the rank wrapper,
    its map, the interpreter) and ``bench`` (allreduce.py and its arguments).
    """
    if not isinstance(runs, (list, tuple)):
        raise ValueError('runs must be the round\'s planned runs, got %s' % type(runs).__name__)
    if not isinstance(nodes, dict):
        raise ValueError('nodes must be the cluster model\'s nodes, got %s' % type(nodes).__name__)
    tool = settings.get('tool')
    if tool not in TOOLS:
        raise ValueError('validate_isolation_tool must be one of %s, got %r' % (', '.join(TOOLS), tool))
    perftest = settings.get('perftest') or {}
    planned, servers, clients = [], {}, {}
    for index, run in enumerate(runs):
        leader, partner = run['hosts']
        lacking = [] if tool == 'mpi' else [
            '%s: %s' % (host, reason) for host in run['hosts'] for reason in _end_problems(nodes, host, run['rail'],
                                                                                           perftest)]
        if tool == 'perftest' and lacking:
            # perftest_problems stops the validation before any job: a run cannot get here without a bug
            raise ValueError('validate_isolation_tool=perftest, but %s' % '; '.join(lacking))
        if tool == 'mpi' or lacking:
            json_path = '%s/pair-rail%s.json' % (settings['work_dir'].rstrip('/'), run['rail'])
            clients.setdefault(leader, []).append({'run': index, 'end': 'client', 'tcp_port': None,
                                                   'argv': _mpi_argv(run, settings, json_path)})
            planned.append(dict(run, tool='mpi', json=json_path))
            continue
        tcp_port = int(settings['perftest_port']) + int(run['rail'])
        ends = dict((host, _rail(nodes, host, run['rail'])) for host in run['hosts'])
        gpus = dict((host, _gpu(ends[host], perftest[host], settings)) for host in run['hosts'])
        servers.setdefault(partner, []).append({'run': index, 'end': 'server', 'tcp_port': tcp_port,
                                                'address': ends[partner]['address'], 'argv': _bw_argv(
                                                    ends[partner], perftest[partner], gpus[partner], settings,
                                                    tcp_port)})
        clients.setdefault(leader, []).append({'run': index, 'end': 'client', 'tcp_port': tcp_port, 'argv': _bw_argv(
            ends[leader], perftest[leader], gpus[leader], settings, tcp_port, ends[partner]['address'])})
        planned.append(dict(run, tool='ib_write_bw', json=None, cuda=gpus[leader] is not None))
    return {'runs': planned, 'servers': servers, 'clients': clients}


def _gpu(end, tool, settings):
    """The GPU an end's buffers live in: only where the validation runs on GPUs and its ib_write_bw has CUDA."""
    return end['local_rank'] if settings.get('device') == 'cuda' and tool.get('cuda') else None


def _bw_argv(end, tool, gpu, settings, tcp_port, server_address=None):
    port = end['port']
    seconds = int(settings['perftest_seconds'])
    # a server whose client never comes (a dead link) would wait forever, and the round with it
    return ['timeout', '--kill-after=10', str(seconds + PERFTEST_GRACE)] + bw_argv(
        tool['path'], port['device'], port['port'],
        gid_index=port.get('gid_index') if port.get('link_layer') == 'Ethernet' else None, gpu=gpu,
        size_bytes=settings['perftest_bytes'], seconds=seconds, tcp_port=tcp_port,
        extra_args=settings.get('perftest_args') or (), server_address=server_address)


def _mpi_argv(run, settings, json_path):
    entries = settings['entries']
    rank = list(settings['rank_argv'])
    pin = ['/usr/bin/env', 'UCX_NET_DEVICES=%s' % run['net_devices']] if run.get('net_devices') else []
    return (list(settings['launch'])
            + job_hosts(dict((host, {'name': entries[host]['name'], 'slots': 1}) for host in run['hosts']),
                        run['hosts'], settings.get('launcher', 'mpirun'))
            + rank[:2] + ['--rail', str(run['rail'])] + pin + rank[2:]
            + list(settings['bench']) + ['--json', json_path])
