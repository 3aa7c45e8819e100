# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Where pip takes packages from on a node, as the environment of the task that runs it (the pip_environment filter).

Every role that runs pip (mpi for mpi4py, validate for the bench environment) chooses between PyPI, a mirror and an
offline wheelhouse the controller copied to the node with this one function. The choice travels as ``PIP_*``
variables, not as pip options: with ``extra_args`` the pip module's check mode always reports a change.
"""
from __future__ import annotations


def pip_environment(environment=None, wheelhouse=None, index_url=None, no_binary=None, only_binary=None):
    """``environment`` (a proxy, ``PIP_CERT``; the caller's task keeps it out of logs) plus what chooses the source.

    ``wheelhouse``: a directory on the node; pip then reads only it (``PIP_NO_INDEX``, ``PIP_FIND_LINKS``) and never
    reaches an index, which is what an air-gapped node needs. ``index_url``: a mirror of PyPI (``PIP_INDEX_URL``);
    ignored with a wheelhouse. ``no_binary``: projects pip must build from source (mpi4py linked by the MPI's own
    compiler); ``only_binary``: projects pip must take as a wheel (mpi4py's, which loads any Open MPI's libmpi).
    pip's check for a newer pip is switched off: it is a request to PyPI that an offline node waits on.
    ValueError for a relative wheelhouse, a non-string variable or a list that is not one.
    """
    env = dict(environment or {})
    bad = sorted(str(k) for k, v in env.items() if not isinstance(k, str) or not isinstance(v, str))
    if bad:
        raise ValueError('the pip environment must map names to strings; %s %s not' % (', '.join(bad), 'is' if len(bad) == 1 else 'are'))
    env['PIP_DISABLE_PIP_VERSION_CHECK'] = '1'
    if wheelhouse:
        if not isinstance(wheelhouse, str) or not wheelhouse.startswith('/'):
            raise ValueError('the wheelhouse must be an absolute directory on the node, got %r' % (wheelhouse,))
        env.update(PIP_NO_INDEX='1', PIP_FIND_LINKS=wheelhouse)
    elif index_url:
        env['PIP_INDEX_URL'] = str(index_url)
    for variable, names, what in (('PIP_NO_BINARY', no_binary, 'no_binary'), ('PIP_ONLY_BINARY', only_binary, 'only_binary')):
        if names:
            if not isinstance(names, (list, tuple)) or not all(isinstance(name, str) and name for name in names):
                raise ValueError('%s must be a list of project names, got %r' % (what, names))
            env[variable] = ','.join(names)
    return env
