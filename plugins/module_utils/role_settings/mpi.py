# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The mpi role's input rules, and the layout of the hpcx and source flavours that the rules and the role's
vars/main.yml both read: the tarballs' names, the versions in them, the install prefix."""
from __future__ import annotations

import posixpath
import re

from ansible.module_utils.parsing.convert_bool import boolean
from ansible.module_utils.six.moves.urllib.parse import urlsplit

from ansible_collections.hpcfabric.cluster.plugins.module_utils.input_syntax import (
    named_problems, path_problem, path_settings_problems, url_problem)

# md5 and sha1 are refused: the checksum is what stands between a mirror and root on every node
CHECKSUM_RE = re.compile(r'^(sha256:[0-9a-fA-F]{64}|sha384:[0-9a-fA-F]{96}|sha512:[0-9a-fA-F]{128})$')
ARCHIVE_SUFFIX_RE = re.compile(r'[.](tbz2?|tar[.]bz2|tar[.]gz|tgz|tar[.]xz|txz)$')
VERSION_RE = re.compile(r'[0-9]+[.][0-9]+(?:[.][0-9]+)?(?:(?:a|b|rc)[0-9]+)?')
# a package of this role's build is named <prefix name>-<12 hex digits of its stamp's hash>.tar.gz
_PACKAGE_HASH_RE = re.compile(r'-[0-9a-f]{12}$')
# prefixes the role may replace wholesale must be its own directories: never a system one (path_problem), nor one of
# the parents of every HPC-X install and of the collection's own files
SHARED_PREFIXES = ('/opt/hpcx', '/opt/hpcfabric')
_OWN_DIR_RE = re.compile(r'^(/[^/]+){2,}$')
_SOURCE_TARBALLS = ('mpi_source_ucx', 'mpi_source_ompi')
URL_SETTINGS = ('mpi_hpcx_url', 'mpi_source_ucx_url', 'mpi_source_ompi_url', 'mpi_source_package_url')
# directories on the nodes the role creates, installs into or empties
OWNED_DIRS = ('mpi_download_dir', 'mpi_modulefiles_dir', 'mpi_source_build_dir', 'mpi_hpcx_prefix', 'mpi_source_prefix')


def _tarball(settings, name):
    url, src = settings.get(name + '_url'), settings.get(name + '_src')
    return posixpath.basename(urlsplit(url).path if url else (src or ''))


def _version(settings, name, tarball):
    found = VERSION_RE.search(tarball)
    return settings.get(name + '_version') or (found.group(0) if found else '')


def layout(settings):
    """``{hpcx_tarball, hpcx_name, hpcx_home, ucx_tarball, ompi_tarball, ucx_version, ompi_version, from_package,
    package_tarball, source_home, tarballs}`` of the mpi role's variables ``settings``.

    ``tarballs`` lists ``{name, url, src, checksum}`` of each tarball ``mpi_flavour`` fetches (the package of an earlier
    build replaces the two source tarballs); a version is the setting's, else the first version in the tarball's name.
    """
    hpcx_tarball = _tarball(settings, 'mpi_hpcx')
    hpcx_name = ARCHIVE_SUFFIX_RE.sub('', hpcx_tarball)
    ucx_tarball, ompi_tarball = (_tarball(settings, name) for name in _SOURCE_TARBALLS)
    ucx_version, ompi_version = _version(settings, 'mpi_source_ucx', ucx_tarball), _version(settings, 'mpi_source_ompi', ompi_tarball)
    package_tarball = _tarball(settings, 'mpi_source_package')
    from_package = bool(package_tarball)
    if from_package:
        built = '/opt/hpcfabric/' + _PACKAGE_HASH_RE.sub('', ARCHIVE_SUFFIX_RE.sub('', package_tarball))
    else:
        cuda = '-cuda' if boolean(settings.get('mpi_cuda') or False, strict=False) else ''
        built = '/opt/hpcfabric/openmpi-%s-ucx-%s%s' % (ompi_version, ucx_version, cuda)
    names = {'hpcx': ['mpi_hpcx'], 'source': ['mpi_source_package'] if from_package else list(_SOURCE_TARBALLS)}
    return {
        'hpcx_tarball': hpcx_tarball, 'hpcx_name': hpcx_name,
        'hpcx_home': settings.get('mpi_hpcx_prefix') or '/opt/hpcx/' + hpcx_name,
        'ucx_tarball': ucx_tarball, 'ompi_tarball': ompi_tarball,
        'ucx_version': ucx_version, 'ompi_version': ompi_version,
        'from_package': from_package, 'package_tarball': package_tarball,
        'source_home': settings.get('mpi_source_prefix') or built,
        'tarballs': [dict([('name', name)] + [(key, settings.get('%s_%s' % (name, key)) or '') for key in ('url', 'src', 'checksum')])
                     for name in names.get(settings.get('mpi_flavour'), [])],
    }


