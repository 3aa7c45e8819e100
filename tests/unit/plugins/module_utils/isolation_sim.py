# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""A simulated fabric and the loop the validate role runs, for the tests of the isolation and of its report."""

from __future__ import annotations

from ansible_collections.hpcfabric.cluster.plugins.module_utils.isolation import isolation_rails, isolation_step

MIB = 1024 * 1024
GOOD, SLOW = 20.0, 0.5


def bench(busbw, hosts):
    results = [{'size_bytes': MIB << power, 'time_us': 100.0, 'algbw_gbs': busbw, 'busbw_gbs': busbw, 'correct': True}
               for power in range(8)]
    return {'world_size': 2, 'device': 'cpu', 'hosts': hosts, 'mpi': {'library_version': 'Open MPI', 'cuda_aware': False},
            'results': results, 'correct': True}


def names(count):
    return ['node%04d' % number for number in range(1, count + 1)]


def rails_of(hosts, count):
    """The cluster model's rail map of a RoCE cluster: rail N is eth N behind mlx5_N port 1 on every host."""
    nodes = dict((host, {'rails': [{'rail': rail, 'interface': 'eth%d' % rail, 'net_device': 'mlx5_%d:1' % rail,
                                    'local_rank': rail, 'numa_node': 0} for rail in range(count)]})
                 for host in hosts)
    return isolation_rails(nodes, hosts)


class Fabric(object):
    """A simulated fabric: a run on a rail is slow when either end is a bad node, or a bad port of that rail; a
    flaky port fails every other run it takes part in, starting with its first. ``exit`` makes every run exit so."""

    def __init__(self, bad_nodes=(), bad_ports=(), flaky_ports=(), everything_slow=False, exit=0):
        self.bad_nodes = set(bad_nodes)
        self.bad_ports = set(bad_ports)
        self.flaky = dict((port, 0) for port in flaky_ports)
        self.everything_slow = everything_slow
        self.exit = exit

    def measure(self, run):
        slow = self.everything_slow
        for host in run['hosts']:
            port = (host, run['rail'])
            slow = slow or host in self.bad_nodes or port in self.bad_ports
            if port in self.flaky:
                slow = slow or self.flaky[port] % 2 == 0
                self.flaky[port] += 1
        return {'hosts': list(run['hosts']), 'bench': bench(SLOW if slow else GOOD, run['hosts']),
                'mpirun_rc': self.exit, 'error': 'exited %d' % self.exit if self.exit else None}


def drive(hosts, rails, fabric, threshold, min_size_bytes, repeats=0, seed=7):
    """Run the engine to the end as the role does: ``(its last answer, the rounds, the results)``; every round is
    checked to put no node in two pairs of one rail."""
    results = []
    rounds = []
    step = isolation_step(results, hosts, rails, threshold, min_size_bytes, repeats=repeats, seed=seed)
    while not step['done']:
        planned = step['next']
        assert planned['round'] == len(rounds)
        for rail in set(run['rail'] for run in planned['runs']):
            used = [host for run in planned['runs'] if run['rail'] == rail for host in run['hosts']]
            assert len(used) == len(set(used)), 'a node is in two pairs of one rail in round %d' % planned['round']
        rounds.append(planned)
        for run in planned['runs']:
            results.append(dict(fabric.measure(run), rail=run['rail'], round=planned['round'], stage=planned['stage']))
        step = isolation_step(results, hosts, rails, threshold, min_size_bytes, repeats=repeats, seed=seed)
        assert len(rounds) <= step['max_rounds']
    return step, rounds, results
