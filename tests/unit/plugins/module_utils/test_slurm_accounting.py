# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Slurm accounting: slurm.conf's accounting lines, slurmdbd.conf, the database's SQL, the restart decision, the
password's rules (module_utils/slurm_conf.py)."""
from __future__ import annotations

import json

import pytest

from ansible_collections.hpcfabric.cluster.plugins.module_utils.slurm_conf import (
    accounting_db_state, accounting_name_problem, accounting_sql, cluster_plan, node_hardware, password_problem,
    render_slurm_conf, render_slurmdbd_conf, restart_needed)

FACTS = {'processor_vcpus': 224, 'processor_count': 2, 'processor_cores': 56, 'processor_threads_per_core': 2,
         'memtotal_mb': 2063731}
LAB = {'processor_vcpus': 2, 'processor_count': 1, 'processor_cores': 2, 'processor_threads_per_core': 1,
       'memtotal_mb': 24030}
PASSWORD = 'Lab-only-0123456789'


def plan_of(count=4, gpus=8, facts=None, **extra):
    hosts = ['node%04d' % i for i in range(1, count + 1)]
    hardware = dict((host, node_hardware(facts or FACTS, memory_reserved_mb=8192)) for host in hosts)
    model = {'hosts': hosts, 'nodes': dict((host, {'gpu_count': gpus}) for host in hosts)}
    settings = {'controllers': [hosts[0]], 'compute': hosts, 'inventory': hosts, 'version': '22.05', 'cgroups': True,
                'cluster_name': 'b300', 'partitions': [{'name': 'gpu', 'default': True}]}
    settings.update(extra)
    return cluster_plan(model, hardware, settings)


def _accounting_lines(text):
    return [line for line in text.splitlines() if line.startswith(('Accounting', 'JobAcct'))]


# --- slurm.conf ---------------------------------------------------------------------------------------------------

def test_without_accounting_slurm_conf_is_as_before():
    # accounting off, or the setting absent (a plan of an older run): the same text, no accounting line
    assert plan_of(accounting=False)['accounting'] is None
    assert render_slurm_conf(plan_of(accounting=False)) == render_slurm_conf(plan_of())
    assert _accounting_lines(render_slurm_conf(plan_of())) == []


def test_accounting_points_slurmctld_at_slurmdbd_on_the_first_controller():
    plan = plan_of(16, accounting=True, controllers=['node0002', 'node0001'])
    lines = render_slurm_conf(plan).splitlines()
    assert _accounting_lines('\n'.join(lines)) == [
        'AccountingStorageType=accounting_storage/slurmdbd', 'AccountingStorageHost=node0002',
        'JobAcctGatherType=jobacct_gather/cgroup', 'AccountingStorageTRES=gres/gpu']
    # after the daemons' own settings, before the nodes
    assert lines.index('GresTypes=gpu') < lines.index('AccountingStorageType=accounting_storage/slurmdbd')
    first_node = [index for index, line in enumerate(lines) if line.startswith('NodeName=')][0]
    assert lines.index('AccountingStorageTRES=gres/gpu') < first_node


@pytest.mark.parametrize('cgroups, gather', [(True, 'jobacct_gather/cgroup'), (False, 'jobacct_gather/linux')])
def test_job_usage_is_gathered_by_the_plugin_the_cgroups_allow(cgroups, gather):
    text = render_slurm_conf(plan_of(accounting=True, cgroups=cgroups))
    assert 'JobAcctGatherType=%s' % gather in text.splitlines()


def test_the_lab_without_gpus_records_no_gpu_tres():
    text = render_slurm_conf(plan_of(3, gpus=None, facts=LAB, accounting=True, cgroups=False))
    assert _accounting_lines(text) == ['AccountingStorageType=accounting_storage/slurmdbd',
                                       'AccountingStorageHost=node0001', 'JobAcctGatherType=jobacct_gather/linux']


