# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The nvidia_driver role's decisions, as plain functions.

What the host has (NVIDIA PCI functions: GPUs, NVSwitches, GPUs older than Turing; whether the board has
fourth-generation NVSwitches, which are not on the PCI bus), what the role installs for a
given OS, source, branch and setting (package names and the package sets, the repository, the CUDA toolkits), which
driver version it installs and at which full version each package that must match the driver is, what changed
in the kernel module packages, and which GPUDirect RDMA path the node has (``dmabuf_capable`` is also the
validation's preflight answer). The role's YAML reads the dicts that ``driver_plan``, ``resolve_driver``,
``installed_versions``, ``module_changes`` and ``gpudirect`` return, through the filters of
plugins/filter/nvidia_driver.py; the module nvidia_pci_facts uses ``read_pci_functions``, ``read_nvlink_bridges``
and ``classify_pci`` on the host, so this file is stdlib only and runs on Python 3.8. docs/nvidia_driver.md says where the NVSwitch facts come from.
"""
from __future__ import annotations

import os
import re

NVIDIA_VENDOR = '0x10de'
# class 0x0300xx VGA or 0x0302xx 3D controller: a GPU; class 0x0680xx (bridge, other) from NVIDIA: an NVSwitch
_GPU_CLASS = re.compile(r'^0x030[02]')
_NVSWITCH_CLASS = re.compile(r'^0x0680')
# Every Kepler, Maxwell, Pascal and Volta GPU has a PCI device id below 0x1e00 (Volta GV100 ends at 0x1dbx and
# 0x1df6); Turing starts at TU102's 0x1e02. The open modules need Turing or later (GSP); R580 is the last branch
# that drives the older ones, and CUDA 13 no longer builds for them.
TURING_FIRST_DEVICE = 0x1e00

# Fourth-generation NVSwitches (NVLink 5: DGX/HGX B200, B300, HGX B100) are not PCI devices of the host: NVIDIA's
# Fabric Manager user guide (release 2.3, "NVIDIA HGX B200/B300 GPU Baseboard") says they are reached through a
# ConnectX-7 bridge on the baseboard, whose limited PFs carry the vendor-specific VPD field SMDL with the value SW_MNG
# (the FM unit's start script finds them that way). The board is also known by its GPUs: these are the pci.ids
# (pciutils/pciids) device ids of the GPUs of those baseboards. GB200/GB300 (0x2941, 0x31c2, 0x31c3) are NVL72
# compute trays whose NVSwitches sit in switch trays run by NVOS, so they are not among them.
MELLANOX_VENDOR = '0x15b3'
NVLINK_MANAGEMENT_VPD = b'SW_MNG'
NVSWITCH_GEN4_GPUS = {
    0x2901: 'B200',
    0x2909: 'HGX B200 168GB',
    0x2920: 'TS4 / B100',
    0x29bc: 'B100',
    0x3182: 'B300 SXM6 AC',
}
# the guide's minimum driver for HGX B200/B300 and B100 ("Minimum NVIDIA Driver/Fabric Manager Version")
NVSWITCH_GEN4_MIN_BRANCH = 570
# the largest VPD the PCI specification allows (a 15-bit address); sysfs serves no more
_VPD_MAX = 32768

# CUDA releases with a toolkit package (cuda-toolkit-X-Y) in NVIDIA's repositories, oldest first; an OS offers those
# from its first one on (13.3 was the newest in the ubuntu2404 index in May 2026; a mirror with a later one:
# nvidia_driver_cuda_offered)
CUDA_RELEASES = ('11.0', '11.1', '11.2', '11.3', '11.4', '11.5', '11.6', '11.7', '11.8',
                 '12.0', '12.1', '12.2', '12.3', '12.4', '12.5', '12.6', '12.7', '12.8', '12.9',
                 '13.0', '13.1', '13.2', '13.3')
# the oldest driver branch each CUDA major runs on (CUDA minor version compatibility; CUDA 13 needs R580)
CUDA_MIN_BRANCH = {'11': 450, '12': 525, '13': 580}

NVIDIA_REPOSITORIES = 'https://developer.download.nvidia.com/compute/cuda/repos/'
# NVIDIA's layout is <base>/<distro><release>/<arch>/; Grace and other Arm servers use the sbsa tree
_REPOSITORY_ARCH = {'x86_64': 'x86_64', 'aarch64': 'sbsa'}

PACKAGE_SCHEMES = ('debian', 'ubuntu', 'redhat')
# NVLSM from NVIDIA's CUDA repository (calendar-versioned, e.g. 2025.10.12-1: not tied to the driver), and Debian's and
# Ubuntu's rdma-core packages the Fabric Manager user guide names ("Other NVIDIA Software Packages")
_APT_NVLINK5 = ('nvlsm', 'libibumad3', 'infiniband-diags')
# Packages a site may add that NVIDIA builds for one driver version (version = the driver's, name with the branch up
# to R575/R580): the NVLink 5 metapackage, the fabric manager, NSCQ, NVSDM, IMEX
_DRIVER_COUPLED = re.compile(r'^(nvlink5?|nvidia-fabric-?manager|cuda-drivers-fabricmanager|libnvidia-nscq|libnvsdm'
                             r'|nvidia-imex)(?:-([0-9]+))?$')
_EPOCH = re.compile(r'^[0-9]+:')
_RELEASE = re.compile(r'-[^-]*$')

# GPUDirect RDMA: nvidia-peermem plugs into the peer-memory API that only MLNX_OFED and DOCA-OFED add to the RDMA
# core; with inbox rdma-core the path is DMA-BUF, which needs the open kernel modules (they export GPU memory as a
# dma-buf) and Linux 5.12 or later (the first kernel whose RDMA core imports one)
DMABUF_MIN_KERNEL = (5, 12)
GPUDIRECT_MODES = ('auto', 'peermem', 'dmabuf', 'none')
_KERNEL_RELEASE = re.compile(r'^([0-9]+)[.]([0-9]+)')


# --- the host's PCI functions ---------------------------------------------------------------------------------------

def _read_attribute(directory, name):
    try:
        with open(os.path.join(directory, name)) as attribute:
            return attribute.read().strip()
    except OSError:
        return None


def _read_vpd(directory):
    try:
        with open(os.path.join(directory, 'vpd'), 'rb') as vpd:
            return vpd.read(_VPD_MAX)
    except OSError:
        return b''


def _vendor_functions(devices_dir, vendor):
    if not os.path.isdir(devices_dir):
        raise ValueError('no such directory: %s' % devices_dir)
    functions = []
    for slot in sorted(os.listdir(devices_dir)):
        path = os.path.join(devices_dir, slot)
        if (_read_attribute(path, 'vendor') or '').lower() != vendor:
            continue
        pci_class, device = _read_attribute(path, 'class'), _read_attribute(path, 'device')
        if pci_class and device:
            functions.append({'slot': slot, 'class': pci_class.lower(), 'device': device.lower(), 'path': path})
    return functions


def read_pci_functions(devices_dir):
    """NVIDIA's PCI functions under ``devices_dir`` (sysfs' /sys/bus/pci/devices), in slot order.

    Returns ``[{'slot', 'class', 'device'}]`` with class and device id in lower case as sysfs writes them
    (``0x030200``, ``0x2330``). Entries without a readable vendor, class or device are passed over. Raises
    ValueError when ``devices_dir`` is not a directory.
    """
    return [{k: f[k] for k in ('slot', 'class', 'device')} for f in _vendor_functions(devices_dir, NVIDIA_VENDOR)]


def vpd_marks_nvlink_management(vpd):
    """Whether a PCI function's VPD (bytes) carries SW_MNG, the SMDL value of an NVLink management bridge port."""
    return NVLINK_MANAGEMENT_VPD in vpd