def _tarball_problems(settings, plan):
    flavour = settings.get('mpi_flavour')
    if flavour == 'source' and plan['from_package']:
        named = [name + suffix for name in _SOURCE_TARBALLS for suffix in ('_url', '_src') if settings.get(name + suffix)]
        if named:
            yield 'mpi_source_package_url', ('installs a build made before (as mpi_source_package_src does), so %s would '
                                             'be ignored; set one or the other' % ', '.join(named))
    for tarball in plan['tarballs']:
        if bool(tarball['url']) == bool(tarball['src']):
            yield tarball['name'] + '_url', ('mpi_flavour %s needs exactly one of %s_url and %s_src (got url %r, src %r)'
                                             % (flavour, tarball['name'], tarball['name'], tarball['url'], tarball['src']))
        if not CHECKSUM_RE.fullmatch(tarball['checksum']):
            yield tarball['name'] + '_checksum', ('must be sha256:<64 hex digits> (or sha384:/sha512:) and is required for '
                                                  'mpi_flavour %s; got %r' % (flavour, tarball['checksum']))
    if flavour == 'source' and not plan['from_package']:
        for name, tarball, version in (('mpi_source_ucx', plan['ucx_tarball'], plan['ucx_version']),
                                       ('mpi_source_ompi', plan['ompi_tarball'], plan['ompi_version'])):
            if not version:
                yield name + '_version', 'cannot tell the version of %r from its name; set %s_version' % (tarball, name)


def _prefix_problem(home):
    problem = path_problem(home)
    if problem:
        return problem
    if not _OWN_DIR_RE.fullmatch(home) or home in SHARED_PREFIXES:
        return ('%s must be a directory of its own, at least two levels deep and not one the collection shares (%s)'
                % (home, ', '.join(SHARED_PREFIXES)))
    return None


def problems(settings):
    """See ``role_settings``."""
    plan = layout(settings)
    found = list(_tarball_problems(settings, plan))
    allow_http = boolean(settings.get('mpi_allow_http') or False, strict=False)
    found += [(name, problem) for name, problem in
              ((name, settings.get(name) and url_problem(settings[name], allow_http, 'mpi_allow_http')) for name in URL_SETTINGS)
              if problem]
    found += path_settings_problems(settings, [(name, True) for name in OWNED_DIRS])
    flavour = settings.get('mpi_flavour')
    if flavour in ('hpcx', 'source'):
        variable, home = ('mpi_hpcx_prefix', plan['hpcx_home']) if flavour == 'hpcx' else ('mpi_source_prefix', plan['source_home'])
        problem = _prefix_problem(home)
        if problem and (variable, problem) not in found:
            found.append((variable, problem))
    # each lands on a line of its own in the MCA file or the job environment: a line break would start another
    found += named_problems({'mpi_ucx_net_devices': settings.get('mpi_ucx_net_devices')}, 'ucx_device')
    found += named_problems({'mpi_ucx_tls': settings.get('mpi_ucx_tls')}, 'ucx_transport')
    found += named_problems({'mpi_mca_params': settings.get('mpi_mca_params'),
                             'mpi_mca_params_extra': settings.get('mpi_mca_params_extra')}, 'mca_param')
    return found
