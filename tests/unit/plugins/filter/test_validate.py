# -*- coding: utf-8 -*-
"""validate filters: registered names, arguments passed through, ValueError turned into AnsibleFilterError."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.hpcfabric.cluster.plugins.filter import validate
from ansible_collections.hpcfabric.cluster.plugins.filter.validate import FilterModule

MIB = 1024 * 1024
BENCH = {'world_size': 2, 'device': 'cpu', 'hosts': ['a', 'b'], 'mpi': {'library_version': 'x', 'cuda_aware': False},
         'results': [{'size_bytes': MIB, 'time_us': 500.0, 'algbw_gbs': 2.0, 'busbw_gbs': 2.0}], 'correct': True}


def test_filters_are_registered():
    filters = FilterModule().filters()
    assert sorted(filters) == ['allreduce_threshold', 'allreduce_verdict', 'isolation_verdict', 'preflight_problems',
                               'ring_rounds']
    assert all(filters[name].__name__ == name for name in filters)


def test_filters_pass_arguments_through():
    filters = FilterModule().filters()
    assert filters['ring_rounds'](['a', 'b', 'c', 'd']) == [[['a', 'b'], ['c', 'd']], [['b', 'c'], ['d', 'a']]]
    threshold = filters['allreduce_threshold']('derived', min_busbw_gbs=None, derived_fraction=0.5,
                                               node_rates_gbps={'a': 400, 'b': 200}, baseline=None,
                                               calibrated_fraction=0.9)
    assert threshold['min_busbw_gbs'] == 12.5
    verdict = filters['allreduce_verdict'](BENCH, threshold, MIB)
    assert verdict['passed'] is False
    assert verdict['reason'] == 'busbw 2 GB/s at 1 MiB < 12.5 GB/s threshold (derived)'
    isolation = filters['isolation_verdict']([{'hosts': ['a', 'b'], 'bench': BENCH, 'error': None}],
                                             dict(threshold, min_busbw_gbs=1.0), min_size_bytes=MIB)
    assert isolation['summary'] == 'no slow node: every pair passed'
    problems = filters['preflight_problems']({'interfaces': {}}, {'device': 'cpu', 'rdma': False,
                                                                  'interfaces': ['fab0'], 'mtu': 9000})
    assert problems == ['fab0: not present']


@pytest.mark.parametrize('name, args, kwargs, message', [
    ('ring_rounds', (['a', 'a'],), {}, '^ring_rounds: duplicate host names: a$'),
    ('allreduce_threshold', ('derived',), {'derived_fraction': 0.4, 'node_rates_gbps': {'a': None}},
     '^allreduce_threshold: derived threshold: no Active fabric port rate for a;'),
    ('allreduce_verdict', (BENCH, {'mode': 'explicit', 'min_busbw_gbs': 1.0}, 2 * MIB),
     {}, '^allreduce_verdict: the sweep stops at 1048576 bytes, below validate_threshold_min_bytes=2097152'),
    ('isolation_verdict', ('x', {}, 0), {}, '^isolation_verdict: isolation pairs must be a list'),
    ('preflight_problems', ({}, {'device': 'tpu'}), {}, '^preflight_problems: preflight: expected device must be'),
])
def test_errors_become_filter_errors(name, args, kwargs, message):
    with pytest.raises(AnsibleFilterError, match=message):
        getattr(validate, name)(*args, **kwargs)
