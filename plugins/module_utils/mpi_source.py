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
"""
from __future__ import annotations

import re

# the packages Open MPI 5 bundles and PRRTE depends on, in configure's option names
OMPI5_BUNDLED = ('pmix', 'prrte', 'hwloc', 'libevent')
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
    return {'ucx': ['--prefix=%s' % prefix] + ucx_cuda + ucx_extra,
            'ompi': ['--prefix=%s' % prefix, '--with-ucx=%s' % prefix] + ompi_cuda + bundled + ompi_extra}
