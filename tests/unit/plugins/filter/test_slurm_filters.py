# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The slurm filters as playbooks call them (the logic: tests/unit/plugins/module_utils/test_slurm_conf.py)."""
from __future__ import annotations

from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.hpcfabric.cluster.plugins.filter.slurm import FilterModule

SLURM = FilterModule().filters()
LAB = {'processor_vcpus': 2, 'processor_count': 1, 'processor_cores': 2, 'processor_threads_per_core': 1,
       'memtotal_mb': 24030, 'mounts': [{'mount': '/sys/fs/cgroup', 'fstype': 'tmpfs'}]}
HOSTS = ['node01', 'node02', 'node03', 'node04']
SETTINGS = {'controllers': ['node01'], 'compute': HOSTS, 'inventory': HOSTS, 'version': '22.05', 'cgroups': 'auto',
            'cluster_name': 'lab', 'partitions': [{'name': 'gpu', 'default': True}], 'memory_reserved_mb': 1024}


def test_the_slurm_filters_are_there_each_with_its_documentation():
    names = {'hostlist_compress', 'hostlist_expand', 'slurm_plan', 'slurm_files', 'slurm_inventory_problems',
             'slurm_restart_needed', 'slurm_munge_key_action', 'slurm_readback_problems', 'slurm_nodes',
             'slurm_validation_start', 'slurm_validation_end', 'slurm_hosts_block', 'slurm_install_plan',
             'slurm_version_problems'}
    assert set(SLURM) == names
    here = Path(__file__).resolve().parents[4] / 'plugins' / 'filter'
    assert sorted(name for name in names if not (here / (name + '.yml')).exists()) == []


def test_the_lab_plan_renders_configless_files_without_cgroups():
    hostvars = dict((host, {'ansible_facts': LAB, 'ansible_host': '10.77.0.%d' % (10 + i)}) for i, host in enumerate(HOSTS))
    model = {'hosts': HOSTS, 'nodes': dict((host, {'gpu_count': None}) for host in HOSTS)}
    plan = SLURM['slurm_plan'](hostvars, model, SETTINGS)
    files = SLURM['slurm_files'](plan, {'SlurmctldDebug': 'info'})
    conf = files['slurm.conf'].splitlines()
    assert 'NodeName=node[01-04] CPUs=2 Sockets=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=22528 State=UNKNOWN' in conf
    assert 'TaskPlugin=task/none' in conf and 'SlurmctldDebug=info' in conf
    assert files['cgroup.conf'] == files['topology.conf'] == ''
    assert files['gres.conf'].splitlines()[1:] == []
    assert SLURM['slurm_hosts_block'](hostvars, ['node01', 'node02']) == '10.77.0.10 node01\n10.77.0.11 node02'
    assert SLURM['slurm_restart_needed'](files['slurm.conf'], files['slurm.conf']) == {'restart': False, 'reasons': []}


def test_a_plan_with_problems_is_refused_by_the_filters_name():
    with pytest.raises(AnsibleFilterError, match='^slurm_files: the Slurm plan has problems'):
        SLURM['slurm_files']({'problems': ['x']})
    with pytest.raises(AnsibleFilterError, match='^hostlist_expand: .*backwards'):
        SLURM['hostlist_expand']('node[3-1]')


def test_inventory_problems_and_the_validations_drains_through_the_filters():
    assert SLURM['slurm_inventory_problems'](dict(SETTINGS, partitions=[{'name': 'gpu', 'nodes': 'node0[5-6]'}])) == [
        'slurm_partitions[0] (gpu): names node[05-06], not in slurm_compute_group']
    text = '\n'.join([
        'NodeName=node01 CPUTot=2 State=IDLE RealMemory=22528',
        'NodeName=node02 CPUTot=2 State=IDLE+DRAIN RealMemory=22528 Reason=hpcfabric: slow [root@2026-11-27T21:00:00]',
        'NodeName=node03 CPUTot=2 State=IDLE+DRAIN RealMemory=22528 Reason=bad DIMM [alice@2026-11-20T08:00:00]'])
    assert SLURM['slurm_nodes'](text)['node03']['Reason'] == 'bad DIMM [alice@2026-11-20T08:00:00]'
    start = SLURM['slurm_validation_start'](text, ['node01', 'node02', 'node03'], {'node01': 8, 'node02': 8})
    assert start == {'test': ['node01', 'node02'], 'held': [{'node': 'node02', 'reason': 'hpcfabric: slow'}],
                     'skip': [{'node': 'node03', 'reason': 'drained: bad DIMM [alice@2026-11-20T08:00:00]'}],
                     'gpus_per_node': 8, 'problems': []}
    verdicts = [{'host': 'node01', 'verdict': 'FAIL', 'reasons': [
        {'source': 'isolation', 'verdict': 'FAIL', 'reason': 'node: fails with every partner on every rail',
         'action': 'drain node01'}]}, {'host': 'node02', 'verdict': 'PASS', 'reasons': []}]
    drain = {'node': 'node01', 'reason': 'hpcfabric: isolation: node: fails with every partner on every rail'}
    assert SLURM['slurm_validation_end'](text, start['held'], verdicts) == {
        'drain': [drain], 'resume': ['node02'], 'kept': [], 'apply': [drain]}


def test_the_validations_drains_name_the_filter_on_bad_input():
    with pytest.raises(AnsibleFilterError, match='^slurm_validation_start: '):
        SLURM['slurm_validation_start']('NodeName=node01 State=IDLE', ['node01'], {'node01': 'eight'})


def test_the_install_filters_as_the_role_calls_them(fixture_text):
    settings = {'parts': ['compute'], 'distro_packages': {'compute': ['slurmd', 'slurm-client']},
                'support_packages': {'compute': ['munge', 'libpmix-dev']},
                'site_packages': {'compute': ['slurm-smd-slurmd', 'slurm-smd-client']},
                'repo_url': 'http://10.77.12.1:8080/', 'repo_suite': './', 'repo_components': []}
    install = SLURM['slurm_install_plan'](settings)
    assert install['packages'] == ['slurm-smd-slurmd', 'slurm-smd-client', 'munge', 'libpmix-dev']
    assert install['repository']['apt_pin']['origin'] == '10.77.12.1'
    results = [{'item': 'slurmd', 'rc': 0, 'stdout': fixture_text('slurm', 'slurmd-V-22.05.8.txt')}]
    assert SLURM['slurm_version_problems'](results, '22.05', None, 'node02') == []
    with pytest.raises(AnsibleFilterError, match='slurm_install_plan: components: must be empty for suite ./'):
        SLURM['slurm_install_plan'](dict(settings, repo_components=['main']))
