# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""gpu_health_findings filter: registered, and bad input is a filter error naming it."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.hpcfabric.cluster.plugins.filter.gpu_health import FilterModule


def test_filter_judges_the_module_results():
    gpu_health_findings = FilterModule().filters()['gpu_health_findings']
    report = gpu_health_findings({'node01': {'health': {
        'xids': [{'pci': '0000:3b:00.0', 'xid': 64, 'pid': None, 'name': None, 'text': 'x', 'line': 1}]}}})
    assert report['findings'][0]['action'].startswith('RMA')
    with pytest.raises(AnsibleFilterError, match='^gpu_health_findings: expected'):
        gpu_health_findings(['node01'])
