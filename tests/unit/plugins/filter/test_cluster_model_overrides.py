# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The model's inputs set as play or role variables are named; values left unset where the role runs are not."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.hpcfabric.cluster.plugins.filter.cluster_model_overrides import FilterModule

cluster_model_overrides = FilterModule().filters()['cluster_model_overrides']


def test_unset_and_equal_values_pass_and_a_differing_one_is_named():
    names = ['mpi_ucx_tls', 'mpi_cuda', 'roce_qos_policy']
    host = {'mpi_ucx_tls': ['tcp']}
    assert cluster_model_overrides([['tcp'], '__unset__', {}], names, host) == []
    assert cluster_model_overrides([['rc'], '__unset__', '__unset__'], names, host) == ['mpi_ucx_tls']


def test_lists_of_other_lengths_are_refused():
    with pytest.raises(AnsibleFilterError, match='same length'):
        cluster_model_overrides([1], ['a', 'b'], {})
