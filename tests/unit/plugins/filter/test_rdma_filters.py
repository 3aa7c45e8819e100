# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""rdma_core_packages and rdma_inactive_ports filters: registered, passing through, bad input as filter errors."""
from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.hpcfabric.cluster.plugins.filter.rdma_stack import FilterModule

FILTERS = FilterModule().filters()


def test_filters_are_registered_under_their_doc_names():
    assert sorted(FILTERS) == ['rdma_core_packages', 'rdma_doca_repository', 'rdma_inactive_ports']
    assert all(FILTERS[name].__name__ == name for name in FILTERS)


def test_filters_pass_arguments_through():
    installed = {'rdma-core': [{'version': '2410mlnx54-1.2410068'}]}
    assert FILTERS['rdma_core_packages'](installed, ['rdma-core'], '^[0-9]{4}') == [
        {'name': 'rdma-core', 'version': '2410mlnx54-1.2410068', 'label': 'rdma-core 2410mlnx54-1.2410068',
         'doca': True}]
    ib = {'devices': {'mlx5_0': {'ports': {'1': {'state': 'Init', 'physical_state': 'LinkUp'}}}}}
    assert FILTERS['rdma_inactive_ports'](ib) == ['mlx5_0 port 1 is Init (physical state LinkUp)']


@pytest.mark.parametrize('name, args, message', [
    ('rdma_core_packages', ({}, ['rdma-core'], '('), "rdma_core_packages: rdma_doca_version_pattern '\\(' is not"),
    ('rdma_core_packages', (None, ['rdma-core'], '^1'), 'rdma_core_packages: installed packages must be a mapping'),
    ('rdma_inactive_ports', ({},), 'rdma_inactive_ports: expected ansible_facts.ib'),
])
def test_bad_input_is_a_filter_error(name, args, message):
    with pytest.raises(AnsibleFilterError, match=message):
        FILTERS[name](*args)
