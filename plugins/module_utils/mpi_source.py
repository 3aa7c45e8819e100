# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The configure flags of the mpi role's ``source`` flavour: UCX first, then Open MPI against it.

Each flag is one argument (the install stamp records them as a list, and a changed list rebuilds). CUDA is always
said explicitly, ``--with-cuda=<home>`` or ``--without-cuda``, so that a node that happens to have a toolkit gets
the build its prefix name promises.

Open MPI 5 runs on PRRTE and PMIx. Its configure takes an external PMIx, hwloc or libevent when the node has one,
and stops when that one is too old for PRRTE (Debian 12's libpmix-dev 4.2.2: "PRRTE requires PMIx v4.2.4 or
above"). The role therefore builds Open MPI 5 with its bundled copies, which its own release was tested with,
unless the site names its own with ``--with-pmix=...`` and the like in ``mpi_source_ompi_configure_extra`` (a
Slurm site that launches with ``srun --mpi=pmix`` against the PMIx its Slurm was built with).

Slurm starts the ranks of a job with ``srun --mpi=pmix``: its plugin is the PMIx server, each rank's Open MPI the
client. A server whose PMIx was built with munge (Debian's libpmix2 depends on libmunge2) tells its clients to
authenticate with munge (``PMIX_SECURITY_MODE``), and a bundled PMIx built on a host without munge's headers - the
source build's, which installs none - has no munge component: ``pmix_psec_base_open failed``, every rank aborts
(seen in the lab with Open MPI 4.1.4 under Slurm 22.05; open-mpi/ompi#11557, #10307). With ``PMIX_MCA_psec=native``
in the job environment (a client keeps a value that is already set) the ranks authenticate the way PMIx does by
default, which every server accepts. A build against the site's own PMIx (``--with-pmix=<dir>``, such as the one its
Slurm uses) has that PMIx's components and gets no such setting.

UCX hard-codes ``-Werror`` in its build (``BASE_CFLAGS`` in ``config/m4/compiler.m4``), so a release builds only with
the compilers its authors had: UCX 1.13 and 1.14 stop on gcc 13's ``enum-int-mismatch`` (openucx/ucx#9058, fixed in
1.15; met by ``make gpu-proof`` on Ubuntu 24.04). Warnings of a release build are the authors' to fix, not a reason
for a node to have no MPI, so the role builds UCX with ``-Wno-error`` (it comes after ``-Werror`` on every compile
line), unless the site gives its own ``CFLAGS=`` or ``CXXFLAGS=``.
"""
from __future__ import annotations

import re

# the packages Open MPI 5 bundles and PRRTE depends on, in configure's option names
OMPI5_BUNDLED = ('pmix', 'prrte', 'hwloc', 'libevent')
# UCX's C++ parts (ucx_perftest) take BASE_CFLAGS too
UCX_NO_WERROR = ('CFLAGS=-Wno-error', 'CXXFLAGS=-Wno-error')
_MAJOR_RE = re.compile(r'^([0-9]+)[.]')


def _flag_names(flags):
    return set(flag.split('=', 1)[0] for flag in flags)


def configure_flags(prefix, ompi_version, cuda=False, cuda_home='/usr/local/cuda', cuda_libdir=None,
                    ucx_extra=(), ompi_extra=()):
    """``{'ucx': [...], 'ompi': [...]}``: the ./configure arguments of both builds into ``prefix``.

    ``cuda_libdir`` is where Open MPI finds ``libcuda.so`` to link (``--with-cuda-libdir``); None means the stub
    in NVIDIA's toolkit layout, ``<cuda_home>/lib64/stubs``.
    """
    match = _MAJOR_RE.match(ompi_version or '')
    if not match:
        raise ValueError('the Open MPI version must be major.minor[.patch], got %r' % (ompi_version,))
    ucx_extra, ompi_extra = list(ucx_extra or []), list(ompi_extra or [])
    if cuda:
        ucx_cuda = ['--with-cuda=%s' % cuda_home]
        ompi_cuda = ['--with-cuda=%s' % cuda_home, '--with-cuda-libdir=%s' % (cuda_libdir or cuda_home.rstrip('/') + '/lib64/stubs')]
    else:
        ucx_cuda = ompi_cuda = ['--without-cuda']
    bundled = []
    if int(match.group(1)) >= 5:
        named = _flag_names(ompi_extra)
        bundled = ['--with-%s=internal' % name for name in OMPI5_BUNDLED
                   if not {'--with-' + name, '--without-' + name} & named]
    ucx_named = _flag_names(ucx_extra)
    ucx_no_werror = [flag for flag in UCX_NO_WERROR if flag.split('=', 1)[0] not in ucx_named]
    return {'ucx': ['--prefix=%s' % prefix] + ucx_cuda + ucx_no_werror + ucx_extra,
            'ompi': ['--prefix=%s' % prefix, '--with-ucx=%s' % prefix] + ompi_cuda + bundled + ompi_extra}


def runtime_environment(prefix, ompi_extra=()):
    """The variables every process of the build at ``prefix`` runs with: its login shells, modules and jobs.

    ``OPAL_PREFIX`` lets a package unpacked into another prefix than it was built in find its components;
    ``PMIX_MCA_psec=native`` where Open MPI carries its bundled PMIx (no ``--with-pmix=<dir>`` in ``ompi_extra``).
    """
    env = {'MPI_HOME': prefix, 'OPAL_PREFIX': prefix}
    pmix = [flag.split('=', 1) for flag in (ompi_extra or []) if flag.split('=', 1)[0] in ('--with-pmix', '--without-pmix')]
    if not pmix or pmix[-1] == ['--with-pmix', 'internal']:
        env['PMIX_MCA_psec'] = 'native'
    return env


def build_plan(states, build_host=None):
    """Who builds the ``source`` flavour and who installs the package that build makes: the plan of one play.

    ``states`` maps each host of the play that builds from source to ``{'stamp': <the install stamp it wants, as
    text>, 'needed': <its prefix lacks that stamp>}``. Hosts that want the same stamp want the same build. One of them
    is its build host: ``build_host`` when it is among them, else the first that has the build already (a node added
    later gets the package of a build that exists, nothing is compiled), else the first. It builds when it lacks the
    build, and packs its prefix when any of them lacks it; every other one that lacks it installs that package.

    Returns ``{host: {'builder': host, 'build': bool, 'install': bool, 'pack': bool}}``: ``build`` for the builder
    when its own prefix lacks the stamp, ``install`` for the others that lack it, ``pack`` for the builder when any
    host of its group lacks the stamp. ValueError when ``build_host`` is named but is not a host of the play, or
    wants another build than hosts it would have to build for.
    """
    if not isinstance(states, dict):
        raise TypeError('the hosts\' build states must be a mapping, got %s' % type(states).__name__)
    groups = {}
    for host, state in states.items():
        if not isinstance(state, dict) or 'stamp' not in state or 'needed' not in state:
            raise ValueError('%s: a build state needs stamp and needed, got %r' % (host, state))
        groups.setdefault(state['stamp'], []).append(host)
    if build_host is not None and build_host not in states:
        raise ValueError('mpi_source_build_host %s is not a host of this play that builds the source flavour '
                         '(hosts: %s); run the role on it too' % (build_host, ', '.join(states) or 'none'))
    plan = {}
    for members in groups.values():
        needing = [host for host in members if states[host]['needed']]
        if build_host is not None and build_host not in members and needing:
            raise ValueError('mpi_source_build_host %s builds another stack than %s want (their mpi_source_* or '
                             'mpi_cuda settings differ): give those hosts the same settings, or leave '
                             'mpi_source_build_host unset' % (build_host, ', '.join(needing)))
        having = [host for host in members if not states[host]['needed']]
        builder = build_host if build_host in members else (having or members)[0]
        for host in members:
            plan[host] = {'builder': builder, 'build': host == builder and states[host]['needed'],
                          'install': host != builder and states[host]['needed'],
                          'pack': host == builder and bool(needing)}
    return plan
