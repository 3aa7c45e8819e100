# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Pure parsers for ``ompi_info --parsable --all``, ``ucx_info -v`` and ``ucx_info -d`` text.

Every parser returns ``(facts, warnings)``: facts that could not be read are ``None`` and a
warning says why, so a support bundle with partial output still yields what is there; lines that
are not the command's output (a UCX error line, a shell prompt) are skipped and named in a warning.
Text with nothing recognisable raises :class:`MpiInfoParseError` naming the command and line.
Terminal escapes of a pasted copy are removed first (``pasted_text.clean``).
"""

from __future__ import annotations

import re

from ansible_collections.hpcfabric.cluster.plugins.module_utils.pasted_text import clean, skipped_lines

OMPI_INFO = 'ompi_info --parsable --all'
OMPI_INFO_HUMAN = 'ompi_info (human-readable form)'
UCX_INFO_VERSION = 'ucx_info -v'
UCX_INFO_DEVICES = 'ucx_info -d'

# Parsable lines are colon-separated keys whose first field is a lower-case word directly followed by its
# value (package:Debian OpenMPI, mca:..., ident:5.0.7); "bash: ompi_info: not found" has a space there.
_PARSABLE_KEY = re.compile(r'^[a-z][a-z0-9_-]*:\S')
# Whether CUDA support was built in: Open MPI 4 registers it as mpi_built_with_cuda_support, Open MPI 5 as
# opal_built_with_cuda_support with the mpi_ name as its synonym (5.0.7 prints both blocks with --all, a
# grep for one of them shows only that one). The values of the two names are one variable.
_CUDA_PARAMS = ('mca:mpi:base:param:mpi_built_with_cuda_support:value:',
                'mca:opal:base:param:opal_built_with_cuda_support:value:')
_VERSION_KEY = 'ompi:version:full:'
# The human-readable form (`ompi_info --all | grep -i cuda`):
#   MCA opal base: informational "opal_built_with_cuda_support" (current value: "false", ...)
#   MCA mpi base: parameter "mpi_built_with_cuda_support" (current value: "false", ...)
_HUMAN_CUDA = re.compile(r'^MCA\s.*?:\s*(?:parameter|informational)\s+"((?:mpi|opal)_built_with_cuda_support)"'
                         r'\s+\(current value:\s*"([^"]*)"')
_HUMAN_MCA = re.compile(r'^MCA\s')
# the coll components the build has: `mca:coll:ucc:version:"component:4.1.4"` (parsable), `MCA coll: ucc (MCA v2.1.0,
# API v2.0.0, Component v4.1.4)` (human); coll/ucc is the one that reduces device buffers on the GPU
_PARSABLE_COLL = re.compile(r'^mca:coll:([a-z0-9_]+):version:"?component:')
_HUMAN_COLL = re.compile(r'^MCA coll:\s*([a-z0-9_]+)\s*\(')
_HUMAN_VERSION = re.compile(r'^Open MPI:\s*(\d\S*)$')
_HUMAN_EXTENSIONS = re.compile(r'^MPI extensions:')
# ompi_info right-aligns its labels and indents wrapped help text, so its own human lines start with a space
_HUMAN_INDENTED = re.compile(r'^\s+\S')

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


def _cuda_value(raw, line, warnings, command):
    value = raw.strip().lower()
    if value in ('true', 'false'):
        return value == 'true'
    warnings.append('%s: built_with_cuda_support has an unrecognised value %r '
                    '(expected true or false); cuda_aware left unknown; line: %r' % (command, raw, line))
    return None


def _cuda_aware(values, warnings, command):
    """One answer from every CUDA-support line read: the lines must agree, else it is unknown."""
    known = set(value for value in values if value is not None)
    if len(known) > 1:
        warnings.append('%s: the built_with_cuda_support lines disagree (true and false); cuda_aware left unknown'
                        % command)
        return None
    return known.pop() if known else None


class _OmpiLines:
    """What each line of ompi_info text holds, in either form."""

    def __init__(self):
        self.parsable = 0
        self.human = 0
        self.version = None
        self.cuda = []
        self.coll = set()
        self.unreadable = []

    def read(self, lineno, raw_line, warnings):
        line = raw_line.strip()
        if not line:
            return
        if _PARSABLE_KEY.match(line):
            self.parsable += 1
            if line.startswith(_VERSION_KEY):
                self.version = line[len(_VERSION_KEY):].strip() or None
            coll = _PARSABLE_COLL.match(line)
            if coll:
                self.coll.add(coll.group(1))
            for key in _CUDA_PARAMS:
                if line.startswith(key):
                    self.cuda.append(_cuda_value(line[len(key):], raw_line, warnings, OMPI_INFO))
            return
        human = _HUMAN_CUDA.match(line)
        if human:
            self.human += 1
            self.cuda.append(_cuda_value(human.group(2), raw_line, warnings, OMPI_INFO_HUMAN))
            return
        version = _HUMAN_VERSION.match(line)
        if version:
            self.human += 1
            self.version = version.group(1)
        elif _HUMAN_MCA.match(line) or _HUMAN_EXTENSIONS.match(line):
            self.human += 1
            coll = _HUMAN_COLL.match(line)
            if coll:
                self.coll.add(coll.group(1))
        elif not _HUMAN_INDENTED.match(raw_line):
            self.unreadable.append((lineno, raw_line))


def parse_ompi_info(text):
    """Parse ``ompi_info --parsable --all``, or the human-readable ``ompi_info [--all] | grep -i cuda`` form.

    ``cuda_aware`` comes only from the ``mpi_built_with_cuda_support`` value (Open MPI 5:
    ``opal_built_with_cuda_support``, its synonym), in either form: the "MPI extensions" list names
    ``cuda`` on builds without CUDA support too. ``coll_components`` are the coll components the text lists (sorted;
    None where it lists none). Returns ``({implementation, version, cuda_aware, coll_components}, warnings)``.
    """
    warnings = []
    lines = _OmpiLines()
    for lineno, raw_line in enumerate(clean(text).splitlines(), 1):
        lines.read(lineno, raw_line, warnings)
    if not lines.parsable and not lines.human:
        raise MpiInfoParseError(OMPI_INFO, _first_line(text),
                                'no --parsable output found (expected lines such as '
                                "'ompi:version:full:4.1.4') and no human-readable MCA line; "
                                'was ompi_info run with --parsable --all?')
    command = OMPI_INFO if lines.parsable else OMPI_INFO_HUMAN
    facts = {'implementation': 'Open MPI', 'version': lines.version,
             'cuda_aware': _cuda_aware(lines.cuda, warnings, command),
             'coll_components': sorted(lines.coll) or None}
    if facts['version'] is None:
        warnings.append('%s: no %s line; version unknown'
                        % (command, 'ompi:version:full' if lines.parsable else "'Open MPI:'"))
    if not lines.cuda and lines.parsable:
        warnings.append('%s: no mpi_built_with_cuda_support:value line (output without --all?); '
                        'cuda_aware unknown' % command)
    elif not lines.cuda:
        # `ompi_info | grep -i cuda` without --all shows only "MPI extensions", which says nothing about the build
        warnings.append('%s: no "mpi_built_with_cuda_support" parameter line (run ompi_info --all, or better '
                        'ompi_info --parsable --all); the MPI extensions list names cuda on builds without CUDA '
                        'support too, so cuda_aware is unknown' % command)
    warnings.extend(skipped_lines('ompi_info', lines.unreadable))
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

    Every line ucx_info prints starts with ``#``; others (UCX's own ``[time] [host:pid] ... UCX ERROR`` log
    lines, a prompt) are skipped and named in a warning.

    ``configured_with_cuda`` is true for ``--with-cuda[=<path>]`` or ``#define HAVE_CUDA 1``,
    false for ``--without-cuda`` or a configure line that does not mention CUDA, and None when
    the text has no configure line at all. Returns ``({version, configured_with_cuda}, warnings)``.
    """
    warnings = []
    version = None
    flags_seen = False
    from_flags = None
    have_cuda = False
    unreadable = []
    for lineno, raw_line in enumerate(clean(text).splitlines(), 1):
        line = raw_line.strip()
        if line and not line.startswith('#'):
            unreadable.append((lineno, raw_line))
            continue
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
    warnings.extend(skipped_lines(UCX_INFO_VERSION, unreadable))
    return {'version': version, 'configured_with_cuda': configured}, warnings


