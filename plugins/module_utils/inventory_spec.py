# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Every host's variables against the argument specs of the roles that run on it, in one linear pass.

The same validator as ``ansible.builtin.validate_argument_spec`` and a role's own argument check, one host at a
time: a 1000-node inventory costs 1000 small validations, not one task whose spec repeats every role's options for
every host.
"""

from __future__ import annotations

import copy
import difflib
import json

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.six.moves.collections_abc import Mapping


def merge_options(specs):
    """One option dict from the ``argument_specs.main.options`` of several roles (their prefixes keep names apart)."""
    options = {}
    for spec in specs:
        options.update(((spec or {}).get('argument_specs') or {}).get('main', {}).get('options') or {})
    return options


def _plain(value):
    """A copy of an inventory value made of plain dicts and lists.

    Not ``copy.deepcopy``: a templated container holds its whole variable context, and copying that for every host
    made a 1024-node check take minutes.
    """
    if isinstance(value, Mapping):
        return dict((key, _plain(item)) for key, item in value.items())
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


def read_variables(variables_of, hosts, names):
    """``{host: {name: plain value}}`` of the ``names`` each host defines: every host's variables read once."""
    result = {}
    for host in hosts:
        variables = variables_of(host)
        result[host] = dict((name, _plain(variables[name])) for name in names if name in variables)
    return result


def spec_problems(options, hosts, variables_of):
    """Problems of ``hosts`` against ``options``, each message ending ``found in <host>``.

    ``variables_of(host)`` returns the host's variables (a mapping); only the names ``options`` declares are read,
    so a large inventory is not templated in full.
    """
    problems = []
    for host in hosts:
        variables = variables_of(host)
        # the validator fills sub-option defaults into what it is given and into the spec's own default values: each
        # host gets copies, or the first host's filled-in defaults would be the next host's "values"
        provided = dict((name, _plain(variables[name])) for name in options if name in variables)
        result = ArgumentSpecValidator(copy.deepcopy(options)).validate(provided)
        problems.extend('%s found in %s' % (message, host) for message in result.error_messages)
        if not result.error_messages:
            problems.extend('%s on %s: %s' % (retyped[0], host, retyped[1]) for retyped in
                            (_retyped(provided[name], result.validated_parameters.get(name), name,
                                      bool((options[name] or {}).get('no_log'))) for name in provided)
                            if retyped)
    return problems


def _kind(value):
    """The plain type of a value: Ansible tags what it reads from the inventory with subclasses of int, str, ..."""
    for kind, types in (('bool', bool), ('int', int), ('float', float), ('str', str), ('dict', Mapping),
                        ('list', (list, tuple))):
        if isinstance(value, types):
            return kind
    return type(value).__name__


def _retyped(raw, typed, where, secret=False):
    """``(where, rule)`` of the first value the validator had to convert to its declared type, else None.

    The validator accepts ``"9000"`` for an int and ``yes`` for a bool, but the roles read the variable as the
    inventory wrote it: a string MTU or a bool where a list belongs would reach a template or a loop unconverted.
    An int given for a float is the one conversion that changes nothing a role reads. The value of a ``secret``
    option (``no_log`` in its spec: a password written as a bare number) is never shown.
    """
    if isinstance(raw, Mapping) and isinstance(typed, Mapping):
        found = (_retyped(raw[key], typed.get(key), '%s.%s' % (where, key), secret) for key in raw)
    elif isinstance(raw, list) and isinstance(typed, list) and len(raw) == len(typed):
        found = (_retyped(a, b, '%s[%d]' % (where, index), secret) for index, (a, b) in enumerate(zip(raw, typed)))
    elif _kind(raw) == _kind(typed) or raw is None or (_kind(raw), _kind(typed)) == ('int', 'float'):
        return None
    elif secret:
        return (where, 'the %s would reach the roles as it is; write a %s (quote it in YAML; the value is not shown, '
                'the option is no_log)' % (_kind(raw), _kind(typed)))
    else:
        # -e key=value on the command line always gives a string
        return (where, 'the %s %r would reach the roles as it is; write the %s %r%s' % (
            _kind(raw), raw, _kind(typed), typed,
            ' (on the command line, -e with JSON: -e \'{"%s": %s}\')' % (where, json.dumps(typed))
            if isinstance(raw, str) and '.' not in where and '[' not in where else ''))
    return next((problem for problem in found if problem), None)


def undeclared_problems(variables_of, hosts, declared, prefixes):
    """``<name> on <host>: ...`` for each variable of ``hosts`` that starts with one of ``prefixes`` (the roles' names
    and ``_``) but is in none of the ``declared`` names: a misspelt setting (``fabric_network_mtus``) would otherwise
    be ignored without a word while the role runs on its default."""
    prefixes = tuple(prefixes)
    declared = sorted(declared)
    problems = []
    for host in hosts:
        for name in sorted(n for n in variables_of(host) if isinstance(n, str) and n.startswith(prefixes)):
            if name not in declared:
                close = difflib.get_close_matches(name, declared, n=1)
                problems.append('%s on %s: no hpcfabric.cluster role has this variable%s'
                                % (name, host, ' (did you mean %s?)' % close[0] if close else ''))
    return problems
