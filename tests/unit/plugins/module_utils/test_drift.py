# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Version drift: majority, golden manifest, ties, absent values, the messages, 1024 hosts."""

from __future__ import annotations

import time

import pytest

from ansible_collections.hpcfabric.cluster.plugins.module_utils.drift import (
    drift_findings,
    drift_report,
    golden_problems,
    version_key,
    with_fact_versions,
)


def cluster(count, **components):
    return dict(('node%02d' % index, dict(components)) for index in range(1, count + 1))


def test_same_versions_everywhere_is_no_drift():
    hosts = cluster(4, kernel='6.1.0-28-amd64', **{'package:rdma-core': '44.0-2'})
    report = drift_report(hosts)
    assert report['passed'] is True and report['findings'] == [] and report['messages'] == []
    assert report['summary'] == 'no drift: 4 hosts agree on 2 components'


def test_the_odd_node_is_named_with_both_versions():
    hosts = cluster(4, **{'package:rdma-core': '44.0-2'})
    hosts['node03']['package:rdma-core'] = '44.0-1'
    report = drift_report(hosts)
    assert report['findings'] == [{'host': 'node03', 'component': 'package:rdma-core', 'seen': '44.0-1',
                                   'expected': '44.0-2', 'basis': 'majority'}]
    assert report['messages'] == ['node03: package:rdma-core 44.0-1, expected 44.0-2 (drift from most hosts)']
    assert report['passed'] is False
    assert report['summary'] == '1 drift findings on 1 of 4 hosts (package:rdma-core)'


def test_a_node_that_cannot_read_a_component_the_others_have_is_a_finding():
    hosts = cluster(3, nvidia_driver='565.57.01')
    hosts['node02']['nvidia_driver'] = None
    del hosts['node03']['nvidia_driver']
    hosts['node04'] = {'nvidia_driver': '565.57.01'}
    hosts['node05'] = {'nvidia_driver': '565.57.01'}
    findings = drift_findings(hosts)
    assert [(item['host'], item['seen'], item['expected']) for item in findings] == [
        ('node02', None, '565.57.01'), ('node03', None, '565.57.01')]


def test_one_node_with_an_extra_package_is_the_odd_one():
    hosts = cluster(5, **{'package:doca-ofed': None})
    hosts['node04']['package:doca-ofed'] = '2.9.1-1'
    findings = drift_findings(hosts)
    assert findings == [{'host': 'node04', 'component': 'package:doca-ofed', 'seen': '2.9.1-1', 'expected': None,
                         'basis': 'majority'}]
    assert drift_report(hosts)['messages'] == ['node04: package:doca-ofed 2.9.1-1, expected (none) (drift from most hosts)']


def test_components_absent_everywhere_are_skipped():
    hosts = cluster(3, ofed=None, cuda='12.4.1', **{'gpu_vbios:0': None})
    report = drift_report(hosts)
    assert report['passed'] and report['components'] == 1


def test_a_tie_expects_the_newest_and_says_it_was_a_tie():
    hosts = {'node01': {'nvidia_driver': '535.104.05'}, 'node02': {'nvidia_driver': '535.54.03'}}
    findings = drift_findings(hosts)
    # numbers compare as numbers: 104 > 54, which a string sort gets wrong
    assert findings == [{'host': 'node02', 'component': 'nvidia_driver', 'seen': '535.54.03',
                         'expected': '535.104.05', 'basis': 'tie'}]
    assert drift_report(hosts)['messages'] == [
        'node02: nvidia_driver 535.54.03, expected 535.104.05 (drift, no majority: the newest of the tied values)']


def test_a_tie_between_absent_and_a_version_expects_the_version():
    hosts = {'a': {'ofed': 'MLNX_OFED_LINUX-23.07-0.5.1.2'}, 'b': {'ofed': None}}
    assert [(item['host'], item['expected']) for item in drift_findings(hosts)] == [
        ('b', 'MLNX_OFED_LINUX-23.07-0.5.1.2')]


def test_a_tie_is_decided_the_same_whatever_the_order():
    one = {'a': {'x': '2.0'}, 'b': {'x': '10.0'}, 'c': {'x': '2.0'}, 'd': {'x': '10.0'}}
    two = dict(reversed(list(one.items())))
    assert drift_findings(one) == drift_findings(two)
    assert set(item['host'] for item in drift_findings(one)) == {'a', 'c'}


