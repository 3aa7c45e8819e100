# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The mpi role's local fact, ``/etc/ansible/facts.d/hpcfabric_mpi.fact``, and what a consumer takes from it.

The mpi role writes the fact once it has installed (and, with ``mpi_verify``, read back) an MPI stack. Its fields
(DESIGN.md, "MPI local fact"): ``flavour``, ``prefix``, ``mpirun``, ``ompi_info``, ``ucx_info``, ``ucx_prefix``,
``python`` (the interpreter that imports mpi4py built for this MPI, or null), ``cuda_aware`` (as ``mpi_facts``
read it, or null when it was not read) and ``environment`` (what a process that runs this MPI's tools outside a
login shell needs, e.g. HPC-X's ``OPAL_PREFIX``).

``launch_tools`` is how the validation (and anything else that launches jobs) finds the MPI: from the fact, or from
an explicit prefix, never from a guess at PATH, which Ansible's non-login shells do not share with users.
"""

from __future__ import annotations

FACT_NAME = 'hpcfabric_mpi'
FACT_FILE = '/etc/ansible/facts.d/%s.fact' % FACT_NAME
FLAVOURS = ('distro', 'hpcx', 'source')
_PATH_FIELDS = ('prefix', 'mpirun', 'ompi_info', 'ucx_info', 'ucx_prefix')
# what two nodes of one job must agree on: mpirun starts the launcher's interpreter path on every node
SAME_ON_EVERY_NODE = ('mpirun', 'python')


def _absolute(value):
    return isinstance(value, str) and value.startswith('/') and '\n' not in value


def fact_problems(fact):
    """What is wrong with a local fact as read back (``ansible_local.hpcfabric_mpi``), one line per field."""
    if not isinstance(fact, dict):
        return ['%s is not a JSON object' % FACT_FILE]
    problems = []
    if fact.get('flavour') not in FLAVOURS:
        problems.append('flavour %r is not one of %s' % (fact.get('flavour'), ', '.join(FLAVOURS)))
    for field in _PATH_FIELDS:
        if not _absolute(fact.get(field)):
            problems.append('%s %r is not an absolute path' % (field, fact.get(field)))
    if fact.get('python') is not None and not _absolute(fact.get('python')):
        problems.append('python %r is neither null nor an absolute path' % (fact.get('python'),))
    if fact.get('cuda_aware') not in (True, False, None):
        problems.append('cuda_aware %r is not true, false or null' % (fact.get('cuda_aware'),))
    environment = fact.get('environment', {})
    if not isinstance(environment, dict) or not all(isinstance(v, str) for v in environment.values()):
        problems.append('environment is not a map of names to strings')
    return ['%s: %s' % (FACT_FILE, problem) for problem in problems]


def launch_tools(fact, mpi_prefix=None, python=None):
    """Where a job's tools are on this node.

    ``fact`` is the node's ``ansible_local.hpcfabric_mpi`` (None when the file is absent); ``mpi_prefix`` an explicit
    prefix whose ``bin/`` has ``mpirun``, ``ompi_info`` and ``ucx_info`` (an MPI this collection did not install);
    ``python`` an explicit interpreter that imports mpi4py. Both explicit settings win over the fact.

    Returns ``{source, flavour, prefix, mpirun, ompi_info, ucx_info, python, environment, problems}``; ``problems``
    lists what stops a job from being launched (the paths are then null), each line saying what to do.
    """
    tools = {'source': None, 'flavour': None, 'prefix': None, 'mpirun': None, 'ompi_info': None, 'ucx_info': None,
             'python': python or None, 'environment': {}, 'problems': []}
    if mpi_prefix:
        if not _absolute(mpi_prefix):
            raise ValueError('validate_mpi_prefix must be an absolute path, got %r' % (mpi_prefix,))
        prefix = mpi_prefix.rstrip('/') or '/'
        tools.update(source='validate_mpi_prefix', prefix=prefix,
                     **dict((tool, '%s/bin/%s' % (prefix.rstrip('/'), tool)) for tool in ('mpirun', 'ompi_info', 'ucx_info')))
        if isinstance(fact, dict) and not python and fact.get('prefix') == prefix:
            tools['python'] = fact.get('python')
    elif fact is None:
        tools['problems'].append('no MPI install recorded (%s is missing): run the hpcfabric.cluster.mpi role on this '
                                 'node first, or set validate_mpi_prefix' % FACT_FILE)
        return tools
    else:
        problems = fact_problems(fact)
        if problems:
            tools['problems'].extend(problems)
            return tools
        tools.update(source=FACT_FILE, flavour=fact['flavour'], prefix=fact['prefix'], mpirun=fact['mpirun'],
                     ompi_info=fact['ompi_info'], ucx_info=fact['ucx_info'],
                     environment=dict(fact.get('environment') or {}), python=python or fact.get('python'))
    if not tools['python']:
        tools['problems'].append('no Python with mpi4py for this MPI (the mpi role built none: mpi_mpi4py is false): '
                                 'set validate_python')
    return tools


def launch_tools_differ(tools, launcher_tools, launcher):
    """Lines naming where a node's tools differ from the launcher's: one mpirun starts the same paths everywhere."""
    if not isinstance(tools, dict) or not isinstance(launcher_tools, dict):
        return []
    if tools.get('problems') or launcher_tools.get('problems'):
        return []
    return ['MPI: %s %s, but the launcher %s has %s' % (field, tools.get(field), launcher, launcher_tools.get(field))
            for field in SAME_ON_EVERY_NODE if tools.get(field) != launcher_tools.get(field)]
