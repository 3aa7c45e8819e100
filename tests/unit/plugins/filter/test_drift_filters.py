# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""drift filters: registered names, arguments passed through, bad input as AnsibleFilterError."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.hpcfabric.cluster.plugins.filter.drift import FilterModule


def test_filters_are_registered():
    filters = FilterModule().filters()
    assert sorted(filters) == ['drift_fact_versions', 'version_drift']
    assert all(filters[name].__name__ == name for name in filters)


def test_the_role_s_path_from_module_result_to_messages():
    filters = FilterModule().filters()
    mpi = {'implementation': 'Open MPI', 'version': '4.1.4', 'ucx': {'version': '1.13.1'}}
    hosts = dict((host, filters['drift_fact_versions']({'package:rdma-core': '44.0-2'},
                                                       {'kernel': '6.1.0-28-amd64', 'mpi': mpi}))
                 for host in ('node01', 'node02', 'node03'))
    hosts['node02']['package:rdma-core'] = '44.0-1'
    report = filters['version_drift'](hosts, {})
    assert report['messages'] == ['node02: package:rdma-core 44.0-1, expected 44.0-2 (drift from most hosts)']


def test_bad_input_names_the_filter():
    with pytest.raises(AnsibleFilterError, match='^version_drift: the versions must be a mapping'):
        FilterModule().filters()['version_drift'](['node01'])
