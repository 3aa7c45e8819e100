# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The storage filters as the role calls them: command text and registered loop results in, problem lines out."""
from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.hpcfabric.cluster.plugins.filter.storage_mount_plan import FilterModule

FILTERS = FilterModule().filters()
NFS = {'src': 'nfs01.example.com:/export/datasets', 'path': '/data/datasets', 'fstype': 'nfs', 'state': 'mounted',
       'opts': 'nfsvers=4.2,_netdev,nofail'}


def test_lnet_problems_reads_lnetctl_text_and_ping_results(fixture_text):
    pings = [{'item': '172.25.81.1@o2ib', 'rc': 0, 'stdout': fixture_text('storage', 'lnetctl_ping_ok.txt'), 'stderr': ''},
             {'item': '172.25.81.9@o2ib', 'rc': 1, 'stdout': '',
              'stderr': fixture_text('storage', 'lnetctl_ping_failed.txt')},
             {'item': '172.25.81.8@o2ib', 'rc': 1, 'stdout': '', 'stderr': 'lnetctl: timed out: peer unreachable'}]
    assert FILTERS['lnet_problems'](['o2ib0(ibs1f1)'], [fixture_text('storage', 'lnetctl_net_show_o2ib.txt'), ''],
                                    pings) == [
        'lnetctl ping 172.25.81.9@o2ib failed (exit 1): failed to ping 172.25.81.9@o2ib: Input/output error',
        'lnetctl ping 172.25.81.8@o2ib failed (exit 1): lnetctl: timed out: peer unreachable']


def test_lnet_problems_takes_a_bare_message_as_the_reason(fixture_text):
    assert FILTERS['lnet_problems'](['o2ib0(ib0)'], ['', fixture_text('storage', 'lnetctl_net_show_not_loaded.txt')]) == [
        'lnetctl net show: opening /dev/lnet failed: No such device']
    assert FILTERS['lnet_problems'](['o2ib0(ib0)'], ['', '']) == ['lnetctl net show: no output']


def test_readback_problems_compares_live_mounts_only_when_given(fixture_text):
    # findmnt prints this on standard output, and nothing on standard error
    outputs = [fixture_text('storage', 'findmnt_verify_clean.txt'), '']
    assert FILTERS['storage_readback_problems']([NFS], outputs) == []
    assert FILTERS['storage_readback_problems']([NFS], outputs, {}) == ['/data/datasets is not mounted']


def test_findmnt_counts_on_standard_error_are_read(fixture_text):
    lines = fixture_text('storage', 'findmnt_verify_errors.txt').splitlines(keepends=True)
    # the recording put standard error's counts line first; here each stream on its own
    outputs = [''.join(lines[2:]), ''.join(lines[:2])]
    assert FILTERS['storage_readback_problems']([dict(NFS, state='present')], outputs) == [
        '/data/datasets: findmnt --verify: unreachable on boot required target: No such file or directory']


def test_outputs_must_be_a_list():
    with pytest.raises(AnsibleFilterError, match='findmnt_verify must be a list of texts'):
        FILTERS['storage_readback_problems']([NFS], 'Success, no errors or warnings detected')


def test_a_bad_spec_is_a_filter_error():
    with pytest.raises(AnsibleFilterError, match="^lnet_config: 'ib0' is not an LNet network spec"):
        FILTERS['lnet_config'](['ib0'])
