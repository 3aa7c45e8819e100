# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Every host's settings checked by the rules of the roles that run on it, for check_inventory.yml.

They run on the controller after the argument specs (so every value has its declared type) and before any host is
touched. A role's settings on a host are what the role will see there: the inventory's value, else the role's
default; a default that is a Jinja template (``{{ validate_work_dir }}/checkpoints``) cannot be resolved here and
reads as None, which the rules skip (the role checks it again, resolved). The rules are the roles'
own (``role_settings``), so a role's assert and this check cannot disagree. Each message reads
``<variable> on <host>: <what is wrong>``.
"""
from __future__ import annotations

from ansible_collections.hpcfabric.cluster.plugins.module_utils.input_syntax import address_or_hostname_problem
from ansible_collections.hpcfabric.cluster.plugins.module_utils.role_settings import role_problems


def _resolved(value):
    return None if isinstance(value, str) and '{{' in value else value


def role_settings(own, defaults):
    """One role's settings on a host: ``own`` the host's variables, ``defaults`` ``{name: default}`` of every
    variable the role declares."""
    return dict((name, own[name] if own.get(name) is not None else _resolved(value)) for name, value in defaults.items())


def host_problems(variables, hosts, defaults_by_role):
    """Every problem of the hosts' settings, in host order, then role order; ``variables`` ``{host: {name: value}}``
    as the inventory sets them, ``defaults_by_role`` ``{role: {name: default}}`` of the roles that run on these
    hosts, every variable each declares."""
    problems = []
    for host in hosts:
        own = variables.get(host) or {}
        for role, defaults in defaults_by_role.items():
            problems.extend(role_problems(role, role_settings(own, defaults), host))
        # peers' known_hosts lists the node under it: one field of a line
        problem = own.get('ansible_host') is not None and address_or_hostname_problem(own['ansible_host'])
        if problem:
            problems.append('ansible_host on %s: %s' % (host, problem))
    return problems
