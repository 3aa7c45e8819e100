# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The rdma role's input rules: one RDMA stack, DOCA-OFED's repository and its one signing key, module names."""
from __future__ import annotations

import re

from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.hpcfabric.cluster.plugins.module_utils.input_syntax import url_problem

DOCA_SETTINGS = ('rdma_doca_repo_url', 'rdma_doca_repo_key_url', 'rdma_doca_repo_key_src')
_MODULE_RE = re.compile(r'^[A-Za-z0-9_-]+$')


def _doca_problems(settings):
    url, key_url, key_src = (settings.get(name) or '' for name in DOCA_SETTINGS)
    if not url:
        yield 'rdma_doca_repo_url', ('rdma_stack doca needs the DOCA-OFED repository of this OS and architecture (an '
                                     'https or file URL, e.g. https://linux.mellanox.com/public/repo/doca/RELEASE/'
                                     'ubuntu24.04/x86_64/)')
    allow_http = boolean(settings.get('rdma_allow_http') or False, strict=False)
    for name in ('rdma_doca_repo_url', 'rdma_doca_repo_key_url'):
        problem = settings.get(name) and url_problem(settings[name], allow_http, 'rdma_allow_http')
        if problem:
            yield name, problem
    if bool(key_url) == bool(key_src):
        yield 'rdma_doca_repo_key_url', ('the repository needs its signing key from exactly one of rdma_doca_repo_key_url '
                                         'and rdma_doca_repo_key_src (got url %r, src %r); the role adds no unsigned '
                                         'repository' % (key_url, key_src))
    if not settings.get('rdma_doca_packages'):
        yield 'rdma_doca_packages', ('is empty; name the DOCA profile to install (doca-ofed, or doca-roce, '
                                     'doca-networking, doca-all)')


def problems(settings):
    """See ``role_settings``."""
    found = []
    if settings.get('rdma_stack') == 'doca':
        found += list(_doca_problems(settings))
    else:
        named = [name for name in DOCA_SETTINGS if settings.get(name)]
        if named:
            found.append(('rdma_stack', '%s set but rdma_stack is %s; the role installs one RDMA stack, never both: set '
                          'rdma_stack: doca to install DOCA-OFED, or drop the DOCA settings'
                          % (', '.join(named), settings.get('rdma_stack'))))
    modules = settings.get('rdma_roce_modules') or []
    found += [('rdma_roce_modules[%d]' % index, '%r is not a kernel module name (letters, digits, _ and -)' % (name,))
              for index, name in enumerate(modules) if not isinstance(name, str) or not _MODULE_RE.fullmatch(name)]
    return found
