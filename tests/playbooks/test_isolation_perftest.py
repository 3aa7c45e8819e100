# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The validate role's isolation rounds with ib_write_bw as the per-link test, run for real on this machine: two nodes
with a RoCE port per rail (mlx5_0 behind net1, mlx5_1 behind net2, GID index 7) whose ib_write_bw is the TEST stand-in
(tests/standins/ib_write_bw.py, TCP on loopback instead of RDMA). It shows what starts where and in which order -
each rail's server on the pair's second node, the client once the server listens, both rails at once - and how the
results come back to the isolation; the bandwidth is loopback TCP's, no RDMA link's.
"""
from __future__ import annotations
import json
import os
import subprocess
import sys
import time

import yaml

from checkout import ANSIBLE_PLAYBOOK, ROOT

STANDIN = ROOT / 'tests' / 'standins' / 'ib_write_bw.py'
SECONDS = 1
PLAY = """- name: Run the isolation's rounds as validate.yml does, from the first round's plan
  hosts: gpu_nodes
  gather_facts: false
  tasks:
    - name: Load the validate role's defaults and variables for the tasks below, as the role has them
      ansible.builtin.include_vars:
        file: "{{ item }}"
      loop: ["{{ role_dir }}/defaults/main.yml", "{{ role_dir }}/vars/main.yml"]

    - name: Map each node to its rails
      ansible.builtin.set_fact:
        __validate_rails: "{{ cluster_model_plan.nodes | hpcfabric.cluster.isolation_rails(__validate_nodes) }}"
        __validate_pair_results: []
      run_once: true

    - name: Plan the first round
      ansible.builtin.set_fact:
        __validate_isolation: >-
          {{ [] | hpcfabric.cluster.isolation_step(__validate_nodes, __validate_rails, __validate_pair_threshold,
                                                   __validate_threshold.min_size_bytes, **__validate_settings.isolation) }}
      run_once: true

    - name: Run the rounds
      ansible.builtin.include_role:
        name: hpcfabric.cluster.validate
        tasks_from: isolate_round.yml
      loop: "{{ range(__validate_isolation.max_rounds) | list }}"
      loop_control:
        loop_var: __validate_round_index

    - name: Hand the isolation back to the test
      ansible.builtin.copy:
        content: "{{ __validate_isolation | to_json }}"
        dest: "{{ out }}"
        mode: "0644"
      delegate_to: localhost
      run_once: true