def read_nvlink_bridges(devices_dir):
    """The ConnectX bridge functions for NVLink management under ``devices_dir``, in slot order.

    Mellanox/NVIDIA networking functions (vendor 0x15b3) whose ``vpd`` marks them (``vpd_marks_nvlink_management``);
    ``[{'slot', 'class', 'device'}]`` as ``read_pci_functions``. sysfs lets only root read ``vpd``: an unreadable one
    counts as unmarked. Raises ValueError when ``devices_dir`` is not a directory.
    """
    return [{k: f[k] for k in ('slot', 'class', 'device')} for f in _vendor_functions(devices_dir, MELLANOX_VENDOR)
            if vpd_marks_nvlink_management(_read_vpd(f['path']))]


def _device_number(function):
    try:
        return int(function['device'], 16)
    except ValueError:
        raise ValueError('PCI function %s: device id %r is not hexadecimal'
                         % (function['slot'], function['device'])) from None


def classify_pci(functions, bridges=()):
    """GPUs, NVSwitches, the GPUs older than Turing and a fourth-generation NVSwitch board, from NVIDIA's PCI functions
    and the NVLink management bridges (``read_nvlink_bridges``).

    Returns ``{'gpus': [function], 'nvswitches': [function], 'pre_turing': ['<slot> (<device>)'], 'gpu_count': n,
    'nvlink_bridges': [function], 'nvswitch_gen4': bool, 'nvswitch_gen4_evidence': [str]}``: the board has
    fourth-generation NVSwitches when a GPU of such a baseboard or a bridge is present; the evidence names each.
    """
    gpus = [f for f in functions if _GPU_CLASS.match(f['class'])]
    evidence = ['%s GPU %s (%s)' % (g['slot'], g['device'], NVSWITCH_GEN4_GPUS[_device_number(g)])
                for g in gpus if _device_number(g) in NVSWITCH_GEN4_GPUS]
    evidence += ['%s NVLink management bridge %s (VPD SW_MNG)' % (b['slot'], b['device']) for b in bridges]
    return {
        'gpus': gpus,
        'nvswitches': [f for f in functions if _NVSWITCH_CLASS.match(f['class'])],
        'pre_turing': ['%s (%s)' % (g['slot'], g['device']) for g in gpus if _device_number(g) < TURING_FIRST_DEVICE],
        'gpu_count': len(gpus),
        'nvlink_bridges': list(bridges),
        'nvswitch_gen4': bool(evidence),
        'nvswitch_gen4_evidence': evidence,
    }


