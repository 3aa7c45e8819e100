# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The validate role's hostfile.yml, run for real on this machine: it reads the launcher's hostfile and pairs each
node of the play with its line by name, through the cluster model's hostfile entries, never by position - a hostfile
in another order than the group, or a run with --limit, still gives each node its own name and slots.
"""
from __future__ import annotations
import json
import os
import subprocess
import sys

import yaml

from checkout import ANSIBLE_PLAYBOOK, ROOT

PLAY = """- name: Pair the nodes with the hostfile as the validate role does before the isolation and the smoke training
  hosts: gpu_nodes
  gather_facts: false
  tasks:
    - name: Read and pair the hostfile
      ansible.builtin.include_role:
        name: hpcfabric.cluster.validate
        tasks_from: hostfile.yml

    - name: Hand the pairs back to the test
      ansible.builtin.copy:
        content: "{{ __validate_entries | to_json }}"
        dest: "{{ out }}"
        mode: "0644"
      delegate_to: localhost
      run_once: true
"""
HOSTS = ['gpu01', 'gpu02', 'gpu03']
# the cluster model's entries: each node's primary fabric name and its slots
MODEL = [{'host': host, 'name': '%s-rail0' % host, 'slots': slots} for host, slots in zip(HOSTS, (8, 4, 2))]


def run(tmp_path, hostfile, limit=None):
    """hostfile.yml on the three nodes (all local), the launcher gpu01's hostfile ``hostfile``; (rc, pairs, output)."""
    local = {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable}
    inventory = {'all': {'children': {'gpu_nodes': {'hosts': dict((host, dict(local)) for host in HOSTS)}}}}
    (tmp_path / 'hosts.yml').write_text(yaml.safe_dump(inventory))
    (tmp_path / 'play.yml').write_text(PLAY)
    (tmp_path / 'hostfile').write_text(hostfile)
    extra = {'out': str(tmp_path / 'entries.json'), 'validate_hostfile': str(tmp_path / 'hostfile'),
             'cluster_model_plan': {'hostfile': MODEL}}
    argv = [ANSIBLE_PLAYBOOK, '-i', str(tmp_path / 'hosts.yml'), str(tmp_path / 'play.yml'), '-e', json.dumps(extra)]
    if limit:
        argv += ['--limit', limit]
    env = dict(os.environ, ANSIBLE_NOCOLOR='1', ANSIBLE_FORCE_COLOR='0')
    proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    out = tmp_path / 'entries.json'
    return proc.returncode, json.loads(out.read_text()) if out.exists() else None, proc.stdout + proc.stderr


def test_a_hostfile_in_another_order_pairs_each_node_with_its_own_line(tmp_path):
    rc, pairs, out = run(tmp_path, 'gpu03-rail0 slots=2\ngpu01-rail0 slots=8\ngpu02-rail0 slots=4\n')
    assert rc == 0, out
    assert pairs == {'gpu01': {'name': 'gpu01-rail0', 'slots': 8}, 'gpu02': {'name': 'gpu02-rail0', 'slots': 4},
                     'gpu03': {'name': 'gpu03-rail0', 'slots': 2}}


def test_a_limited_run_pairs_its_nodes_in_a_partial_hostfile(tmp_path):
    # --limit gpu03,gpu02: the hostfile lists them by inventory name, gpu03 first, and the launcher gpu01 is not in it
    rc, pairs, out = run(tmp_path, 'gpu03 slots=2\ngpu02 slots=4\n', limit='gpu02,gpu03')
    assert rc == 0, out
    assert pairs == {'gpu02': {'name': 'gpu02', 'slots': 4}, 'gpu03': {'name': 'gpu03', 'slots': 2}}


def test_a_node_the_hostfile_lacks_stops_the_play_naming_it(tmp_path):
    rc, pairs, out = run(tmp_path, 'gpu01-rail0 slots=8\ngpu09-rail0 slots=8\n', limit='gpu01,gpu02')
    assert rc != 0 and pairs is None
    text = ' '.join(out.split())
    assert ('validate_hostfile on gpu01: %s - gpu09-rail0: names no node of the cluster model; gpu02: no line names '
            'it (gpu02-rail0 or gpu02): run the mpi_hostfile role first' % (tmp_path / 'hostfile')) in text