def test_the_sites_own_tres_replace_the_gpu_line():
    text = render_slurm_conf(plan_of(accounting=True), {'AccountingStorageTRES': 'gres/gpu,gres/gpu:b300'})
    assert [line for line in text.splitlines() if line.startswith('AccountingStorageTRES')] == [
        'AccountingStorageTRES=gres/gpu,gres/gpu:b300']


def test_the_plan_holds_the_accounting_database_but_never_a_password():
    plan = plan_of(accounting=True, accounting_db_name='acct', accounting_db_user='slurmdbd',
                   accounting_db_password=PASSWORD)
    assert plan['accounting'] == {'host': 'node0001', 'db_name': 'acct', 'db_user': 'slurmdbd',
                                  'jobacct_gather': 'jobacct_gather/cgroup', 'pid_file': '/run/slurmdbd.pid'}
    assert PASSWORD not in json.dumps(plan)


# --- restarts -----------------------------------------------------------------------------------------------------

def test_turning_accounting_on_or_off_restarts_slurmctld():
    without = render_slurm_conf(plan_of(16))
    with_accounting = render_slurm_conf(plan_of(16, accounting=True))
    reasons = ['AccountingStorageHost changed', 'AccountingStorageType changed', 'JobAcctGatherType changed']
    assert restart_needed(without, with_accounting) == (True, reasons)
    assert restart_needed(with_accounting, without) == (True, reasons)
    assert restart_needed(with_accounting, with_accounting) == (False, [])


def test_a_new_accounting_host_or_gather_plugin_restarts_slurmctld():
    old = render_slurm_conf(plan_of(16, accounting=True))
    moved = render_slurm_conf(plan_of(16, accounting=True, controllers=['node0002']))
    assert 'AccountingStorageHost changed' in restart_needed(old, moved)[1]
    assert restart_needed(old, render_slurm_conf(plan_of(16, accounting=True, cgroups=False))) == (
        True, ['JobAcctGatherType changed', 'ProctrackType changed', 'TaskPlugin changed'])


# --- slurmdbd.conf ------------------------------------------------------------------------------------------------

def test_slurmdbd_conf_runs_slurmdbd_beside_its_mariadb():
    assert render_slurmdbd_conf(plan_of(accounting=True), PASSWORD).splitlines()[1:] == [
        'AuthType=auth/munge', 'DbdHost=localhost', 'SlurmUser=slurm', 'LogFile=/var/log/slurm/slurmdbd.log',
        'PidFile=/run/slurmdbd.pid', 'StorageType=accounting_storage/mysql', 'StorageHost=localhost',
        'StorageLoc=slurm_acct_db', 'StorageUser=slurm', 'StoragePass=' + PASSWORD]


@pytest.mark.parametrize('version, pid_file', [('22.05', '/run/slurmdbd.pid'), ('23.11', '/run/slurmdbd/slurmdbd.pid'),
                                               ('24.11.5', '/run/slurmdbd/slurmdbd.pid')])
def test_slurmdbd_writes_its_pid_where_its_unit_lets_it(version, pid_file):
    assert 'PidFile=%s' % pid_file in render_slurmdbd_conf(plan_of(accounting=True, version=version), PASSWORD)


def test_slurmdbd_conf_needs_a_plan_with_accounting():
    with pytest.raises(ValueError, match='no accounting'):
        render_slurmdbd_conf(plan_of(), PASSWORD)
    with pytest.raises(ValueError, match='nothing is rendered'):
        render_slurmdbd_conf({'problems': ['x']}, PASSWORD)


@pytest.mark.parametrize('password, message', [
    (None, 'not set'), ('', 'not set'), (123456789012345, 'must be a string'),
    ('short-pw-1', 'shorter than 12'), ('has a blank 0123', 'a blank'), ('line\nbreak-0123456', 'a line break'),
    ('tab\there-0123456', 'a blank'), ('h\u00e9llo-0123456789', 'outside printable ASCII'),
    ('hash#0123456789', 'comment'), ('quote"0123456789', 'quoting'), ("single'0123456789", 'quoting'),
    ('back\\slash0123456', 'quoting'), ('back`quote0123456', 'quoting')])