# --- what the settings ask for --------------------------------------------------------------------------------------

def _branch_number(branch):
    if not re.match(r'^[0-9]+$', str(branch)):
        raise ValueError("branch %r is not a driver branch (digits, e.g. '580')" % (branch,))
    return int(branch)


def cuda_available(first, offered=None):
    """CUDA versions the repository offers: ``offered`` when given, else the releases from ``first`` on.

    An OS whose first release is not in CUDA_RELEASES offers none.
    """
    if offered is not None:
        return list(offered)
    if first in CUDA_RELEASES:
        return list(CUDA_RELEASES[CUDA_RELEASES.index(first):])
    return []


def cuda_branch_problems(versions, branch):
    """``CUDA <v> needs driver branch <b> or later`` for each CUDA version the branch is too old for."""
    number = _branch_number(branch)
    problems = []
    for version in versions:
        need = CUDA_MIN_BRANCH.get(version.split('.')[0], 0)
        if number < need:
            problems.append('CUDA %s needs driver branch %d or later' % (version, need))
    return problems


def toolkit_packages(versions):
    """``cuda-toolkit-12-8`` for ``12.8``."""
    return ['cuda-toolkit-' + version.replace('.', '-') for version in versions]


def package_names(scheme, source, branch, version=None, open_modules=True, kernel='', flavour=None):
    """The driver's package names on an OS that names them after ``scheme`` (debian, ubuntu or redhat).

    Returns a dict: ``userspace_packages`` (the first is the one whose version is the driver's), ``module_packages``,
    ``modules_pinned`` (whether the module packages carry the driver's version), ``persistenced_packages``,
    ``fabricmanager_package``, ``nvlink5_packages`` (what a fourth-generation NVSwitch board adds to the fabric manager:
    the NVLink Subnet Manager first, then the umad library and infiniband-diags the Fabric Manager user guide asks for;
    empty where the source has no NVLSM), ``pinning_package`` (the apt package that holds the branch, or ''),
    ``unpinned_packages`` (follow the kernel, not the driver), ``headers_packages`` (of ``kernel``, for DKMS) and
    ``module_stream`` (EL's DNF module stream, or '').
    """
    number = _branch_number(branch)
    pinning = 'nvidia-driver-pinning-%s' % (version or branch)
    apt_headers = ['linux-headers-' + kernel]
    if scheme == 'debian':
        # NVIDIA's CUDA repositories for Debian (debian12, debian13) name the driver's packages the way Debian does,
        # not with Ubuntu's branch suffixes. The set is the driver installation guide's compute-only node (the CUDA
        # userspace and the kernel modules, no X11 or desktop packages); the branch is held by NVIDIA's
        # nvidia-driver-pinning-<branch> (the guide's "version locking" for APT, added with R575/R580).
        return {
            'userspace_packages': ['nvidia-driver-cuda'],
            'module_packages': ['nvidia-kernel-open-dkms' if open_modules else 'nvidia-kernel-dkms'],
            'modules_pinned': True,
            'persistenced_packages': ['nvidia-persistenced'],
            # up to R575 the fabric manager carries the branch in its name; from R580 the version alone ties it to
            # the driver
            'fabricmanager_package': 'nvidia-fabricmanager' if number >= 580 else 'nvidia-fabricmanager-%s' % branch,
            'nvlink5_packages': list(_APT_NVLINK5),
            'pinning_package': pinning,
            'unpinned_packages': [],
            'headers_packages': apt_headers,
            'module_stream': '',
        }
    if scheme == 'redhat':
        # cuda-rhel8/cuda-rhel9 with DNF module streams per branch: nvidia-driver:<branch>-open (open modules) or
        # nvidia-driver:<branch>-dkms (proprietary), both built by DKMS against kernel-devel of the running kernel;
        # compute-only set as in the driver installation guide, versions held with the DNF versionlock plugin
        return {
            'userspace_packages': ['nvidia-driver-cuda'],
            'module_packages': ['kmod-nvidia-open-dkms' if open_modules else 'kmod-nvidia-latest-dkms'],
            'modules_pinned': True,
            'persistenced_packages': ['nvidia-persistenced'],
            # one name for every branch; the module stream selects the branch
            'fabricmanager_package': 'nvidia-fabric-manager',
            'nvlink5_packages': ['nvlsm', 'libibumad', 'infiniband-diags'],
            'pinning_package': '',
            'unpinned_packages': [],
            'headers_packages': ['kernel-devel-' + kernel, 'kernel-headers-' + kernel],
            'module_stream': 'nvidia-driver:%s-%s' % (branch, 'open' if open_modules else 'dkms'),
        }
    if scheme != 'ubuntu':
        raise ValueError('package scheme %r is none of %s' % (scheme, ', '.join(PACKAGE_SCHEMES)))
    open_suffix = '-open' if open_modules else ''
    if source == 'canonical':
        # Ubuntu's own archive: the -server branches and Canonical's signed, precompiled modules
        # (linux-modules-nvidia-<branch>-server-open-<kernel>: no DKMS, loads under Secure Boot)
        server = '%s-server' % branch
        flavour = flavour or '-'.join(kernel.split('-')[2:])
        return {
            'userspace_packages': ['nvidia-headless-no-dkms-' + server + open_suffix, 'nvidia-utils-' + server],
            # the per-kernel module package is versioned by the kernel, not by the driver
            'module_packages': ['linux-modules-nvidia-%s%s-%s' % (server, open_suffix, kernel)],
            'modules_pinned': False,
            'persistenced_packages': ['nvidia-compute-utils-' + server],
            # Ubuntu's archive keeps the branch in the fabric manager's name
            'fabricmanager_package': 'nvidia-fabricmanager-%s' % branch,
            # nvlsm is published in NVIDIA's CUDA repository only
            'nvlink5_packages': [],
            'pinning_package': '',
            # the flavour's metapackage brings the modules of every later kernel of that flavour, so a kernel update
            # never boots without them (-generic; HWE kernels: nvidia_driver_ubuntu_kernel_flavour, e.g.
            # generic-hwe-24.04)
            'unpinned_packages': ['linux-modules-nvidia-%s%s-%s' % (server, open_suffix, flavour)],
            'headers_packages': apt_headers,
            'module_stream': '',
        }
    # NVIDIA's CUDA repository (ubuntu2204, ubuntu2404) uses Ubuntu's names with the branch in them up to R580 and
    # drops the branch from R590 (driver installation guide, "Ubuntu 590 and later packages": nvidia-dkms-580-open ->
    # nvidia-dkms-open, libnvidia-compute-580 -> libnvidia-compute, ...). Compute-only set: libnvidia-compute,
    # nvidia-utils (nvidia-smi), the DKMS module; nvidia-persistenced is in the compute utilities.
    suffix = '' if number >= 590 else '-%s' % branch
    return {
        'userspace_packages': ['libnvidia-compute' + suffix, 'nvidia-utils' + suffix],
        'module_packages': ['nvidia-dkms' + suffix + open_suffix],
        'modules_pinned': True,
        'persistenced_packages': ['nvidia-compute-utils' + suffix],
        'fabricmanager_package': 'nvidia-fabricmanager' if number >= 580 else 'nvidia-fabricmanager-%s' % branch,
        'nvlink5_packages': list(_APT_NVLINK5),
        'pinning_package': pinning,
        'unpinned_packages': [],
        'headers_packages': apt_headers,
        'module_stream': '',
    }