"""


def node(number, devices):
    """The cluster model's node (the keys the isolation reads): rail N is netN+1 behind ``devices[N]`` port 1, its
    address on loopback (127.0.N+1.number), so that each client reaches its server on this machine."""
    names = ['net1', 'net2']
    return {'interfaces': [{'name': name, 'rail': rail, 'address': '127.0.%d.%d/24' % (rail + 1, number)}
                           for rail, name in enumerate(names)],
            'rdma_ports': [{'device': devices[rail], 'port': 1, 'netdev': name, 'rail': rail, 'link_layer': 'Ethernet',
                            'state': 'Active', 'gid_index': 7} for rail, name in enumerate(names)],
            'rails': [{'rail': rail, 'interface': name, 'net_device': '%s:1' % devices[rail], 'local_rank': rail,
                       'numa_node': 0} for rail, name in enumerate(names)]}


def run_isolation(tmp_path, port, leader_devices=('mlx5_0', 'mlx5_1')):
    """The rounds on gpu01 and gpu02, the stand-in as their ib_write_bw, rail N's server on ``port`` + N."""
    nodes = {'gpu01': node(12, list(leader_devices)), 'gpu02': node(13, ['mlx5_0', 'mlx5_1'])}
    wrapper = tmp_path / 'ib_write_bw'
    wrapper.write_text('#!/bin/sh\nexec %s %s "$@"\n' % (sys.executable, STANDIN))
    wrapper.chmod(0o755)
    common = {
        'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable,
        '__validate_perftest': {'path': str(wrapper), 'cuda': False},
    }
    inventory = {'all': {'children': {'gpu_nodes': {'hosts': {'gpu01': dict(common), 'gpu02': dict(common)}}}}}
    (tmp_path / 'hosts.yml').write_text(yaml.safe_dump(inventory))
    (tmp_path / 'play.yml').write_text(PLAY)
    threshold = {'mode': 'explicit', 'description': 'explicit: 0.001 GB/s bus bandwidth', 'min_busbw_gbs': 0.001,
                 'per_size_gbs': None}
    extra = {
        'out': str(tmp_path / 'isolation.json'), 'cluster_model_plan': {'nodes': nodes},
        'role_dir': str(ROOT / 'roles' / 'validate'),
        'validate_device': 'cpu', 'validate_mpi_user': 'root', 'validate_work_dir': str(tmp_path / 'work'),
        'validate_perftest_bytes': 65536, 'validate_perftest_seconds': SECONDS, 'validate_perftest_port': port,
        '__validate_nodes': ['gpu01', 'gpu02'], '__validate_pair_threshold': threshold,
        '__validate_threshold': dict(threshold, min_size_bytes=65536),
        # what MPI runs would need, never started here: every run of these rails is ib_write_bw
        '__validate_mpi_tools': {'mpirun': '/bin/false', 'python': sys.executable},
        '__validate_entries': {'gpu01': {'name': 'gpu01', 'slots': 1}, 'gpu02': {'name': 'gpu02', 'slots': 1}},
    }
    env = dict(os.environ, ANSIBLE_NOCOLOR='1', ANSIBLE_FORCE_COLOR='0')
    start = time.monotonic()
    proc = subprocess.run([ANSIBLE_PLAYBOOK, '-i', str(tmp_path / 'hosts.yml'), str(tmp_path / 'play.yml'),
                           '-e', json.dumps(extra)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
                          check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads((tmp_path / 'isolation.json').read_text()), proc.stdout, time.monotonic() - start


def listening(port):
    return subprocess.run(['ss', '-H', '-l', '-t', '-n', 'sport', '=', ':%d' % port], capture_output=True, text=True,
                          check=True).stdout.strip()


def test_both_rails_run_ib_write_bw_at_once_and_pass(tmp_path):
    isolation, out, took = run_isolation(tmp_path, 28515)
    assert isolation['done'] and isolation['rounds'] == 1 and isolation['findings'] == [], out
    runs = isolation['runs']
    assert sorted((run['rail'], run['tool'], run['passed']) for run in runs) == [
        (0, 'ib_write_bw', True), (1, 'ib_write_bw', True)]
    assert all(run['hosts'] == ['gpu01', 'gpu02'] and run['busbw_gbs'] > 0.001 for run in runs)
    # the servers listened on the rail's own port, and are gone
    assert 'Wait until every server listens - round 1' in out
    assert listening(28515) == '' and listening(28516) == ''
    # both rails' clients started by one task, before any was waited for
    assert out.index("Start every run's client") < out.index("Wait for every run's client")
    assert took < 120


def test_a_dead_nic_fails_its_rail_and_its_server_is_released_at_once(tmp_path):
    # gpu01's rail-1 NIC is gone: its client fails at once, and gpu02's rail-1 server, left waiting for it, is let go
    # rather than held until its timeout (1 s + 120 s)
    isolation, out, took = run_isolation(tmp_path, 28525, leader_devices=('mlx5_0', 'mlx5_dead'))
    runs = dict((run['rail'], run) for run in isolation['runs'])
    assert runs[0]['passed'] and not runs[1]['passed'], out
    assert runs[1]['reason'] == ('run failed: isolation pair gpu01 + gpu02 on rail 1 exited 1 (ib_write_bw on gpu01): '
                                 'Unable to find the Infiniband/RoCE device')
    # two nodes cannot tell a bad node from a bad link: rail 1 is a link with no host
    assert [(finding['kind'], finding['host'], finding['rail']) for finding in isolation['findings']] == [
        ('link', None, 1)]
    assert took < 100 and listening(28525) == '' and listening(28526) == ''
