# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The files that add a signed package repository to a host, for every role that adds one (rdma's DOCA-OFED, the
slurm role's site repository): where its key, source and pin go, and what they say.

The roles write what these return: the key (an ASCII-armoured OpenPGP public key, which apt reads from a file named
``.asc``), a deb822 source that names the key with Signed-By (never ``trusted=yes``: apt checks every package list
against that key alone) and a pin on the repository's origin.
"""
from __future__ import annotations

import re
from urllib.parse import urlsplit

# Above apt's default 500, a pinned package comes from the repository even where another source has a newer version;
# below 1000, apt never downgrades an installed package to reach it.
APT_PIN_PRIORITY = 600
_NAME_RE = re.compile(r'^[a-z0-9][a-z0-9-]*$')
# a suite or component as apt reads it from a deb822 field: one word, no blank or comment
_SUITE_RE = re.compile(r'^[A-Za-z0-9._~+-][A-Za-z0-9._~+/-]*$')


def repository_files(name, repo_kind):
    """Where the key, the repository and (apt) the pin of the repository ``name`` go, per package manager."""
    if not isinstance(name, str) or not _NAME_RE.fullmatch(name):
        raise ValueError('a repository name is lower-case letters, digits and -, got %r' % (name,))
    if repo_kind == 'apt':
        return {'key': '/etc/apt/keyrings/hpcfabric-%s.asc' % name,
                'repo': '/etc/apt/sources.list.d/hpcfabric-%s.sources' % name,
                'pin': '/etc/apt/preferences.d/hpcfabric-%s.pref' % name}
    if repo_kind == 'dnf':
        return {'key': '/etc/pki/rpm-gpg/RPM-GPG-KEY-hpcfabric-%s' % name, 'repo': '/etc/yum.repos.d/hpcfabric-%s.repo' % name}
    raise ValueError('repository kind must be one of apt, dnf, got %r' % (repo_kind,))


def apt_suite_problem(suite, components):
    """None, or ``(field, why)``: the field (``suite`` or ``components``) apt would refuse in a deb822 source, and why.

    A suite that ends with ``/`` is a path under the URL (a flat repository, ``./`` for the URL itself, as
    dpkg-scanpackages and DOCA publish them) and takes no component; any other suite is a distribution under
    ``dists/`` and needs at least one (sources.list(5)).
    """
    if not isinstance(suite, str) or not _SUITE_RE.fullmatch(suite):
        return 'suite', ('%r is not an apt suite (a word such as stable, or a path ending in / such as ./ for a flat '
                         'repository)' % (suite,))
    if not isinstance(components, list) or any(not isinstance(item, str) or not _SUITE_RE.fullmatch(item)
                                               for item in components):
        return 'components', 'must be a list of words such as main, got %r' % (components,)
    if suite.endswith('/') and components:
        return 'components', ('must be empty for suite %s, a flat repository (its suite ends with /), got %s'
                              % (suite, ', '.join(components)))
    if not suite.endswith('/') and not components:
        return 'components', ('is empty, but suite %s is a distribution under dists/, which needs its components '
                              '(main, ...); a flat repository\'s suite ends with / (./)' % suite)
    return None


def apt_repository(name, url, suite='./', components=None):
    """The files (``repository_files``), deb822 source and pin that add the apt repository ``url`` as ``name``.

    ``apt_source`` holds the source's fields in the order they are written; ``apt_pin`` the repository's origin (the
    URL's host name without its port, as apt matches ``Pin: origin``; empty for a ``file:`` repository) and the
    priority.
    """
    if not isinstance(url, str) or not url:
        raise ValueError('the repository URL must be a non-empty string, got %r' % (url,))
    components = [] if components is None else components
    problem = apt_suite_problem(suite, components)
    if problem:
        raise ValueError('%s: %s' % problem)
    files = repository_files(name, 'apt')
    source = {'Types': 'deb', 'URIs': url, 'Suites': suite}
    if components:
        source['Components'] = ' '.join(components)
    source['Signed-By'] = files['key']
    return {'files': files, 'apt_source': source,
            'apt_pin': {'origin': urlsplit(url).hostname or '', 'priority': APT_PIN_PRIORITY}}