def repository(repo_dir, architecture, url=None, keyring_url=None, key_file=''):
    """NVIDIA's CUDA repository for ``repo_dir`` (ubuntu2404, rhel9, ...) and the host's architecture.

    Returns ``{'arch', 'name', 'url', 'keyring_url'}``: the repository's architecture directory (sbsa on aarch64),
    the name cuda-keyring gives its source list and EL its .repo (``cuda-<repo_dir>-<arch>``), the base URL with one
    trailing slash (``url``, a mirror, replaces NVIDIA's) and the URL of the keyring package or signing key
    (``keyring_url``, else ``key_file`` under the base URL).
    """
    arch = _REPOSITORY_ARCH.get(architecture, architecture)
    base = (url or '%s%s/%s' % (NVIDIA_REPOSITORIES, repo_dir, arch)).rstrip('/') + '/'
    return {'arch': arch, 'name': 'cuda-%s-%s' % (repo_dir, arch), 'url': base, 'keyring_url': keyring_url or base + key_file}


def split_extra(extra, branch):
    """``extra`` packages as ``(coupled, other, problems)``: those NVIDIA builds for one driver version (the NVLink 5
    metapackage, fabric manager, NSCQ, NVSDM, IMEX: they must be the driver's version like the fabric manager), the
    rest, and ``<name> is built for branch <b>`` for each coupled one whose name carries another branch."""
    coupled, other, problems = [], [], []
    for name in extra:
        match = _DRIVER_COUPLED.match(name)
        if not match:
            other.append(name)
        elif match.group(2) and match.group(2) != str(branch):
            problems.append('%s is built for branch %s' % (name, match.group(2)))
        else:
            coupled.append(name)
    return coupled, other, problems


