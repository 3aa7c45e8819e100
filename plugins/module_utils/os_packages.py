# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Which OS packages a host lacks, read from its package database (dpkg or rpm) without the package manager's Python
bindings: a node whose image already has everything (a GPU node without network, a golden image) is then never asked
for python3-apt, which Ansible's apt module needs even to find nothing to do.

The query's output is one line per package: ``NAME<TAB>STATUS<TAB>PROVIDES``, STATUS dpkg's ``db:Status-Abbrev``
(installed when its second letter is ``i``; rpm lists only installed packages and prints ``ii``), PROVIDES the
package's virtual names separated by commas, each maybe followed by a version constraint (``librdmacm1 (= 56.1-1)``).
A wanted name is there when an installed package has it as its name or among what it provides: Debian 13 and
Ubuntu 24.04 ship ``librdmacm1`` as ``librdmacm1t64``, which provides the old name."""
from __future__ import annotations

# per OS family, the query whose output installed_names() reads
QUERY_ARGV = {
    'Debian': ['dpkg-query', '-W', '-f=${Package}\t${db:Status-Abbrev}\t${Provides}\n'],
    'RedHat': ['rpm', '-qa', '--qf', '%{NAME}\tii\t[%{PROVIDENAME}, ]\n'],
}


def query_argv(os_family):
    """The command that lists the installed packages on OS family ``os_family``; ValueError for another family."""
    try:
        return list(QUERY_ARGV[os_family])
    except KeyError:
        raise ValueError('no package query for OS family %r: known are %s' % (os_family, ', '.join(sorted(QUERY_ARGV))))


def installed_names(lines):
    """Every name the installed packages answer to (their names and what they provide), from the query's lines."""
    names = set()
    for line in lines:
        fields = line.rstrip('\n').split('\t')
        if len(fields) < 2 or not fields[0] or fields[1][1:2] != 'i':
            continue
        names.add(fields[0].split(':')[0])
        for provided in (fields[2] if len(fields) > 2 else '').split(','):
            word = provided.strip().split(' ')[0]
            if word:
                names.add(word.split(':')[0])
    return names


def missing(wanted, lines):
    """The names of ``wanted`` (in its order, each once) that no installed package has or provides."""
    if isinstance(wanted, str) or not all(isinstance(name, str) and name for name in wanted):
        raise ValueError('the wanted packages must be a list of names, got %r' % (wanted,))
    if isinstance(lines, str):
        lines = lines.splitlines()
    have = installed_names(lines)
    out = []
    for name in wanted:
        if name.split(':')[0] not in have and name not in out:
            out.append(name)
    return out
