# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""mpi_hostfile filter: Open MPI hostfile text from host names or {name, slots} dicts."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.hpcfabric.cluster.plugins.filter.mpi_hostfile import FilterModule

mpi_hostfile = FilterModule().filters()['mpi_hostfile']


def test_filter_is_registered_under_its_file_name():
    assert list(FilterModule().filters()) == ['mpi_hostfile']


def test_names_with_one_slot_count():
    assert mpi_hostfile(['node01', 'node02'], slots=8) == 'node01 slots=8\nnode02 slots=8\n'


def test_dicts_with_per_host_slots_keep_order():
    hosts = [{'name': 'gpu-b', 'slots': 8}, {'name': 'gpu-a', 'slots': 4}]
    assert mpi_hostfile(hosts) == 'gpu-b slots=8\ngpu-a slots=4\n'


def test_mixed_forms_and_default_for_dicts_without_slots():
    hosts = ['node01', {'name': 'node02'}, {'name': 'node03', 'slots': '2'}]
    assert mpi_hostfile(hosts, slots=8) == 'node01 slots=8\nnode02 slots=8\nnode03 slots=2\n'


def test_empty_list_gives_empty_text():
    assert mpi_hostfile([], slots=8) == ''


@pytest.mark.parametrize('hosts, slots, message', [
    (['node01', 'node02', 'node01'], 8, "duplicate host 'node01'"),
    ([{'name': 'node01', 'slots': 8}, {'name': 'node01', 'slots': 4}], None, "duplicate host 'node01'"),
    (['node01', ''], 8, 'empty or missing host name'),
    (['node01', '   '], 8, 'empty or missing host name'),
    ([{'slots': 8}], None, 'empty or missing host name'),
    (['node 01'], 8, "host 'node 01': a host name cannot contain whitespace"),
    ([{'name': 'node02', 'slots': 0}], None, "host 'node02': slots must be at least 1"),
    (['node03'], -1, "host 'node03': slots must be at least 1"),
    ([{'name': 'node04', 'slots': 2.5}], None, "host 'node04': slots must be a whole number"),
    ([{'name': 'node05', 'slots': 'many'}], None, "host 'node05': slots must be a whole number"),
    ([{'name': 'node06', 'slots': True}], None, "host 'node06': slots must be a whole number"),
    (['node07'], None, "host 'node07' has no slot count"),
])
def test_invalid_hosts_raise_naming_the_host(hosts, slots, message):
    with pytest.raises(AnsibleFilterError) as err:
        mpi_hostfile(hosts, slots=slots)
    assert message in str(err.value)


@pytest.mark.parametrize('hosts', ['node01', {'name': 'node01', 'slots': 8}, 8])
def test_input_must_be_a_list(hosts):
    with pytest.raises(AnsibleFilterError) as err:
        mpi_hostfile(hosts, slots=8)
    assert 'expects a list' in str(err.value)


# speed is measured by tests/perf/check_inventory_time.sh, never asserted here: these machines are shared and noisy
def test_twenty_thousand_hosts_give_one_line_each_in_order():
    text = mpi_hostfile([{'name': 'node%05d' % i, 'slots': 8} for i in range(20000)])
    assert text.count('\n') == 20000
    assert text.startswith('node00000 slots=8\nnode00001 slots=8\n')
    assert text.endswith('node19999 slots=8\n')


def test_name_key_picks_another_name_from_the_entries():
    entries = [{'host': 'node01', 'name': 'node01-rail0', 'slots': 8}, {'host': 'node02', 'name': 'node02-rail0', 'slots': 4}]
    assert mpi_hostfile(entries, name_key='host') == 'node01 slots=8\nnode02 slots=4\n'
    assert mpi_hostfile(entries) == 'node01-rail0 slots=8\nnode02-rail0 slots=4\n'
