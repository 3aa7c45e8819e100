# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Pure parsers for ``ompi_info --parsable --all``, ``ucx_info -v`` and ``ucx_info -d`` text.

Every parser returns ``(facts, warnings)``: facts that could not be read are ``None`` and a
warning says why, so a support bundle with partial output still yields what is there.
Text with nothing recognisable raises :class:`MpiInfoParseError` naming the command and line.
"""

from __future__ import annotations

import re

OMPI_INFO = 'ompi_info --parsable --all'
UCX_INFO_VERSION = 'ucx_info -v'
UCX_INFO_DEVICES = 'ucx_info -d'

# Parsable lines are colon-separated keys whose first field is a lower-case word
# (package, ompi, mca, options, ...); ompi_info's human-readable form indents capitalised labels.
_PARSABLE_KEY = re.compile(r'^[a-z][a-z0-9_-]*:')
_CUDA_PARAM = 'mca:mpi:base:param:mpi_built_with_cuda_support:value:'
_VERSION_KEY = 'ompi:version:full:'

_UCX_VERSION = re.compile(r'^#\s*(?:Library version:|Version|UCT version=)\s*(\d+\.\d+[\w.\-]*)')
_UCX_CONFIGURED = re.compile(r'^#\s*Configured with:(.*)$')
_UCX_BUILD_FLAGS = re.compile(r'^#define\s+UCX_CONFIGURE_FLAGS\s+"(.*)"\s*$')
_UCX_HAVE_CUDA = re.compile(r'^#define\s+HAVE_CUDA\s+1\s*$')
_UCX_TRANSPORT = re.compile(r'^#\s*Transport:\s*(\S+)')


class MpiInfoParseError(ValueError):
    """Raised when a command's output holds nothing the parser recognises."""

    def __init__(self, command, line, reason):
        self.command = command
        self.line = line
        self.reason = reason
        super(MpiInfoParseError, self).__init__('%s: %s; offending line: %r' % (command, reason, line))


def _first_line(text):
    for line in text.splitlines():
        if line.strip():
            return line
    return ''


def _cuda_value(raw, line, warnings):
    value = raw.strip().lower()
    if value in ('true', 'false'):
        return value == 'true'
    warnings.append('%s: mpi_built_with_cuda_support has an unrecognised value %r '
                    '(expected true or false); cuda_aware left unknown; line: %r' % (OMPI_INFO, raw, line))
    return None


def parse_ompi_info(text):
    """Parse ``ompi_info --parsable --all``.

    ``cuda_aware`` comes only from ``mca:mpi:base:param:mpi_built_with_cuda_support:value``:
    the "MPI extensions" list names ``cuda`` on builds without CUDA support too.
    Returns ``({implementation, version, cuda_aware}, warnings)``.
    """
    warnings = []
    facts = {'implementation': None, 'version': None, 'cuda_aware': None}
    parsable_lines = 0
    cuda_seen = False
    for raw_line in text.splitlines():
        line = raw_line.strip()
        if not _PARSABLE_KEY.match(line):
            continue
        parsable_lines += 1
        if line.startswith(_VERSION_KEY):
            facts['version'] = line[len(_VERSION_KEY):].strip() or None
        elif line.startswith(_CUDA_PARAM):
            cuda_seen = True
            facts['cuda_aware'] = _cuda_value(line[len(_CUDA_PARAM):], raw_line, warnings)
    if not parsable_lines:
        raise MpiInfoParseError(OMPI_INFO, _first_line(text),
                                'no --parsable output found (expected lines such as '
                                "'ompi:version:full:4.1.4'); was ompi_info run with --parsable --all?")
    facts['implementation'] = 'Open MPI'
    if facts['version'] is None:
        warnings.append('%s: no ompi:version:full line; version unknown' % OMPI_INFO)
    if not cuda_seen:
        warnings.append('%s: no mpi_built_with_cuda_support:value line (output without --all?); '
                        'cuda_aware unknown' % OMPI_INFO)
    return facts, warnings