def nvlink5_problems(branch, open_modules, nvlink5_packages, fabricmanager_enabled):
    """What stops a board with fourth-generation NVSwitches from getting its fabric: ``[{'variable', 'problem'}]``.

    The guide's minimum driver branch (570), the open kernel modules (the only ones Blackwell runs), and a source
    without the NVLink Subnet Manager while the fabric manager is to be installed.
    """
    problems = []
    if _branch_number(branch) < NVSWITCH_GEN4_MIN_BRANCH:
        problems.append({'variable': 'nvidia_driver_branch',
                         'problem': 'fourth-generation NVSwitch boards need driver branch %d or later, the branch is %s'
                         % (NVSWITCH_GEN4_MIN_BRANCH, branch)})
    if not open_modules:
        problems.append({'variable': 'nvidia_driver_open',
                         'problem': 'the Blackwell GPUs of fourth-generation NVSwitch boards run only with the open '
                                    'kernel modules (nvidia_driver_open: true)'})
    if fabricmanager_enabled and not nvlink5_packages:
        problems.append({'variable': 'nvidia_driver_source',
                         'problem': "the source has no NVLink Subnet Manager (nvlsm, published in NVIDIA's CUDA "
                                    'repository only), which the fabric manager of fourth-generation NVSwitch boards '
                                    'needs (nvidia_driver_source: cuda_repo)'})
    return problems


