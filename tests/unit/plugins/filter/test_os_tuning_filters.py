# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""sysctl_drift and systemd_limit_drift filters: registered, passing through, errors as filter errors."""
from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.hpcfabric.cluster.plugins.filter.os_tuning import FilterModule

FILTERS = FilterModule().filters()


def test_filters_are_registered_under_their_doc_names():
    assert sorted(FILTERS) == ['sysctl_drift', 'systemd_limit_drift']
    assert all(FILTERS[name].__name__ == name for name in FILTERS)


def test_filters_pass_arguments_through():
    assert FILTERS['sysctl_drift']({'vm.swappiness': 10}, 'vm.swappiness = 60') == ['vm.swappiness is 60, expected 10']
    assert FILTERS['systemd_limit_drift']('unlimited', 8, 'DefaultLimitMEMLOCK=infinity\nDefaultLimitNOFILE=8') == []


def test_bad_input_is_a_filter_error_named_after_the_filter():
    with pytest.raises(AnsibleFilterError, match='^sysctl_drift: wanted must be a mapping'):
        FILTERS['sysctl_drift']([], '')
