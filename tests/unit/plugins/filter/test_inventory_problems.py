# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""check_inventory.yml's checks in one pass: the roles' real argument specs, then the cluster model, then the RoCE plan."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible.errors import AnsibleFilterError
from ansible_collections.hpcfabric.cluster.plugins.filter.inventory_problems import ROLE_FACTS, FilterModule

ROOT = Path(__file__).resolve().parents[4]

inventory_problems = FilterModule().filters()['inventory_problems']


def inventory_spec_problems(hostvars, hosts, roles):
    """The argument step alone, on nodes with the given roles."""
    return inventory_problems(hostvars, hosts, [], roles, [])['arguments']


def test_good_hosts_have_no_problems():
    hostvars = {'n1': {'mpi_flavour': 'hpcx', 'fabric_network_mtu': 9000, 'unrelated': object()}, 'n2': {}}
    assert inventory_spec_problems(hostvars, ['n1', 'n2'], ['mpi', 'fabric_network']) == []


def test_wrong_choice_and_type_name_variable_and_host():
    hostvars = {'n1': {}, 'n2': {'mpi_flavour': 'spack', 'fabric_network_mtu': 'jumbo'}}
    problems = inventory_spec_problems(hostvars, ['n1', 'n2'], ['mpi', 'fabric_network'])
    assert 'value of mpi_flavour must be one of: distro, hpcx, source, got: spack found in n2' in problems
    assert any(p.startswith('argument \'fabric_network_mtu\' is of type') and p.endswith('found in n2') for p in problems)
    assert len(problems) == 2


def test_missing_required_option_and_sub_option():
    hostvars = {'leaf': {'switch_qos_ports': ['swp1']}, 'n1': {'fabric_network_rails': [{'name': 'rail0'}]}}
    assert inventory_spec_problems(hostvars, ['leaf'], ['switch_qos']) == [
        'missing required arguments: switch_qos_platform found in leaf']
    problems = inventory_spec_problems(hostvars, ['n1'], ['fabric_network'])
    assert problems == ['missing required arguments: subnet found in fabric_network_rails found in n1']


def test_a_group_value_shared_by_every_host_is_not_changed_by_checking_it():
    policy = {'roce': {'dscp': 26}}
    shared = {'roce_qos_policy': policy, 'fabric_network_rails': [{'name': 'rail0', 'subnet': '10.0.0.0/24'}]}
    hostvars = {'n1': shared, 'n2': shared, 'n3': shared}
    assert inventory_spec_problems(hostvars, ['n1', 'n2', 'n3'], ['roce_qos', 'fabric_network']) == []
    assert policy == {'roce': {'dscp': 26}}


def test_hosts_that_take_a_dict_default_all_pass():
    # roce_qos_policy defaults to {} with sub-options: the first host's validation must not fill the next one's
    assert inventory_spec_problems({'n1': {}, 'n2': {}, 'n3': {}}, ['n1', 'n2', 'n3'], ['roce_qos']) == []


def test_host_in_two_groups_gets_both_sets_of_checks():
    # one host listed as a node and as a switch: the node roles' specs and the switch roles' specs both judge it
    hostvars = {'both': {'mpi_flavour': 'spack'}, 'n1': {}}
    problems = inventory_problems(hostvars, ['both', 'n1'], ['both'], ['mpi'], ['switch_qos'])['arguments']
    assert 'value of mpi_flavour must be one of: distro, hpcx, source, got: spack found in both' in problems
    assert 'missing required arguments: switch_qos_platform, switch_qos_ports found in both' in problems
    assert not any(problem.endswith('found in n1') for problem in problems)


def test_bad_arguments_and_unknown_role():
    with pytest.raises(AnsibleFilterError, match='nodes must be a list'):
        inventory_spec_problems({}, 'n1', ['mpi'])
    with pytest.raises(AnsibleFilterError, match='argument spec of role nosuch'):
        inventory_spec_problems({}, ['n1'], ['nosuch'])