def driver_plan(scheme, source, branch, version=None, open_modules=True, kernel='', flavour=None,
                persistenced=True, fabricmanager='auto', nvswitch_count=0, nvswitch_gen4=False, dcgm_package=None,
                cuda_versions=(), cuda_first=None, cuda_offered=None, extra=(),
                repo_dir='', architecture='x86_64', repo_url=None, keyring_url=None, key_file=''):
    """Everything the role decides before it reads the repository, as one dict.

    The keys of ``package_names``, and ``fabricmanager_enabled`` (``fabricmanager`` is always, or auto with an
    NVSwitch on the PCI bus or ``nvswitch_gen4``, a board with fourth-generation NVSwitches), ``nvlink5_enabled``
    (the fabric manager on such a board: it needs the NVLink Subnet Manager and ``boot_modules``, ib_umad),
    ``nvlink5_problems`` (``nvlink5_problems`` on such a board), ``pinned_packages`` (must be the driver's exact
    version, and are held: the driver's, and ``extra`` packages built for one driver version), ``other_packages``
    (installed at whatever version: kernel-versioned modules, the NVLSM set, toolkits, ``dcgm_package`` when not None,
    the other ``extra``), ``extra_branch_problems`` (``split_extra``), ``watched_packages`` (whose installed versions
    the role records), ``version_package`` (the package whose version is the driver's), ``services``, the
    ``repository`` keys prefixed ``repo_`` (``keyring_url`` as is), and ``cuda_available``, ``cuda_not_offered`` and
    ``cuda_branch_problems`` for ``cuda_versions``.
    """
    names = package_names(scheme, source, branch, version, open_modules, kernel, flavour)
    fabricmanager_enabled = fabricmanager == 'always' or (fabricmanager == 'auto'
                                                          and (nvswitch_count > 0 or bool(nvswitch_gen4)))
    nvlink5 = fabricmanager_enabled and bool(nvswitch_gen4)
    nvlink5_set = names['nvlink5_packages'] if nvlink5 else []
    coupled, uncoupled, extra_problems = split_extra(extra, branch)
    modules = names['module_packages']
    pinned = (names['userspace_packages'] + (modules if names['modules_pinned'] else [])
              + (names['persistenced_packages'] if persistenced else [])
              + ([names['fabricmanager_package']] if fabricmanager_enabled else []) + coupled)
    other = ((modules if not names['modules_pinned'] else []) + names['unpinned_packages'] + nvlink5_set
             + toolkit_packages(cuda_versions) + ([dcgm_package] if dcgm_package else []) + uncoupled)
    available = cuda_available(cuda_first, cuda_offered)
    repo = repository(repo_dir, architecture, repo_url, keyring_url, key_file)
    plan = dict(names)
    plan.update({
        'fabricmanager_enabled': fabricmanager_enabled,
        'nvlink5_enabled': nvlink5,
        'nvlink5_problems': (nvlink5_problems(branch, open_modules, names['nvlink5_packages'], fabricmanager_enabled)
                             if nvswitch_gen4 else []),
        'boot_modules': ['ib_umad'] if nvlink5 else [],
        'pinned_packages': pinned,
        'other_packages': other,
        'extra_branch_problems': extra_problems,
        'watched_packages': pinned + [m for m in modules if m not in pinned] + nvlink5_set[:1],
        'version_package': names['userspace_packages'][0],
        # on a fourth-generation board the fabric manager's unit starts the NVLink Subnet Manager before the fabric
        # manager itself (the guide's "Fabric Manager Service File"): no service of its own
        'services': ((['nvidia-persistenced'] if persistenced else [])
                     + (['nvidia-fabricmanager'] if fabricmanager_enabled else [])
                     + (['nvidia-dcgm'] if dcgm_package else [])),
        'repo_arch': repo['arch'],
        'repo_name': repo['name'],
        'repo_url': repo['url'],
        'keyring_url': repo['keyring_url'],
        'cuda_available': available,
        'cuda_not_offered': [v for v in cuda_versions if v not in available],
        'cuda_branch_problems': cuda_branch_problems(cuda_versions, branch),
    })
    return plan


