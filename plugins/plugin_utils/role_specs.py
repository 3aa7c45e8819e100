# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The argument specs of this collection's roles, read on the controller (the roles' interfaces, one file each)."""

from __future__ import annotations

import os

import yaml

from ansible.errors import AnsibleFilterError
from ansible_collections.hpcfabric.cluster.plugins.module_utils.inventory_spec import merge_options

ROLES_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'roles')


def _role_file(role, caller, what, *path):
    path = os.path.join(ROLES_DIR, role, *path)
    try:
        with open(path) as handle:
            return yaml.safe_load(handle)
    except (OSError, IOError, yaml.YAMLError) as exc:
        raise AnsibleFilterError('%s: cannot read the %s of role %s (%s): %s' % (caller, what, role, path, exc))


def _role_spec(role, caller):
    return _role_file(role, caller, 'argument spec', 'meta', 'argument_specs.yml')


def role_options(roles, caller):
    """The merged ``main`` options of ``roles``; ``caller`` names the filter in errors."""
    if isinstance(roles, (str, dict)) or not hasattr(roles, '__iter__'):
        raise AnsibleFilterError('%s: roles must be a list, got %s' % (caller, type(roles).__name__))
    return merge_options(_role_spec(role, caller) for role in roles)


def role_defaults(role, caller):
    """``{name: default}`` of every option ``role``'s argument spec declares: the value of its ``defaults/main.yml``
    (what the role sees when the inventory sets nothing), else the spec's ``default``."""
    defaults = _role_file(role, caller, 'defaults', 'defaults', 'main.yml') or {}
    return dict((name, defaults[name] if name in defaults else (spec or {}).get('default'))
                for name, spec in role_options([role], caller).items())