def test_each_step_runs_only_when_the_one_before_found_nothing():
    rails = [{'name': 'rail0', 'subnet': '10.0.0.0/24'}]
    good = {'fabric_network_rails': rails, 'fabric_network_interfaces': [{'name': 'f0', 'address': '10.0.0.1/24'}]}
    clash = dict(good, fabric_network_interfaces=[{'name': 'f0', 'address': '10.0.0.1/24'}])
    roles = ['fabric_network', 'roce_qos']
    both = inventory_problems({'n1': good, 'n2': dict(clash, fabric_network_mtu='jumbo')}, ['n1', 'n2'], [], roles, [])
    assert both['arguments'] and both['cluster_model'] == [] and both['roce_policy'] == []
    model = inventory_problems({'n1': good, 'n2': clash}, ['n1', 'n2'], [], roles, [])
    assert model['arguments'] == [] and model['roce_policy'] == []
    assert model['cluster_model'] == ['fabric_network_interfaces[0].address on n2: 10.0.0.1 is already used by n1 (f0)']
    jumbo = dict(good, fabric_network_interfaces=[{'name': 'f0', 'address': '10.0.0.1/24', 'mtu': 9216}])
    leaf = {'switch_qos_platform': 'sonic', 'switch_qos_ports': ['Ethernet0']}
    mtu = inventory_problems({'n1': jumbo, 'leaf': leaf}, ['n1'], ['leaf'], roles, ['switch_qos'])
    assert mtu['arguments'] == [] and mtu['cluster_model'] == []
    assert mtu['roce_policy'] == ['fabric_network_interfaces[0].mtu on n1: 9216 is above the switch port MTU 9214 '
                                  '(roce_qos_policy.mtu.switch)']


def test_a_variable_with_a_role_prefix_that_no_role_declares_is_reported_with_the_closest_name():
    hostvars = {'n1': {'fabric_network_mtus': 9000, 'mpi_flavour': 'distro', 'mpiuser': 'x', 'site_mpi_x': 1},
                'leaf': {'switch_qos_port': ['swp1'], 'switch_qos_platform': 'sonic', 'switch_qos_ports': ['Ethernet0']}}
    problems = inventory_problems(hostvars, ['n1'], ['leaf'], ['mpi', 'fabric_network'], ['switch_qos'])['arguments']
    assert problems == [
        'fabric_network_mtus on n1: no hpcfabric.cluster role has this variable (did you mean fabric_network_mtu?)',
        'switch_qos_port on leaf: no hpcfabric.cluster role has this variable (did you mean switch_qos_ports?)']


def test_the_facts_roles_set_are_not_reported():
    hostvars = {'n1': dict((name, {}) for name in ROLE_FACTS)}
    assert inventory_spec_problems(hostvars, ['n1'], ['cluster_model', 'mpi', 'nvidia_driver', 'rdma']) == []


def role_task_facts():
    """The public variables the roles' tasks set with set_fact, read from the task files."""
    found = set()

    def walk(tasks):
        for task in tasks or []:
            if isinstance(task, dict):
                for key in ('block', 'rescue', 'always'):
                    walk(task.get(key))
                facts = task.get('ansible.builtin.set_fact')
                if isinstance(facts, dict):
                    found.update(name for name in facts if not name.startswith('_') and name != 'cacheable')
    for path in sorted((ROOT / 'roles').glob('*/tasks/*.yml')):
        walk(yaml.safe_load(path.read_text()))
    return found


def test_role_facts_lists_every_public_fact_a_role_sets():
    assert role_task_facts() == set(ROLE_FACTS)


def test_a_secret_of_the_wrong_type_is_named_without_its_value():
    # a password written as a bare number in YAML: named, its value never shown (the option is no_log)
    hostvars = {'n1': {'slurm_accounting': True, 'slurm_accounting_db_password': 918273645546372819}}
    problems = inventory_spec_problems(hostvars, ['n1'], ['slurm'])
    assert len(problems) == 1 and problems[0].startswith('slurm_accounting_db_password on n1: the int would reach')
    assert '918273645546372819' not in problems[0]
    # a value that is not secret still shows what to write
    assert '9000' in inventory_spec_problems({'n1': {'fabric_network_mtu': '9000'}}, ['n1'], ['fabric_network'])[0]