def parse_ucx_devices(text):
    """Parse ``ucx_info -d`` (or its ``grep Transport`` excerpt) into sorted unique transport names.

    Returns ``(transports, warnings)``.
    """
    transports = set()
    domains = 0
    unreadable = []
    for lineno, raw_line in enumerate(clean(text).splitlines(), 1):
        line = raw_line.strip()
        if line and not line.startswith('#'):
            unreadable.append((lineno, raw_line))
            continue
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
    warnings.extend(skipped_lines(UCX_INFO_DEVICES, unreadable))
    return sorted(transports), warnings


def empty_ucx():
    """UCX facts when UCX output is absent: unknown version and build, no transports."""
    return {'version': None, 'configured_with_cuda': None, 'transports': []}


def mpi_facts(ompi_text=None, ucx_version_text=None, ucx_devices_text=None):
    """Build the ``ansible_facts.mpi`` dict from whichever texts are given (None = not given).

    Returns ``(facts, warnings)``; raises :class:`MpiInfoParseError` for unreadable text.
    """
    warnings = []
    facts = {'implementation': None, 'version': None, 'cuda_aware': None, 'coll_components': None, 'ucx': empty_ucx()}
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


# UCX's CUDA transports a CUDA-aware job needs; `ucx_info -d` lists them only where cuInit() succeeds, i.e. on a node
# with an NVIDIA GPU and its driver loaded
CUDA_TRANSPORTS = ('cuda_copy', 'cuda_ipc')