def test_a_password_slurmdbd_conf_cannot_carry_is_refused_without_quoting_it(password, message):
    assert message in password_problem(password)
    with pytest.raises(ValueError) as raised:
        render_slurmdbd_conf(plan_of(accounting=True), password)
    assert str(raised.value).startswith('slurm_accounting_db_password: ')
    if isinstance(password, str) and password:
        assert password not in str(raised.value)


def test_a_password_of_printable_ascii_passes():
    for password in (PASSWORD, 'x' * 12, '!$%&()*+,-./:;<=>?@[]^_{|}~09'):
        assert password_problem(password) is None


@pytest.mark.parametrize('name, longest, good', [
    ('slurm_acct_db', 64, True), ('a' * 64, 64, True), ('a' * 65, 64, False), ('slurm-acct', 64, False),
    ('acct db', 64, False), ('', 64, False), ('slurm', 32, True), ('u' * 33, 32, False), (None, 32, False)])
def test_database_and_user_names(name, longest, good):
    assert (accounting_name_problem(name, longest) is None) is good


# --- the database -------------------------------------------------------------------------------------------------

def test_the_reads_compare_names_exactly():
    sql = accounting_sql(plan_of(accounting=True))
    assert sql.splitlines() == [
        "SELECT 'database', COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 'slurm_acct_db';",
        "SELECT 'user', COUNT(*) FROM mysql.user WHERE User = 'slurm' AND Host = 'localhost';",
        "SELECT 'grant', COUNT(*) FROM mysql.db WHERE Db = 'slurm_acct_db' AND User = 'slurm' AND Host = 'localhost';"]
    assert 'LIKE' not in sql and PASSWORD not in sql


def _found(database, user, grant):
    return 'database\t%d\nuser\t%d\ngrant\t%d\n' % (database, user, grant)


@pytest.mark.parametrize('found, login_ok, expected', [
    (_found(0, 0, 0), False, ["CREATE DATABASE IF NOT EXISTS `slurm_acct_db`;",
                              "CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY '%s';" % PASSWORD,
                              "GRANT ALL PRIVILEGES ON `slurm_acct_db`.* TO 'slurm'@'localhost';"]),
    (_found(1, 1, 1), True, []),
    (_found(1, 1, 1), False, ["ALTER USER 'slurm'@'localhost' IDENTIFIED BY '%s';" % PASSWORD]),
    # the database dropped by hand: its grant survives in mysql.db
    (_found(0, 1, 1), True, ["CREATE DATABASE IF NOT EXISTS `slurm_acct_db`;"]),
    (_found(1, 1, 0), True, ["GRANT ALL PRIVILEGES ON `slurm_acct_db`.* TO 'slurm'@'localhost';"]),
])
def test_the_writes_create_only_what_is_missing(found, login_ok, expected):
    sql = accounting_sql(plan_of(accounting=True), found, login_ok, PASSWORD)
    assert sql.splitlines() == expected
    assert sql == ('\n'.join(expected) + '\n' if expected else '')


def test_the_writes_need_a_usable_password_only_where_they_set_one():
    assert accounting_sql(plan_of(accounting=True), _found(1, 1, 0), True, None).startswith('GRANT')
    with pytest.raises(ValueError, match='^slurm_accounting_db_password: has a blank'):
        accounting_sql(plan_of(accounting=True), _found(1, 0, 0), False, "x' OR 1=1 -- 0123")


def test_the_reads_output_is_read_or_named():
    assert accounting_db_state('database\t1\nuser\t0\ngrant\t0\n') == {'database': True, 'user': False, 'grant': False}
    with pytest.raises(ValueError, match="cannot read 'ERROR 1045"):
        accounting_db_state('ERROR 1045 (28000): Access denied\n')
    with pytest.raises(ValueError, match='nothing about the user, grant'):
        accounting_db_state('database\t1\n')
    with pytest.raises(ValueError, match='no accounting'):
        accounting_sql(plan_of())
