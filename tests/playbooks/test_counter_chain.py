# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The port counter chain as the validate role runs it: the port_counters module before and after a job, the reads kept
per job and phase, then the port_counter_report filter over every node's reads - on a recorded counter directory whose
narrow fields sit at their maximum.

The role's own steps are taken from its files (the "Keep the read for the report" task of tasks/counters.yml,
``__validate_node_counter_reads`` of vars/main.yml, the "Take the counter deltas over each job and judge them" task of
tasks/report.yml, the rules of defaults/main.yml), so the test follows the role when they change. The host is this
machine (local connection); the module reads a sysfs tree written by the test: the InfiniBand device ``mlx5_10`` of
tests/unit/fixtures/sysfs/ib_mixed (its IPoIB netdev ``ibp204s0``) with the recorded counters of
tests/unit/fixtures/ib_counters/h100-cx7-mlx5_1-counters.txt as its port's ``counters/``.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import yaml

from checkout import ANSIBLE_PLAYBOOK, ROOT

ROLE = ROOT / 'roles' / 'validate'
FIXTURES = ROOT / 'tests' / 'unit' / 'fixtures'


def role_task(tasks_file, name):
    return next(task for task in yaml.safe_load((ROLE / 'tasks' / tasks_file).read_text()) if task.get('name') == name)


def sysfs_tree(root):
    """ib_mixed's sysfs tree with the recorded counters as mlx5_10's port 1 ``counters/``."""
    shutil.copytree(FIXTURES / 'sysfs' / 'ib_mixed', root)
    counters = root / 'class' / 'infiniband' / 'mlx5_10' / 'ports' / '1' / 'counters'
    counters.mkdir()
    text = (FIXTURES / 'ib_counters' / 'h100-cx7-mlx5_1-counters.txt').read_text()
    for block in text.split('=== ./')[1:]:
        name, dummy, value = block.partition(' ===\n')
        (counters / name).write_text(value.strip() + '\n')
    return root


def test_counters_stuck_at_their_maximum_are_reported_saturated_by_the_role_chain(tmp_path):
    out = tmp_path / 'out'
    out.mkdir()
    defaults = yaml.safe_load((ROLE / 'defaults' / 'main.yml').read_text())
    read = {'name': 'Read the fabric ports\' counters, {{ __validate_counters_phase }}',
            'hpcfabric.cluster.port_counters': {'interfaces': ['ibp204s0'], 'sysfs_root': str(sysfs_tree(tmp_path / 'sys')),
                                                'ethtool': False},
            'register': '__validate_counters_read'}
    keep = role_task('counters.yml', 'Keep the read for the report')
    tasks = []
    for phase in ('before', 'after'):
        tasks += [dict(read, vars={'__validate_counters_phase': phase}),
                  dict(keep, vars={'__validate_counters_phase': phase})]
    tasks += [role_task('report.yml', 'Take the counter deltas over each job and judge them'),
              {'name': 'Write the report\'s counters',
               'ansible.builtin.copy': {'dest': '{{ out }}/counters.json', 'content': '{{ __validate_counters | to_json }}',
                                        'mode': '0644'}}]
    play = [{'name': 'The port counter chain of the validate role', 'hosts': 'all', 'gather_facts': False,
             'vars': {'__validate_node_counter_reads': yaml.safe_load(
                 (ROLE / 'vars' / 'main.yml').read_text())['__validate_node_counter_reads'],
                 '__validate_counters_job': 'allreduce'},
             'tasks': tasks}]
    (tmp_path / 'play.yml').write_text(yaml.safe_dump(play, sort_keys=False))
    (tmp_path / 'hosts.yml').write_text(yaml.safe_dump({'all': {'hosts': {'gpu07': {
        'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable}}}}))
    extra = {'out': str(out), 'validate_counters': True, 'validate_counters_fatal': defaults['validate_counters_fatal'],
             'validate_counters_warn_rates': defaults['validate_counters_warn_rates']}
    env = dict(os.environ, ANSIBLE_NOCOLOR='1', ANSIBLE_FORCE_COLOR='0')
    proc = subprocess.run([ANSIBLE_PLAYBOOK, '-i', str(tmp_path / 'hosts.yml'), str(tmp_path / 'play.yml'),
                           '-e', json.dumps(extra)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
                          check=False)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    counters = json.loads((out / 'counters.json').read_text())

    port = counters['jobs'][0]['hosts']['gpu07']['ports']['ibp204s0']
    # two reads of counters that cannot move: no delta at all, which alone would read as a quiet, healthy port
    assert (port['rdma_port'], port['deltas'], port['went_back']) == ('mlx5_10:1', {}, [])
    assert port['saturated'] == ['counters/excessive_buffer_overrun_errors', 'counters/link_downed',
                                 'counters/port_xmit_discards', 'counters/port_xmit_wait']
    assert [(f['severity'], f['counter'], f['value']) for f in counters['findings']] == [
        ('saturated', 'counters/excessive_buffer_overrun_errors', 15), ('saturated', 'counters/link_downed', 255),
        ('saturated', 'counters/port_xmit_discards', 65535), ('saturated', 'counters/port_xmit_wait', 4294967295)]
    assert all('perfquery -C mlx5_10 -P 1 -R' in f['action'] for f in counters['findings'])
    assert counters['summary'].startswith('no fatal counter that can count rose on 1 hosts; 4 saturated')
