# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The policy's defaults live in one place: role specs, role defaults and the docs page must follow it."""
from __future__ import annotations
import json
import re
from pathlib import Path

import pytest
import yaml

from ansible_collections.hpcfabric.cluster.plugins.module_utils.roce_policy import DEFAULT_POLICY

ROOT = Path(__file__).resolve().parents[4]
DOC = (ROOT / 'docs' / 'roce_qos.md').read_text()


def spec(role):
    return yaml.safe_load((ROOT / 'roles' / role / 'meta' / 'argument_specs.yml').read_text())['argument_specs']['main']['options']


def defaults(role):
    return yaml.safe_load((ROOT / 'roles' / role / 'defaults' / 'main.yml').read_text())


def leaves(policy, prefix=''):
    for key, value in policy.items():
        if isinstance(value, dict):
            yield from leaves(value, prefix + key + '.')
        else:
            yield prefix + key, value


def spec_leaves(options, prefix=''):
    for key, option in options.items():
        if 'options' in option:
            yield from spec_leaves(option['options'], prefix + key + '.')
        else:
            yield prefix + key, option


def test_role_spec_describes_every_policy_key_with_its_type_and_no_literal_default():
    described = dict(spec_leaves(spec('roce_qos')['roce_qos_policy']['options']))
    assert sorted(described) == sorted(key for key, _value in leaves(DEFAULT_POLICY))
    for key, value in leaves(DEFAULT_POLICY):
        option = described[key]
        assert 'default' not in option, key
        if isinstance(value, list):
            assert (option['type'], option['elements']) == ('list', 'int'), key
        else:
            assert option['type'] == {int: 'int', str: 'str'}[type(value)], key


def test_roles_carry_no_policy_literal():
    assert defaults('roce_qos')['roce_qos_policy'] == {}
    assert defaults('switch_qos')['switch_qos_policy'] == '{{ roce_qos_policy | default({}) }}'


def test_docs_table_matches_the_default_policy():
    rows = dict(re.findall(r'^\| `([a-z_.]+)` \| `([^`]+)` \|', DOC, re.M))
    for key, value in leaves(DEFAULT_POLICY):
        assert key in rows, key
        assert rows[key] == (json.dumps(value) if isinstance(value, list) else str(value)).replace('"', ''), key


@pytest.mark.parametrize('role', ['roce_qos', 'switch_qos'])
def test_docs_list_every_role_variable(role):
    documented = set(re.findall(r'^\| `(%s_[a-z_]+)` \|' % role, DOC, re.M))
    assert documented == set(spec(role))


@pytest.mark.parametrize('role', ['roce_qos', 'switch_qos'])
def test_role_defaults_are_in_the_spec(role):
    options = spec(role)
    for name, value in defaults(role).items():
        assert name in options, name
        if 'default' in options[name]:
            assert options[name]['default'] == value, name
