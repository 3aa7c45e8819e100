# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""validate filters: registered names, arguments passed through, ValueError turned into AnsibleFilterError."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.hpcfabric.cluster.plugins.filter import validate
from ansible_collections.hpcfabric.cluster.plugins.filter.validate import FilterModule

MIB = 1024 * 1024
BENCH = {'world_size': 2, 'device': 'cpu', 'hosts': ['a', 'b'], 'mpi': {'library_version': 'x', 'cuda_aware': False},
         'results': [{'size_bytes': MIB, 'time_us': 500.0, 'algbw_gbs': 2.0, 'busbw_gbs': 2.0}], 'correct': True}


def test_filters_are_registered():
    filters = FilterModule().filters()
    assert sorted(filters) == ['allreduce_threshold', 'allreduce_verdict', 'host_problems', 'hostfile_entries',
                               'hostfile_hosts', 'interface_states', 'isolation_launch', 'isolation_rails', 'isolation_step',
                               'job_hosts', 'mpi_launch_tools', 'mpirun_error', 'pair_results', 'pair_threshold',
                               'perftest_problems', 'preflight_problems', 'report_runs', 'salloc_argv', 'salloc_job',
                               'shared_dir_problems', 'srun_argv', 'threshold_inputs', 'train_smoke_verdict',
                               'validate_settings']
    assert all(filters[name].__name__ == name for name in filters)


