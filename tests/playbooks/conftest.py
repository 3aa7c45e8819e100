# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Run the collection's playbooks against inventories written by the test, the way a sysadmin would."""
from __future__ import annotations
import json
import os
import shutil
import subprocess
import sys
from collections import namedtuple

import pytest
import yaml

from checkout import ANSIBLE_PLAYBOOK, ROOT


@pytest.fixture
def inventory(tmp_path):
    """Copy inventories/example into tmp_path, apply edits, and return its path.

    ``edit(path_in_inventory, mutate)`` loads a YAML file of the copy, lets ``mutate`` change it, and writes it back.
    """
    dest = tmp_path / 'inventory'
    shutil.copytree(ROOT / 'inventories' / 'example', dest)

    class Inventory:
        path = dest

        @staticmethod
        def edit(name, mutate):
            f = dest / name
            data = yaml.safe_load(f.read_text()) if f.exists() else {}
            mutate(data)
            f.write_text(yaml.safe_dump(data, sort_keys=False))

    return Inventory


@pytest.fixture
def playbook():
    """Run ``ansible-playbook -i INVENTORY PLAYBOOK`` from the checkout; return (rc, combined output)."""
    def run(inventory_path, name, *args):
        env = dict(os.environ, ANSIBLE_NOCOLOR='1', ANSIBLE_FORCE_COLOR='0')
        proc = subprocess.run(
            [ANSIBLE_PLAYBOOK, '-i', str(inventory_path), str(ROOT / 'playbooks' / name), *args],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
        return proc.returncode, proc.stdout + proc.stderr
    return run


@pytest.fixture
def local_play(tmp_path, playbook):
    """Run a play on one host, ``name``, that connects to this machine; return (rc, combined output).

    ``run(name, tasks, *args, **host_vars)``: ``tasks`` is the YAML of the play's tasks (indented by four spaces),
    ``args`` more ansible-playbook arguments (``-vvv``, ``--check``).
    """
    def run(name, tasks, *args, **host_vars):
        host_vars.update(ansible_connection='local', ansible_python_interpreter=sys.executable)
        (tmp_path / 'hosts.yml').write_text(yaml.safe_dump({'all': {'hosts': {name: host_vars}}}))
        (tmp_path / 'play.yml').write_text(f'- name: Run tasks on {name}\n  hosts: all\n  gather_facts: false\n'
                                           '  tasks:\n' + tasks)
        return playbook(tmp_path / 'hosts.yml', tmp_path / 'play.yml', *args)
    return run


# Distribution facts as setup reports them, per supported OS (and one the roles refuse).
OS_FACTS = {
    'debian11': {'distribution': 'Debian', 'distribution_major_version': '11', 'distribution_version': '11.11',
                 'distribution_release': 'bullseye', 'os_family': 'Debian', 'pkg_mgr': 'apt',
                 'kernel': '5.10.0-32-amd64'},
    'debian12': {'distribution': 'Debian', 'distribution_major_version': '12', 'distribution_version': '12.7',
                 'distribution_release': 'bookworm', 'os_family': 'Debian', 'pkg_mgr': 'apt',
                 'kernel': '6.1.0-26-amd64'},
    'debian13': {'distribution': 'Debian', 'distribution_major_version': '13', 'distribution_version': '13.1',
                 'distribution_release': 'trixie', 'os_family': 'Debian', 'pkg_mgr': 'apt',
                 'kernel': '6.12.48+deb13-amd64'},
    'ubuntu2204': {'distribution': 'Ubuntu', 'distribution_major_version': '22', 'distribution_version': '22.04',
                   'distribution_release': 'jammy', 'os_family': 'Debian', 'pkg_mgr': 'apt',
                   'kernel': '5.15.0-119-generic'},
    'ubuntu2404': {'distribution': 'Ubuntu', 'distribution_major_version': '24', 'distribution_version': '24.04',
                   'distribution_release': 'noble', 'os_family': 'Debian', 'pkg_mgr': 'apt',
                   'kernel': '6.8.0-45-generic'},
    'rhel8': {'distribution': 'RedHat', 'distribution_major_version': '8', 'distribution_version': '8.10',
              'distribution_release': 'Ootpa', 'os_family': 'RedHat', 'pkg_mgr': 'dnf',
              'kernel': '4.18.0-553.el8_10.x86_64'},
    'rhel9': {'distribution': 'RedHat', 'distribution_major_version': '9', 'distribution_version': '9.4',
              'distribution_release': 'Plow', 'os_family': 'RedHat', 'pkg_mgr': 'dnf',
              'kernel': '5.14.0-427.13.1.el9_4.x86_64'},
    'rocky9': {'distribution': 'Rocky', 'distribution_major_version': '9', 'distribution_version': '9.4',
               'distribution_release': 'Blue Onyx', 'os_family': 'RedHat', 'pkg_mgr': 'dnf',
               'kernel': '5.14.0-427.13.1.el9_4.x86_64'},
}

# A play's first task: this host's injected OS facts become real facts. set_fact with cacheable: true stores them in
# the fact cache, which is where ansible_facts is read from, just as setup would; the roles' "gather when missing"
# steps then find them and skip.
INJECT_OS_FACTS = """    - name: Make this host's OS facts from the inventory real facts, as setup would report them
      ansible.builtin.set_fact:
        "{{ item.key }}": "{{ item.value }}"
        cacheable: true
      loop: "{{ injected_facts | dict2items }}"
"""

# one ansible-playbook run: rc, messages of failed tasks, messages of the others, JSON files the play wrote to OUT
PlayRun = namedtuple('PlayRun', 'rc failed said out')


@pytest.fixture
def os_play(tmp_path):
    """Run a play on local hosts that each carry another OS's facts.

    ``run(tasks, hosts, check=False, **extra_vars)``: ``tasks`` is the YAML of the play's tasks (indented by four
    spaces), run after INJECT_OS_FACTS; ``hosts`` maps a host name to ``(os key of OS_FACTS, {variables})``, where
    the variables may also override facts under ``facts``. The play may write JSON files to ``{{ out }}``; they come
    back parsed in ``PlayRun.out`` by file stem. Failed tasks' messages are in ``failed``, the others' in ``said``.
    """
    out = tmp_path / 'out'
    out.mkdir()

    def run(tasks, hosts, check=False, **extra_vars):
        inventory = {}
        for name, (os_key, host_vars) in hosts.items():
            host_vars = dict(host_vars)
            facts = dict(OS_FACTS[os_key], architecture='x86_64')
            facts.update(host_vars.pop('facts', {}))
            inventory[name] = dict(host_vars, ansible_connection='local', ansible_python_interpreter=sys.executable,
                                   injected_facts=facts)
        (tmp_path / 'hosts.yml').write_text(yaml.safe_dump({'all': {'hosts': inventory}}))
        (tmp_path / 'play.yml').write_text(
            '- name: Run tasks on hosts with injected OS facts\n  hosts: all\n  gather_facts: false\n  tasks:\n'
            + INJECT_OS_FACTS + tasks)
        # the JSON report only: ansible.cfg's profile_tasks would print into it
        env = dict(os.environ, ANSIBLE_STDOUT_CALLBACK='ansible.posix.json',
                   ANSIBLE_CALLBACKS_ENABLED='ansible.posix.json')
        proc = subprocess.run(
            [ANSIBLE_PLAYBOOK, '-i', str(tmp_path / 'hosts.yml'), str(tmp_path / 'play.yml'),
             '-e', json.dumps(dict(extra_vars, out=str(out)))] + (['--check'] if check else []),
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
        try:
            report = json.loads(proc.stdout)
        except ValueError:
            pytest.fail('ansible-playbook printed no JSON report (rc %d): %s' % (proc.returncode, proc.stderr))
        failed, said = [], []
        for play in report['plays']:
            for task in play['tasks']:
                for result in task['hosts'].values():
                    (failed if result.get('failed') else said).append(result.get('msg', ''))
        return PlayRun(proc.returncode, failed, said, {p.stem: json.loads(p.read_text()) for p in out.glob('*.json')})

    return run
