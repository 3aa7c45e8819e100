# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Every assert under roles/ is an input rule that check_inventory reaches, or says what else it checks.

An input rule is one of the roles' settings alone: it belongs in ``module_utils/role_settings/<role>.py``, which the
role's one settings assert (filter ``role_settings_problems``) and ``playbooks/check_inventory.yml`` both call. Any
other assert says above its name what it reads: ``# host state: ...`` (the host's OS, devices, files, a command's
answer, the play's hosts) or ``# cluster model: ...`` (rules across hosts, which check_inventory's cluster model step
runs). The asserts of ``verify*.yml`` and ``readback*.yml`` read back what the role did, which is host state too.
"""
from __future__ import annotations

import json
import re

import yaml

from checkout import ROOT

ROLES = ROOT / 'roles'
_MARKER = re.compile(r'\s*# (host state|cluster model): \S')
_READ_BACK = re.compile(r'^(verify|readback)[a-z_]*[.]yml$')
_SETTINGS_CALL = re.compile(r"role_settings_problems\('([a-z_]+)'")
# one setting per role that its rules refuse, and the start of the line naming variable and host
BROKEN = {
    'os_base': ({'os_base_nofile': 0}, 'os_base on b300-01: os_base_nofile 0'),
    'rdma': ({'rdma_roce_modules': ['mlx5 ib']}, 'rdma_roce_modules[0] on b300-01:'),
    'nvidia_driver': ({'nvidia_driver_branch': '58O'}, "nvidia_driver_branch on b300-01: '58O' is not a driver branch"),
    'mpi': ({'mpi_ucx_tls': ['rc,ud']}, 'mpi_ucx_tls[0] on b300-01:'),
    'mpi_hostfile': ({'mpi_hostfile_path': 'hostfile'}, 'mpi_hostfile_path on b300-01:'),
    'bench_env': ({'bench_env_cuda_home': 'cuda'}, 'bench_env on b300-01: bench_env_cuda_home must be an absolute path'),
    'ssh_trust': ({'ssh_trust_user': 'Mpi User'}, 'ssh_trust_user on b300-01:'),
    'storage': ({'storage_lnet_networks': ['o2ib0 (ib0)']}, 'storage_lnet_networks[0] on b300-01:'),
    'validate': ({'validate_dcgmi_diag_level': 7}, 'validate_dcgmi_diag_level on b300-01:'),
    'roce_qos': ({'roce_qos_interfaces': ['ens1f0np0\nRUN+="/bin/sh"']}, 'roce_qos_interfaces[0] on b300-01:'),
    'slurm': ({'slurm_partitions': [{'name': 'gpu', 'nodes': 'b300-0[1-'}]}, 'slurm_partitions[0].nodes on b300-01:'),
}


def _asserts(tasks):
    for task in tasks or []:
        if isinstance(task, dict):
            for key in ('block', 'rescue', 'always'):
                yield from _asserts(task.get(key))
            if 'ansible.builtin.assert' in task:
                yield task


def _marker(lines, name):
    """The marker in the comment lines right above the task ``name``, or None."""
    found = [i for i, line in enumerate(lines) if re.fullmatch(r'\s*- name: ' + re.escape(name) + r'\s*', line)]
    assert len(found) == 1, 'task %r appears %d times' % (name, len(found))
    index = found[0] - 1
    while index >= 0 and lines[index].lstrip().startswith('#'):
        match = _MARKER.match(lines[index])
        if match:
            return match.group(1)
        index -= 1
    return None


def role_asserts():
    """``(role, file, task name, kind)`` of every assert under roles/: kind ``input`` with the role whose rules it
    calls, ``read-back``, ``host state``, ``cluster model``, or None when it says nothing."""
    found = []
    for path in sorted(ROLES.glob('*/tasks/*.yml')):
        text = path.read_text()
        for task in _asserts(yaml.safe_load(text)):
            calls = _SETTINGS_CALL.findall(json.dumps(task))
            if calls:
                kind = ('input', tuple(calls))
            elif _READ_BACK.match(path.name):
                kind = 'read-back'
            else:
                kind = _marker(text.split('\n'), task['name'])
            found.append((path.parts[-3], path.name, task['name'], kind))
    return found


def _rules():
    """The roles ``role_settings.RULES`` registers (read from its source: the playbook lane imports no collection)."""
    text = (ROOT / 'plugins' / 'module_utils' / 'role_settings' / '__init__.py').read_text()
    body = text[text.index('RULES = {'):]
    return set(re.findall(r"^    '([a-z_]+)': \1[.]problems,$", body[:body.index('}')], re.M))


def _check_inventory_roles():
    play = yaml.safe_load((ROOT / 'playbooks' / 'check_inventory.yml').read_text())[0]
    roles = play['vars']['__check_inventory_roles']
    return roles['node'], roles['switch']


def test_every_assert_is_an_input_rule_check_inventory_reaches_or_says_what_it_reads():
    unmarked = ['%s/tasks/%s: %s' % (role, name, task) for role, name, task, kind in role_asserts() if kind is None]
    assert unmarked == [], 'asserts that are neither the role\'s settings check nor marked:\n' + '\n'.join(unmarked)


def test_each_role_checks_its_own_settings_once_and_check_inventory_runs_the_same_rules():
    rules = _rules()
    node_roles, switch_roles = _check_inventory_roles()
    inputs = {}
    for role, name, task, kind in role_asserts():
        if isinstance(kind, tuple):
            assert kind[1] == (role,), '%s/tasks/%s (%s) checks the settings of %s' % (role, name, task, kind[1])
            inputs.setdefault(role, []).append(task)
    assert all(len(tasks) == 1 for tasks in inputs.values()), inputs
    # every role with rules checks them itself, and check_inventory runs them for the hosts the role runs on
    assert sorted(inputs) == sorted(rules)
    assert rules <= set(node_roles) | set(switch_roles)
    # and check_inventory knows every role of the collection
    assert sorted(node_roles + switch_roles) == sorted(p.name for p in ROLES.iterdir() if (p / 'meta' / 'argument_specs.yml').exists())


def test_a_broken_setting_of_each_role_is_refused_by_check_inventory_naming_variable_and_host(inventory, playbook):
    node_roles, _switch_roles = _check_inventory_roles()
    assert sorted(BROKEN) == sorted(_rules() & set(node_roles)), 'a node role without a broken setting to try'

    def mutate(data):
        for values, _message in BROKEN.values():
            data.update(values)
    inventory.edit('host_vars/b300-01.yml', mutate)
    rc, out = playbook(inventory.path, 'check_inventory.yml')
    flat = ' '.join(out.split())
    assert rc != 0
    missing = [role for role, (_values, message) in BROKEN.items() if message not in flat]
    assert missing == [], flat