def stack_problems(facts, cuda=False, gpu_driver=False, expected=None, ucc=False):
    """Why an installed MPI stack, as ``mpi_facts`` read it, is not the one asked for: ``[]`` when it is.

    ``cuda`` asks for a CUDA-aware stack: Open MPI built with CUDA support and UCX configured with CUDA, read from
    the build itself. Its CUDA transports are required only with ``gpu_driver`` (the node has a loaded NVIDIA
    driver): without one UCX cannot open a CUDA context and lists none, however it was built.
    ``expected`` maps ``ompi`` and ``ucx`` to the versions the role installed (absent: not checked).
    ``ucc`` asks for Open MPI's coll/ucc component (``mpi_ucc``), which the build must have.
    """
    problems = []
    if ucc and 'ucc' not in (facts.get('coll_components') or []):
        problems.append('mpi_ucc asks for the coll/ucc component, which this Open MPI lacks (coll components: %s): '
                        'HPC-X has it; a source build needs UCC and --with-ucc'
                        % (', '.join(facts.get('coll_components') or []) or 'unknown'))
    ucx = facts.get('ucx') or empty_ucx()
    if facts.get('implementation') != 'Open MPI':
        problems.append('the MPI is %s, not Open MPI' % (facts.get('implementation') or 'unknown'))
    for key, name, found in (('ompi', 'Open MPI', facts.get('version')), ('ucx', 'UCX', ucx.get('version'))):
        wanted = (expected or {}).get(key)
        if wanted and found != wanted:
            problems.append('%s is version %s, expected %s' % (name, found or 'unknown', wanted))
    if not cuda:
        return problems
    if facts.get('cuda_aware') is not True:
        problems.append('Open MPI is not CUDA-aware (mpi_built_with_cuda_support: %s)'
                        % {False: 'false', None: 'unknown'}.get(facts.get('cuda_aware'), facts.get('cuda_aware')))
    if ucx.get('configured_with_cuda') is not True:
        problems.append('UCX was not configured with CUDA (ucx_info -v: %s)'
                        % ('no --with-cuda' if ucx.get('configured_with_cuda') is False else 'build flags unknown'))
    missing = [name for name in CUDA_TRANSPORTS if name not in (ucx.get('transports') or [])]
    if gpu_driver and missing:
        problems.append('UCX lists no %s transport although the NVIDIA driver is loaded (ucx_info -d: %s)'
                        % ('/'.join(missing), ','.join(ucx.get('transports') or []) or 'none'))
    return problems