# --- what the repository offers and what is installed ---------------------------------------------------------------

def parse_offers(lines):
    """Offered full versions per package from ``apt-cache madison`` or ``dnf repoquery`` lines.

    Both print ``name | version`` first (madison adds ``| source``); madison's lines of source packages (ending in
    ``Sources``) are not installable and are passed over. Versions keep the order the tool printed them in.
    """
    offers = {}
    for line in lines:
        fields = [field.strip() for field in line.split('|')]
        if len(fields) >= 2 and not line.rstrip().endswith('Sources'):
            offers.setdefault(fields[0], []).append(fields[1])
    return offers


def upstream_version(full):
    """The driver's own version in a package version: ``575.57.08`` of ``3:575.57.08-1.el9`` or ``575.57.08-0ubuntu1``."""
    return _RELEASE.sub('', _EPOCH.sub('', full))


def _version_key(version):
    return [(0, int(part), '') if part.isdigit() else (1, 0, part) for part in re.split(r'(\d+)', version) if part]


def branch_versions(full_versions, branch):
    """The distinct upstream versions of ``branch`` among ``full_versions``, oldest first."""
    upstream = set(upstream_version(v) for v in full_versions)
    return sorted((v for v in upstream if v.startswith('%s.' % branch)), key=_version_key)


def resolve_target(branch, version, installed, offered):
    """The driver version to install: ``version`` when set, else the installed one when it is of the branch, else the
    newest of the branch that ``offered`` (full versions) holds; '' when there is none.

    ``installed`` is the full version of the version package, or None.
    """
    if version:
        return version
    current = upstream_version(installed or '')
    if current.startswith('%s.' % branch):
        return current
    newest = branch_versions(offered, branch)
    return newest[-1] if newest else ''


def _unique(items):
    seen = []
    for item in items:
        if item not in seen:
            seen.append(item)
    return seen


def resolve_packages(names, offers, installed, target):
    """Per package ``{'name', 'version', 'offers'}``: the first full version, offered or installed, whose upstream
    is ``target`` ('' when none is), and the distinct upstream versions there are."""
    pattern = re.compile(r'^([0-9]+:)?%s(-|$)' % re.escape(target))
    resolved = []
    for name in names:
        candidates = offers.get(name, []) + ([installed[name]] if installed.get(name) else [])
        matching = [c for c in candidates if target and pattern.match(c)]
        resolved.append({'name': name, 'version': matching[0] if matching else '',
                         'offers': _unique(upstream_version(c) for c in candidates)})
    return resolved


def install_specs(resolved, pkg_manager):
    """``name=version`` (apt) or ``name-version`` (dnf) per resolved package."""
    separator = '=' if pkg_manager == 'apt' else '-'
    return [p['name'] + separator + p['version'] for p in resolved]


