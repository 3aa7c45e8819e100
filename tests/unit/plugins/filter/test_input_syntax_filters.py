# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The input syntax filters: registered, passing through, bad input as filter errors."""
from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.hpcfabric.cluster.plugins.filter.input_syntax import FilterModule

FILTERS = FilterModule().filters()


def test_filters_are_registered_under_their_doc_names():
    assert sorted(FILTERS) == ['authorized_key_options', 'input_problems', 'path_problems', 'tcl_quote', 'url_problems']
    assert all(FILTERS[name].__name__ == name for name in FILTERS)


def test_filters_pass_arguments_through():
    assert FILTERS['path_problems']({'k': '/tmp/k'}, private=True)[0].startswith("k '/tmp/k' is under a directory")
    assert FILTERS['path_problems']({'k': '/tmp'}, owned=False) == []
    assert FILTERS['input_problems']({'f': ['*']}, 'from_pattern')[0].startswith("f[0] '*' is not")
    assert FILTERS['input_problems']({'u': 'root'}, 'account', allow_root=True, allow_variable='a') == []
    urls = {'rdma_doca_repo_url': 'http://mirror/doca/', 'rdma_doca_repo_key_url': None}
    assert FILTERS['url_problems'](urls, False, 'rdma_allow_http') == [
        "rdma_doca_repo_url 'http://mirror/doca/' is plain HTTP: what it serves could be replaced on the way; use "
        "https://, or set rdma_allow_http: true for a mirror on a private network without TLS"]
    assert FILTERS['url_problems'](urls, allow_http=True, allow_variable='rdma_allow_http') == []
    assert FILTERS['url_problems'](urls, 'yes') == []


def test_bad_input_is_a_filter_error_named_after_the_filter():
    with pytest.raises(AnsibleFilterError, match='^path_problems: paths must be a mapping'):
        FILTERS['path_problems']('/tmp')
    with pytest.raises(AnsibleFilterError, match='^url_problems: urls must be a mapping'):
        FILTERS['url_problems']('https://mirror/x')
    with pytest.raises(AnsibleFilterError, match='^url_problems: .*maybe'):
        FILTERS['url_problems']({'x': 'http://mirror/x'}, 'maybe')


def test_an_unknown_rule_is_a_filter_error():
    with pytest.raises(AnsibleFilterError, match='^input_problems: rule must be one of account, '):
        FILTERS['input_problems']({'u': 'x'}, 'shell')