def _cuda_from_flags(flags):
    """Return True/False for an explicit --with-cuda / --without-cuda, None when not mentioned.

    The last occurrence wins, as it does for configure itself.
    """
    result = None
    for flag in flags.split():
        flag = flag.strip('\'"')
        if flag == '--without-cuda' or flag == '--with-cuda=no':
            result = False
        elif flag == '--with-cuda' or flag.startswith('--with-cuda='):
            result = True
    return result


def parse_ucx_version(text):
    """Parse ``ucx_info -v`` (``ucx_info -b`` build-configuration lines are understood too).

    ``configured_with_cuda`` is true for ``--with-cuda[=<path>]`` or ``#define HAVE_CUDA 1``,
    false for ``--without-cuda`` or a configure line that does not mention CUDA, and None when
    the text has no configure line at all. Returns ``({version, configured_with_cuda}, warnings)``.
    """
    warnings = []
    version = None
    flags_seen = False
    from_flags = None
    have_cuda = False
    for raw_line in text.splitlines():
        line = raw_line.strip()
        match = _UCX_VERSION.match(line)
        if match and version is None:
            version = match.group(1)
            continue
        match = _UCX_CONFIGURED.match(line) or _UCX_BUILD_FLAGS.match(line)
        if match:
            flags_seen = True
            explicit = _cuda_from_flags(match.group(1))
            if explicit is not None:
                from_flags = explicit
            continue
        if _UCX_HAVE_CUDA.match(line):
            have_cuda = True
    if version is None and not flags_seen and not have_cuda:
        raise MpiInfoParseError(UCX_INFO_VERSION, _first_line(text),
                                "no '# Library version:' or '# Configured with:' line found")
    if have_cuda or from_flags:
        configured = True
    elif flags_seen:
        configured = False
    else:
        configured = None
        warnings.append('%s: no "Configured with" line; configured_with_cuda unknown' % UCX_INFO_VERSION)
    if version is None:
        warnings.append('%s: no version line; UCX version unknown' % UCX_INFO_VERSION)
    return {'version': version, 'configured_with_cuda': configured}, warnings


def parse_ucx_devices(text):
    """Parse ``ucx_info -d`` (or its ``grep Transport`` excerpt) into sorted unique transport names.

    Returns ``(transports, warnings)``.
    """
    transports = set()
    domains = 0
    for raw_line in text.splitlines():
        line = raw_line.strip()
        match = _UCX_TRANSPORT.match(line)
        if match:
            transports.add(match.group(1))
        elif line.startswith('# Memory domain:'):
            domains += 1
    if not transports and not domains:
        raise MpiInfoParseError(UCX_INFO_DEVICES, _first_line(text),
                                "no '# Transport:' or '# Memory domain:' line found")
    warnings = []
    if not transports:
        warnings.append('%s: memory domains listed but no transports; UCX found no usable device' % UCX_INFO_DEVICES)
    return sorted(transports), warnings


def empty_ucx():
    """UCX facts when UCX output is absent: unknown version and build, no transports."""
    return {'version': None, 'configured_with_cuda': None, 'transports': []}


def mpi_facts(ompi_text=None, ucx_version_text=None, ucx_devices_text=None):
    """Build the ``ansible_facts.mpi`` dict from whichever texts are given (None = not given).

    Returns ``(facts, warnings)``; raises :class:`MpiInfoParseError` for unreadable text.
    """
    warnings = []
    facts = {'implementation': None, 'version': None, 'cuda_aware': None, 'ucx': empty_ucx()}
    if ompi_text is not None:
        ompi, found = parse_ompi_info(ompi_text)
        facts.update(ompi)
        warnings.extend(found)
    if ucx_version_text is not None:
        ucx, found = parse_ucx_version(ucx_version_text)
        facts['ucx'].update(ucx)
        warnings.extend(found)
    if ucx_devices_text is not None:
        transports, found = parse_ucx_devices(ucx_devices_text)
        facts['ucx']['transports'] = transports
        warnings.extend(found)
    return facts, warnings