def test_filters_pass_arguments_through():
    filters = FilterModule().filters()
    own = {'rails': [{'rail': 0, 'interface': 'fab0', 'net_device': 'fab0', 'local_rank': None, 'numa_node': None}]}
    rails = filters['isolation_rails']({'a': own, 'b': own}, ['a', 'b'])
    assert rails['b'] == {'0': {'interface': 'fab0', 'net_device': 'fab0'}}
    threshold = filters['allreduce_threshold']('derived', min_busbw_gbs=None, derived_fraction=0.5,
                                               node_rates_gbps={'a': 400, 'b': 200}, baseline=None,
                                               calibrated_fraction=0.9)
    assert threshold['min_busbw_gbs'] == 12.5
    pair = filters['pair_threshold'](threshold, min_busbw_gbs=None, derived_fraction=0.5,
                                     port_rates_gbps={'a': 200, 'b': 100})
    assert pair['min_busbw_gbs'] == 6.25
    verdict = filters['allreduce_verdict'](BENCH, threshold, MIB)
    assert verdict['passed'] is False
    assert verdict['reason'] == 'busbw 2 GB/s at 1 MiB < 12.5 GB/s threshold (derived)'
    isolation = filters['isolation_step']([{'hosts': ['a', 'b'], 'rail': 0, 'bench': BENCH, 'error': None}], ['a', 'b'],
                                          rails, dict(threshold, min_busbw_gbs=1.0), min_size_bytes=MIB, repeats=0)
    assert (isolation['done'], isolation['findings']) == (True, [])
    assert isolation['summary'] == '1 runs in 1 rounds: every pair passed, no node or link to blame'
    problems = filters['preflight_problems']({'interfaces': {}}, {'device': 'cpu', 'rdma': False,
                                                                  'interfaces': ['fab0'], 'mtu': 9000})
    assert problems == ['fab0: not present']
    variables = {'validate_min_bytes': 4, 'validate_max_bytes': MIB, 'validate_iters': 1, 'validate_warmup': 0,
                 'validate_threshold_mode': 'auto', 'validate_allreduce_min_busbw_gbs': None,
                 'validate_derived_fraction': 0.4, 'validate_calibrated_fraction': 0.9,
                 'validate_threshold_min_bytes': None, 'validate_calibrate': False, 'validate_isolation_repeats': 0}
    ib = {'devices': {'mlx5_0': {'ports': {'1': {'state': 'Active', 'rate_gbps': 400}}}}}
    inputs = filters['threshold_inputs'](variables, {'a': ib})
    assert (inputs['mode'], inputs['node_rates'], inputs['min_size_bytes']) == ('derived', {'a': 400}, MIB // 4)
    settings = filters['validate_settings'](dict(variables, validate_group='g', validate_engine='ring'), False)
    assert (settings['problems'], settings['engines']) == (['validate_group: this host is not in group g'], ['ring'])
    assert filters['interface_states']({'fab_0': {'mtu': 9000, 'active': True}}, ['fab-0']) == {
        'fab-0': {'mtu': 9000, 'operstate': 'up'}}
    assert filters['host_problems']({'a': ['fab0: not present']}) == ['a: fab0: not present']
    assert filters['hostfile_entries']('a-fab slots=8\n') == [{'name': 'a-fab', 'slots': 8}]
    assert filters['hostfile_hosts']([{'name': 'b-fab', 'slots': 4}, {'name': 'a-fab', 'slots': 8}],
                                     [{'host': 'a', 'name': 'a-fab', 'slots': 8}, {'host': 'b', 'name': 'b-fab', 'slots': 4}],
                                     ['a']) == {'entries': {'a': {'name': 'a-fab', 'slots': 8}}, 'problems': []}
    assert filters['hostfile_hosts']([], [{'host': 'a', 'name': 'a-fab', 'slots': 8}], ['a'], 'slurm') == {
        'entries': {'a': {'host': 'a', 'name': 'a-fab', 'slots': 8}}, 'problems': []}
    client = {'run': 0, 'end': 'client', 'argv': ['mpirun'], 'tcp_port': None}
    assert filters['pair_results']({'runs': [{'hosts': ['a', 'b'], 'rail': 1, 'tool': 'mpi'}]},
                                   [{'rc': 255, 'stderr_lines': ['ssh: b: no route'], 'item': {'item': client}}],
                                   []) == [
        {'hosts': ['a', 'b'], 'rail': 1, 'tool': 'mpi', 'bench': None, 'mpirun_rc': 255,
         'error': 'isolation pair a + b on rail 1 exited 255 (mpirun on a): ssh: b: no route'}]
    assert filters['perftest_problems'](['a'], {'a': {'rails': []}}, {'a': None}) == []
    launch = filters['isolation_launch']([], {}, {'tool': 'auto'})
    assert launch == {'runs': [], 'servers': {}, 'clients': {}}
    assert filters['mpirun_error']({'rc': 3, 'stderr_lines': ['Exit code: 3']}, 'allreduce on all nodes', 'a') == (
        'allreduce on all nodes exited 3 (mpirun on a): Exit code: 3')
    train = filters['train_smoke_verdict']([{'rc': 0}, {'rc': 0}], [{}, {}], 'a')
    assert (train['passed'], train['mpirun_rc']) == (False, {'first': 0, 'resumed': 0})
    assert filters['report_runs'](BENCH, [])[0]['name'] == 'all nodes (2 ranks)'
    entries = {'a': {'name': 'a-fab', 'slots': 8}, 'b': {'name': 'b-fab', 'slots': 4}}
    assert filters['job_hosts'](entries, ['a', 'b'], 'mpirun') == ['--host', 'a-fab:8,b-fab:4', '-np', '12']
    assert filters['job_hosts'](entries, ['a', 'b'], 'mpirun', rotate=1) == ['--host', 'b-fab:4,a-fab:8', '-np', '12']
    assert filters['job_hosts'](entries, ['a', 'b'], 'mpirun', rotate=2)[1] == 'a-fab:8,b-fab:4'
    assert filters['job_hosts'](entries, ['b', 'a'], 'mpirun')[1] == 'b-fab:4,a-fab:8'
    assert filters['job_hosts'](entries, ['a', 'b'], 'slurm')[:2] == ['--ntasks=12', '--distribution=arbitrary']
    assert filters['srun_argv']('4242', 8, ['--export=ALL']) == [
        'srun', '--jobid=4242', '--overlap', '--mpi=pmix', '--cpu-bind=none', '--gpus-per-node=8', '--export=ALL']
    assert filters['salloc_argv']('hold', ['a', 'b'], 15, 0)[:4] == [
        'salloc', '--no-shell', '--job-name=hpcfabric-validate', '--reservation=hold']
    assert filters['salloc_job']('salloc: Granted job allocation 4242\n') == '4242'
    assert filters['shared_dir_problems'](['a'], {'a': {'mark': {'failed': True, 'msg': 'denied'}, 'listing': {}}},
                                          '/d', 'u') == {
        'a': ['validate_checkpoint_dir /d: u cannot write there (denied): create it on the shared filesystem, '
              'writable by u']}


@pytest.mark.parametrize('name, args, kwargs, message', [
    ('isolation_rails', ({}, ['a']), {}, '^isolation_rails: the cluster model has no node a$'),
    ('allreduce_threshold', ('derived',), {'derived_fraction': 0.4, 'node_rates_gbps': {'a': None}},
     '^allreduce_threshold: derived threshold: no Active fabric port rate for a;'),
    ('allreduce_verdict', (BENCH, {'mode': 'explicit', 'min_busbw_gbs': 1.0}, 2 * MIB),
     {}, '^allreduce_verdict: the sweep stops at 1048576 bytes, below validate_threshold_min_bytes=2097152'),
    ('isolation_step', ('x', ['a'], {'a': {'0': {}}}, {}, 0), {}, '^isolation_step: isolation results must be a list'),
    ('preflight_problems', ({}, {'device': 'tpu'}), {}, '^preflight_problems: preflight: expected device must be'),
    ('threshold_inputs', ({'validate_calibrate': 'maybe'},), {}, '^threshold_inputs: validate_calibrate must be true or'),
    ('validate_settings', ([], True), {}, '^validate_settings: variables must map the validate role'),
    ('interface_states', ({}, 'fab0'), {}, '^interface_states: interface names must be a list'),
    ('host_problems', ({'a': None},), {}, '^host_problems: the problems of a must be a list'),
    ('hostfile_entries', ('a slots=x',), {}, '^hostfile_entries: hostfile line 1: slots=x is not a slot count'),
    ('hostfile_hosts', ([], [], ['a']), {}, '^hostfile_hosts: the cluster model has no node a$'),
    ('hostfile_hosts', ([], [], [], 'pbs'), {}, "^hostfile_hosts: validate_launcher must be mpirun or slurm, got 'pbs'$"),
    ('pair_results', ([{'hosts': ['a', 'b']}], [], []), {}, "^pair_results: launch must be round_launches' result"),
    ('isolation_launch', ([], {}, {'tool': 'iperf'}), {}, '^isolation_launch: validate_isolation_tool must be one of'),
    ('perftest_problems', (['a'], {}, {}), {}, '^perftest_problems: the cluster model has no node a$'),
    ('mpirun_error', ({'rc': 1}, 'allreduce', ''), {}, '^mpirun_error: launcher must be a non-empty string'),
    ('train_smoke_verdict', ([], [], 'a'), {}, '^train_smoke_verdict: runs must be a list of 2 results'),
    ('report_runs', ({},), {}, '^report_runs: bench must be the JSON'),
    ('job_hosts', ({}, [], 'mpirun'), {}, '^job_hosts: entries must be a non-empty list'),
    ('job_hosts', ({'a': {'name': 'a', 'slots': 1}}, ['a'], 'mpirun'), {'rotate': -1},
     '^job_hosts: rotate must be a whole number'),
    ('job_hosts', ({'a': {'name': 'a', 'slots': 1}}, ['a'], 'slurm'), {'rotate': -1},
     '^job_hosts: rotate must be a whole number'),
    ('job_hosts', ([], ['a'], 'mpirun'), {}, '^job_hosts: entries must map each host'),
    ('job_hosts', ({}, ['a'], 'slurm'), {}, '^job_hosts: no hostfile entry for a$'),
    ('job_hosts', ({'a': {'name': 'a', 'slots': 1}}, ['a'], 'pbs'), {},
     '^job_hosts: validate_launcher must be mpirun or slurm'),
    ('srun_argv', ('4242', 'eight'), {}, '^srun_argv: '),
    ('salloc_argv', ('hold', [], 15, 8), {}, '^salloc_argv: the allocation needs at least one node$'),
    ('salloc_job', ('salloc: error: Job submit/allocate failed: Invalid account',), {},
     '^salloc_job: salloc granted no allocation: salloc: error: Job submit/allocate failed: Invalid account$'),
    ('shared_dir_problems', (['a'], {}, '/d', 'u'), {}, '^shared_dir_problems: no shared directory check for a$'),
])
def test_errors_become_filter_errors(name, args, kwargs, message):
    with pytest.raises(AnsibleFilterError, match=message):
        getattr(validate, name)(*args, **kwargs)
