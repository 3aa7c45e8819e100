# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The slurm role's accounting filters as its tasks call them (the logic: test_slurm_accounting.py)."""
from __future__ import annotations

from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.hpcfabric.cluster.plugins.filter.slurm import FilterModule as SlurmFilters
from ansible_collections.hpcfabric.cluster.plugins.filter.slurm_accounting import FilterModule

ACCOUNTING = FilterModule().filters()
SLURM = SlurmFilters().filters()
LAB = {'processor_vcpus': 2, 'processor_count': 1, 'processor_cores': 2, 'processor_threads_per_core': 1,
       'memtotal_mb': 24030, 'mounts': [{'mount': '/sys/fs/cgroup', 'fstype': 'tmpfs'}]}
HOSTS = ['node01', 'node02', 'node03']
# what roles/slurm/vars/main.yml passes with slurm_accounting on (never the password)
SETTINGS = {'controllers': ['node01'], 'compute': HOSTS, 'inventory': HOSTS, 'version': '22.05', 'cgroups': 'auto',
            'cluster_name': 'cluster', 'partitions': [{'name': 'gpu', 'default': True}], 'memory_reserved_mb': 1024,
            'accounting': True, 'accounting_db_name': 'slurm_acct_db', 'accounting_db_user': 'slurm'}
PASSWORD = 'molecule-slurm-lab-only'


def lab_plan():
    hostvars = dict((host, {'ansible_facts': LAB}) for host in HOSTS)
    model = {'hosts': HOSTS, 'nodes': dict((host, {'gpu_count': None}) for host in HOSTS)}
    return SLURM['slurm_plan'](hostvars, model, SETTINGS)


def test_the_accounting_filters_are_there_each_with_its_documentation():
    assert set(ACCOUNTING) == {'slurmdbd_conf', 'slurm_accounting_sql'}
    here = Path(__file__).resolve().parents[4] / 'plugins' / 'filter'
    assert sorted(name for name in ACCOUNTING if not (here / (name + '.yml')).exists()) == []


def test_the_lab_plan_with_accounting():
    plan = lab_plan()
    conf = SLURM['slurm_files'](plan)['slurm.conf'].splitlines()
    assert [line for line in conf if line.startswith(('Accounting', 'JobAcct'))] == [
        'AccountingStorageType=accounting_storage/slurmdbd', 'AccountingStorageHost=node01',
        'JobAcctGatherType=jobacct_gather/linux']
    dbd = ACCOUNTING['slurmdbd_conf'](plan, PASSWORD).splitlines()
    assert 'DbdHost=localhost' in dbd and 'StoragePass=' + PASSWORD in dbd and 'PidFile=/run/slurmdbd.pid' in dbd
    assert ACCOUNTING['slurm_accounting_sql'](plan).startswith("SELECT 'database'")
    assert ACCOUNTING['slurm_accounting_sql'](plan, 'database\t1\nuser\t1\ngrant\t1\n', True, PASSWORD) == ''


def test_a_bad_password_is_named_by_the_filter_and_never_shown():
    plan = lab_plan()
    for password in (None, 'pass word 0123456', 'hash#0123456789'):
        with pytest.raises(AnsibleFilterError, match='^slurmdbd_conf: slurm_accounting_db_password: ') as raised:
            ACCOUNTING['slurmdbd_conf'](plan, password)
        assert password is None or password not in str(raised.value)
    with pytest.raises(AnsibleFilterError, match='^slurm_accounting_sql: slurm_accounting_db_password: '):
        ACCOUNTING['slurm_accounting_sql'](plan, 'database\t1\nuser\t0\ngrant\t0\n', False, 'short')
    with pytest.raises(AnsibleFilterError, match='^slurm_accounting_sql: cannot read "ERROR 2002'):
        ACCOUNTING['slurm_accounting_sql'](plan, "ERROR 2002 (HY000): Can't connect", False, PASSWORD)