def test_golden_wins_over_the_majority_and_other_components_still_agree():
    hosts = cluster(3, cuda='12.4.1', kernel='6.1.0-28-amd64')
    hosts['node02']['kernel'] = '6.1.0-27-amd64'
    report = drift_report(hosts, {'cuda': '12.6.2'})
    assert [(item['host'], item['component'], item['seen'], item['expected'], item['basis'])
            for item in report['findings']] == [
        ('node01', 'cuda', '12.4.1', '12.6.2', 'golden'), ('node02', 'cuda', '12.4.1', '12.6.2', 'golden'),
        ('node03', 'cuda', '12.4.1', '12.6.2', 'golden'),
        ('node02', 'kernel', '6.1.0-27-amd64', '6.1.0-28-amd64', 'majority')]
    assert report['messages'][0] == 'node01: cuda 12.4.1, expected 12.6.2 (drift from validate_golden)'


def test_golden_names_a_component_no_host_has():
    hosts = cluster(2, cuda='12.4.1')
    findings = drift_findings(hosts, {'package:doca-ofed': '2.9.1-1'})
    assert [(item['host'], item['seen']) for item in findings] == [('node01', None), ('node02', None)]


def test_golden_null_means_absent():
    hosts = cluster(2, **{'package:mlnx-ofed-kernel-utils': None})
    assert drift_findings(hosts, {'package:mlnx-ofed-kernel-utils': None}) == []
    hosts['node02']['package:mlnx-ofed-kernel-utils'] = '23.07'
    assert drift_findings(hosts, {'package:mlnx-ofed-kernel-utils': None})[0]['host'] == 'node02'


def test_golden_summary_says_so():
    assert drift_report(cluster(2, cuda='12.4.1'), {'cuda': '12.4.1'})['summary'] == (
        'no drift: 2 hosts agree on 1 components and validate_golden')


@pytest.mark.parametrize('golden, problem', [
    ({'cuda': 12.4}, 'validate_golden cuda: 12.4 is a number, not a version string: quote it'),
    ({'nvidia_driver': 565}, 'validate_golden nvidia_driver: 565 is a number, not a version string: quote it'),
    ({'ofed': True}, 'validate_golden ofed: True is a boolean, not a version string: quote it'),
    ({'cuda': ['12.4']}, "validate_golden cuda: ['12.4'] is a list, not a version string: quote it"),
    (['cuda'], 'validate_golden must be a mapping of component to version, got list'),
])
def test_golden_problems(golden, problem):
    assert golden_problems(golden) == [problem]
    with pytest.raises(ValueError, match='validate_golden'):
        drift_findings({'a': {}}, golden)


def test_golden_without_problems():
    assert golden_problems({'cuda': '12.4', 'package:doca-ofed': None}) == []
    assert golden_problems(None) == []


def test_rejects_what_is_not_a_mapping():
    with pytest.raises(TypeError, match='mapping of host'):
        drift_findings(['node01'])
    with pytest.raises(TypeError, match='versions of node01'):
        drift_findings({'node01': ['kernel']})


def test_a_host_without_any_versions_is_absent_everywhere():
    hosts = cluster(3, kernel='6.1.0-28-amd64')
    hosts['node04'] = None
    assert [(item['host'], item['seen']) for item in drift_findings(hosts)] == [('node04', None)]


def test_version_key_orders_numbers_as_numbers_and_absent_first():
    values = ['535.104.05', None, '535.54.03', '1:2.0-1', '2407mlnx52-1.2407036', '44.0-2']
    assert sorted(values, key=version_key) == [None, '1:2.0-1', '44.0-2', '535.54.03', '535.104.05',
                                               '2407mlnx52-1.2407036']
    # text and numbers in one position still compare (no TypeError)
    assert sorted(['a1', '1a'], key=version_key) == ['a1', '1a']


def test_fact_versions_add_kernel_open_mpi_and_ucx():
    facts = {'kernel': '6.1.0-28-amd64',
             'mpi': {'implementation': 'Open MPI', 'version': '4.1.4', 'ucx': {'version': '1.13.1'}}}
    assert with_fact_versions({'cuda': None}, facts) == {'cuda': None, 'kernel': '6.1.0-28-amd64',
                                                         'open_mpi': '4.1.4', 'ucx': '1.13.1'}
    assert with_fact_versions(None, {'kernel': '6.1.0-28-amd64', 'mpi': None}) == {
        'kernel': '6.1.0-28-amd64', 'open_mpi': None, 'ucx': None}


def test_1024_hosts_with_40_components_is_fast():
    components = dict(('package:p%d' % index, '1.%d' % index) for index in range(24))
    components.update(('nic_firmware:mlx5_%d' % index, '28.42.1000') for index in range(8))
    components.update(('gpu_vbios:%d' % index, '96.00.74.00.10') for index in range(8))
    hosts = cluster(1024, **components)
    hosts['node512']['nic_firmware:mlx5_3'] = '28.39.1002'
    start = time.perf_counter()
    report = drift_report(hosts)
    assert time.perf_counter() - start < 2.0
    assert report['messages'] == ['node512: nic_firmware:mlx5_3 28.39.1002, expected 28.42.1000 (drift from most hosts)']