def resolve_driver(query_lines, pinned, version_package, branch, version=None, installed=None, pkg_manager='apt'):
    """The driver version to install and each pinned package's full version, from the offers query's lines.

    Returns ``{'offers', 'target', 'resolved', 'unresolved', 'unresolved_summary', 'install_specs', 'changing'}``:
    the offers per package (``parse_offers``), the driver version (``resolve_target``; '' when the repository has
    none of the branch), ``resolve_packages`` of ``pinned`` and those of them without a matching version, one line
    naming each of those with what it offers, the install specs, and the pinned packages whose installed version
    differs from the one to install (their holds are released first). ``installed``: full versions by name.
    """
    installed = installed or {}
    offers = parse_offers(query_lines)
    target = resolve_target(branch, version, installed.get(version_package), offers.get(version_package, []))
    resolved = resolve_packages(pinned, offers, installed, target)
    unresolved = [p for p in resolved if not p['version']]
    return {
        'offers': offers,
        'target': target,
        'resolved': resolved,
        'unresolved': unresolved,
        'unresolved_summary': '; '.join('%s offers %s' % (p['name'], ', '.join(p['offers']) or 'no version')
                                        for p in unresolved),
        'install_specs': install_specs(resolved, pkg_manager),
        'changing': [p['name'] for p in resolved if installed.get(p['name']) != p['version']],
    }


def installed_versions(packages, names):
    """Installed full versions of ``names`` from package_facts' ``packages``: deb ``version``, rpm
    ``epoch:version-release`` (epoch 0 when there is none); names not installed are left out."""
    versions = {}
    for name in names:
        entry = (packages.get(name) or [{}])[0]
        if 'version' not in entry:
            continue
        if 'release' in entry:
            versions[name] = '%s:%s-%s' % (entry.get('epoch') or 0, entry['version'], entry['release'])
        else:
            versions[name] = entry['version']
    return versions


def module_changes(before, after, names):
    """``<name> <before> -> <after>`` for each of ``names`` whose installed version changed (``not installed`` and
    ``removed`` where there is none)."""
    return ['%s %s -> %s' % (name, before.get(name) or 'not installed', after.get(name) or 'removed')
            for name in names if before.get(name) != after.get(name)]


# --- GPUDirect RDMA -------------------------------------------------------------------------------------------------

def dmabuf_capable(open_modules, kernel):
    """Whether GPUDirect RDMA can use DMA-BUF: the open kernel modules on kernel ``DMABUF_MIN_KERNEL`` or later.

    ``open_modules`` is True, False or None (not known, which is not capable); ``kernel`` a release such as
    ``6.8.0-45-generic``, or None where it is not known (not capable either).
    """
    if open_modules not in (True, False, None):
        raise ValueError('open_modules must be true, false or null, got %r' % (open_modules,))
    if kernel is not None and not isinstance(kernel, str):
        raise ValueError('kernel must be a kernel release such as 6.8.0-45-generic, got %r' % (kernel,))
    match = _KERNEL_RELEASE.match(kernel or '')
    return open_modules is True and match is not None and tuple(int(part) for part in match.groups()) >= DMABUF_MIN_KERNEL


def gpudirect(kernel, open_modules, ofed, wanted='auto'):
    """The nvidia_driver role's GPUDirect RDMA path: ``{dmabuf_capable, mode}``.

    ``mode`` is ``wanted`` (``nvidia_driver_gpudirect``) unless that is ``auto``: then ``peermem`` where ``ofed``
    (MLNX_OFED or DOCA-OFED is installed), else ``dmabuf`` where ``dmabuf_capable``, else ``none``.
    """
    if wanted not in GPUDIRECT_MODES:
        raise ValueError('nvidia_driver_gpudirect must be one of %s, got %r' % (', '.join(GPUDIRECT_MODES), wanted))
    if not isinstance(ofed, bool):
        raise ValueError('ofed must be true or false, got %r' % (ofed,))
    capable = dmabuf_capable(open_modules, kernel)
    if wanted == 'auto':
        wanted = 'peermem' if ofed else ('dmabuf' if capable else 'none')
    return {'dmabuf_capable': capable, 'mode': wanted}
