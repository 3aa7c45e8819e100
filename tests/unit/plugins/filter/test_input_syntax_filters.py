# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The input syntax filters: registered, passing through, bad input as filter errors."""
from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.hpcfabric.cluster.plugins.filter.input_syntax import FilterModule

FILTERS = FilterModule().filters()


def test_filters_are_registered_under_their_doc_names():
    assert sorted(FILTERS) == ['authorized_key_options', 'tcl_quote']
    assert all(FILTERS[name].__name__ == name for name in FILTERS)


def test_filters_pass_arguments_through():
    assert FILTERS['tcl_quote']('a$b') == '"a\\$b"'
    assert FILTERS['authorized_key_options'](['10.0.0.0/8', 'login01']) == 'from="10.0.0.0/8,login01"'


def test_bad_input_is_a_filter_error_named_after_the_filter():
    with pytest.raises(AnsibleFilterError, match='^tcl_quote: '):
        FILTERS['tcl_quote']('a\nb')
