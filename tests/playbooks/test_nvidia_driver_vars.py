"""The nvidia_driver role's per-OS packages and repositories, and its refusals, without a node.

tests/playbooks/nvidia_driver_vars.yml runs the role's checks on the controller with each OS's facts injected
(set_fact cacheable: true fills the fact cache that ansible_facts reads) and PCI devices from a directory the test
writes (nvidia_driver_pci_devices_dir), then dumps what the role computed.
"""
import json
import os
import subprocess
import sys

import pytest
import yaml

from checkout import ANSIBLE_PLAYBOOK, ROOT

CUDA = 'https://developer.download.nvidia.com/compute/cuda/repos/'

FACTS = {
    'ubuntu2204': {'distribution': 'Ubuntu', 'major': '22', 'version': '22.04', 'os_family': 'Debian',
                   'kernel': '5.15.0-119-generic'},
    'ubuntu2404': {'distribution': 'Ubuntu', 'major': '24', 'version': '24.04', 'os_family': 'Debian',
                   'kernel': '6.8.0-45-generic'},
    'debian11': {'distribution': 'Debian', 'major': '11', 'version': '11.11', 'os_family': 'Debian',
                 'kernel': '5.10.0-32-amd64'},
    'debian12': {'distribution': 'Debian', 'major': '12', 'version': '12.7', 'os_family': 'Debian',
                 'kernel': '6.1.0-26-amd64'},
    'debian13': {'distribution': 'Debian', 'major': '13', 'version': '13.1', 'os_family': 'Debian',
                 'kernel': '6.12.48+deb13-amd64'},
    'rhel8': {'distribution': 'RedHat', 'major': '8', 'version': '8.10', 'os_family': 'RedHat',
              'kernel': '4.18.0-553.el8_10.x86_64'},
    'rocky9': {'distribution': 'Rocky', 'major': '9', 'version': '9.4', 'os_family': 'RedHat',
               'kernel': '5.14.0-427.13.1.el9_4.x86_64'},
}

# PCI functions: (vendor, class, device)
H100 = ('0x10de', '0x030200', '0x2330')
NVSWITCH = ('0x10de', '0x068000', '0x22a3')
V100 = ('0x10de', '0x030200', '0x1db1')
NIC = ('0x15b3', '0x020000', '0x1021')


def write_pci(path, functions):
    path.mkdir(parents=True)
    for i, (vendor, cls, device) in enumerate(functions):
        d = path / ('0000:%02x:00.0' % (0x17 + i * 0x24))
        d.mkdir()
        (d / 'vendor').write_text(vendor + '\n')
        (d / 'class').write_text(cls + '\n')
        (d / 'device').write_text(device + '\n')
    return str(path)


def run_role(tmp_path, hosts):
    """hosts: {name: (os key, PCI functions, role variables and 'architecture')}; returns (rc, flat output,
    {host: computed})."""
    out = tmp_path / 'out'
    out.mkdir()
    inventory = {'all': {'hosts': {}}}
    for name, (os_key, functions, role_vars) in hosts.items():
        role_vars = dict(role_vars)
        facts = dict(FACTS[os_key], architecture=role_vars.pop('architecture', 'x86_64'))
        host = {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable,
                'test_facts': facts,
                'nvidia_driver_pci_devices_dir': write_pci(tmp_path / 'pci' / name, functions)}
        host.update(role_vars)
        inventory['all']['hosts'][name] = host
    (tmp_path / 'hosts.yml').write_text(yaml.safe_dump(inventory))
    env = dict(os.environ, ANSIBLE_NOCOLOR='1', ANSIBLE_FORCE_COLOR='0')
    proc = subprocess.run(
        [ANSIBLE_PLAYBOOK, '-i', str(tmp_path / 'hosts.yml'), '-e', 'test_out=%s' % out,
         str(ROOT / 'tests' / 'playbooks' / 'nvidia_driver_vars.yml')],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
    computed = {p.stem: json.loads(p.read_text()) for p in out.glob('*.json')}
    return proc.returncode, ' '.join((proc.stdout + proc.stderr).split()), computed


@pytest.fixture(scope='module')
def matrix(tmp_path_factory):
    """One run over every supported OS, each with a configuration worth checking."""
    rc, out, computed = run_role(tmp_path_factory.mktemp('matrix'), {
        'ubuntu2204': ('ubuntu2204', [H100, NVSWITCH, NIC],
                       {'nvidia_driver_branch': '575', 'nvidia_driver_cuda_versions': ['12.8']}),
        'ubuntu2404': ('ubuntu2404', [H100],
                       {'nvidia_driver_branch': '590', 'nvidia_driver_cuda_versions': ['13.1'],
                        'architecture': 'aarch64'}),
        'ubuntu2404_canonical': ('ubuntu2404', [H100, NVSWITCH],
                                 {'nvidia_driver_source': 'canonical', 'nvidia_driver_dcgm': True}),
        'debian12': ('debian12', [H100],
                     {'nvidia_driver_open': False, 'nvidia_driver_fabricmanager': 'always'}),
        'debian13': ('debian13', [H100], {'nvidia_driver_cuda_versions': ['13.1']}),
        'rhel8': ('rhel8', [H100, NVSWITCH], {'nvidia_driver_branch': '550', 'nvidia_driver_cuda_versions': ['12.4']}),
        'rocky9': ('rocky9', [H100], {'nvidia_driver_branch': '575', 'nvidia_driver_open': False}),
        'v100': ('debian12', [V100], {'nvidia_driver_branch': '570', 'nvidia_driver_open': False,
                                      'nvidia_driver_cuda_versions': ['12.8']}),
        'nogpu_skip': ('debian12', [NIC], {'nvidia_driver_no_gpu_action': 'skip'}),
        'nogpu_install': ('debian12', [], {'nvidia_driver_no_gpu_action': 'install'}),
    })
    assert rc == 0, out
    return computed


def test_ubuntu_2204_cuda_repo_branch_575(matrix):
    c = matrix['ubuntu2204']
    assert c['repo_url'] == CUDA + 'ubuntu2204/x86_64/'
    assert c['keyring_url'] == CUDA + 'ubuntu2204/x86_64/cuda-keyring_1.1-1_all.deb'
    assert c['apt_list'] == '/etc/apt/sources.list.d/cuda-ubuntu2204-x86_64.list'
    assert c['pinning_package'] == 'nvidia-driver-pinning-575'
    assert c['pinned_packages'] == ['libnvidia-compute-575', 'nvidia-utils-575', 'nvidia-dkms-575-open',
                                    'nvidia-compute-utils-575', 'nvidia-fabricmanager-575']
    assert c['other_packages'] == ['cuda-toolkit-12-8']
    assert c['headers_packages'] == ['linux-headers-5.15.0-119-generic']
    assert c['gpus'] == ['0000:17:00.0'] and c['nvswitches'] == ['0000:3b:00.0']
    assert c['fabricmanager_enabled'] is True
    assert c['gpudirect'] == 'dmabuf'
    assert c['cuda_available'][0] == '11.7'


def test_ubuntu_2404_branch_590_drops_the_branch_from_names_and_arm_uses_sbsa(matrix):
    c = matrix['ubuntu2404']
    assert c['repo_url'] == CUDA + 'ubuntu2404/sbsa/'
    assert c['pinning_package'] == 'nvidia-driver-pinning-590'
    assert c['userspace_packages'] == ['libnvidia-compute', 'nvidia-utils']
    assert c['module_packages'] == ['nvidia-dkms-open']
    assert c['persistenced_packages'] == ['nvidia-compute-utils']
    assert c['fabricmanager_package'] == 'nvidia-fabricmanager'
    # one GPU, no NVSwitch: no fabric manager
    assert c['fabricmanager_enabled'] is False
    assert 'nvidia-fabricmanager' not in c['pinned_packages']
    assert c['cuda_available'][0] == '12.5'
    assert c['other_packages'] == ['cuda-toolkit-13-1']


def test_ubuntu_2404_canonical_signed_precompiled_modules(matrix):
    c = matrix['ubuntu2404_canonical']
    assert c['pinning_package'] == ''
    assert c['userspace_packages'] == ['nvidia-headless-no-dkms-580-server-open', 'nvidia-utils-580-server']
    # the per-kernel module package is versioned by the kernel: installed, not pinned to the driver version
    assert c['module_packages'] == ['linux-modules-nvidia-580-server-open-6.8.0-45-generic']
    assert c['pinned_packages'] == ['nvidia-headless-no-dkms-580-server-open', 'nvidia-utils-580-server',
                                    'nvidia-compute-utils-580-server', 'nvidia-fabricmanager-580']
    assert c['other_packages'] == ['linux-modules-nvidia-580-server-open-6.8.0-45-generic',
                                   'linux-modules-nvidia-580-server-open-generic', 'datacenter-gpu-manager']


def test_debian_12_proprietary_with_fabric_manager(matrix):
    c = matrix['debian12']
    assert c['repo_url'] == CUDA + 'debian12/x86_64/'
    assert c['apt_list'] == '/etc/apt/sources.list.d/cuda-debian12-x86_64.list'
    assert c['pinned_packages'] == ['nvidia-driver-cuda', 'nvidia-kernel-dkms', 'nvidia-persistenced',
                                    'nvidia-fabricmanager']
    assert c['initramfs_command'] == ['update-initramfs', '-u', '-k', 'all']
    # proprietary modules: no DMA-BUF, no OFED here: no GPUDirect RDMA
    assert c['gpudirect'] == 'none'
    assert c['cuda_available'][0] == '12.2'


def test_debian_13_has_its_own_repository_and_cuda_13_only(matrix):
    c = matrix['debian13']
    assert c['repo_url'] == CUDA + 'debian13/x86_64/'
    assert c['keyring_url'] == CUDA + 'debian13/x86_64/cuda-keyring_1.1-1_all.deb'
    assert c['pinned_packages'] == ['nvidia-driver-cuda', 'nvidia-kernel-open-dkms', 'nvidia-persistenced']
    assert all(v.startswith('13.') for v in c['cuda_available'])


def test_rhel_8_module_stream_and_dracut(matrix):
    c = matrix['rhel8']
    assert c['pkg_manager'] == 'dnf'
    assert c['repo_url'] == CUDA + 'rhel8/x86_64/'
    assert c['keyring_url'] == CUDA + 'rhel8/x86_64/D42D0685.pub'
    assert c['module_stream'] == 'nvidia-driver:550-open'
    assert c['pinned_packages'] == ['nvidia-driver-cuda', 'kmod-nvidia-open-dkms', 'nvidia-persistenced',
                                    'nvidia-fabric-manager']
    assert c['headers_packages'] == ['kernel-devel-4.18.0-553.el8_10.x86_64', 'kernel-headers-4.18.0-553.el8_10.x86_64']
    assert c['initramfs_command'] == ['dracut', '--regenerate-all', '--force']
    # kernel 4.18: no DMA-BUF
    assert c['gpudirect'] == 'none'
    assert c['apt_list'] is None


def test_rocky_9_uses_the_rhel9_repository_and_the_dkms_stream(matrix):
    c = matrix['rocky9']
    assert c['repo_url'] == CUDA + 'rhel9/x86_64/'
    assert c['module_stream'] == 'nvidia-driver:575-dkms'
    assert c['module_packages'] == ['kmod-nvidia-latest-dkms']
    assert c['cuda_available'][0] == '11.7'


def test_pre_turing_gpu_with_proprietary_modules_and_cuda_12_passes(matrix):
    assert matrix['v100']['pre_turing'] == ['0000:17:00.0 (0x1db1)']


def test_no_gpu_skip_and_install(matrix):
    assert matrix['nogpu_skip']['gpus'] == [] and matrix['nogpu_skip']['install'] is False
    assert matrix['nogpu_install']['install'] is True


# one host per bad setting, all in one run: each fails at its own check, before the role would change anything
REFUSALS = {
    'branch_format': ('debian12', [H100], {'nvidia_driver_branch': '57x'},
                      "nvidia_driver_branch on branch_format: '57x' is not a driver branch (three digits"),
    'version_of_other_branch': ('debian12', [H100], {'nvidia_driver_branch': '575', 'nvidia_driver_version': '580.65.06'},
                                "nvidia_driver_version on version_of_other_branch: '580.65.06' is not a version of branch 575"),
    'open_before_515': ('debian12', [H100], {'nvidia_driver_branch': '470'},
                        'nvidia_driver_open on open_before_515: open kernel modules exist from R515 on; branch 470'),
    'cuda_not_on_ubuntu2404': ('ubuntu2404', [H100], {'nvidia_driver_cuda_versions': ['12.3']},
                               "nvidia_driver_cuda_versions on cuda_not_on_ubuntu2404: CUDA 12.3 is not offered by NVIDIA's "
                               "ubuntu2404 repository (it offers 12.5,"),
    'cuda12_on_debian13': ('debian13', [H100], {'nvidia_driver_cuda_versions': ['12.8']},
                           "nvidia_driver_cuda_versions on cuda12_on_debian13: CUDA 12.8 is not offered by NVIDIA's debian13 "
                           "repository (it offers 13.1, 13.2, 13.3;"),
    'cuda13_on_575': ('debian12', [H100], {'nvidia_driver_branch': '575', 'nvidia_driver_cuda_versions': ['13.0']},
                      'nvidia_driver_cuda_versions on cuda13_on_575: CUDA 13.0 needs driver branch 580 or later, and '
                      'nvidia_driver_branch is 575'),
    'debian11': ('debian11', [H100], {},
                 'nvidia_driver on debian11: Debian 11.11 has no NVIDIA CUDA repository this role knows'),
    'canonical_on_debian': ('debian12', [H100], {'nvidia_driver_source': 'canonical'},
                            "nvidia_driver_source on canonical_on_debian: 'canonical' is not available on Debian "
                            "(available: cuda_repo"),
    'no_gpu': ('debian12', [NIC], {},
               'nvidia_driver on no_gpu: no NVIDIA GPU (no PCI function of vendor 0x10de with a display or 3D class under'),
    'open_on_v100': ('debian12', [H100, V100], {},
                     'nvidia_driver_open on open_on_v100: GPU 0000:3b:00.0 (0x1db1) is older than Turing (PCI device id '
                     'below 0x1e00)'),
    'v100_on_590': ('debian12', [V100], {'nvidia_driver_open': False, 'nvidia_driver_branch': '590'},
                    'on v100_on_590: GPU 0000:17:00.0 (0x1db1) is older than Turing: R580 is the last driver branch and '
                    'CUDA 12 the last toolkit'),
    'dmabuf_on_4_18': ('rhel8', [H100], {'nvidia_driver_gpudirect': 'dmabuf'},
                       'nvidia_driver_gpudirect on dmabuf_on_4_18: dmabuf needs the open kernel modules and kernel 5.12 '
                       'or later'),
    'peermem_without_ofed': ('debian12', [H100], {'nvidia_driver_gpudirect': 'peermem'},
                             'nvidia_driver_gpudirect on peermem_without_ofed: nvidia-peermem needs the peer-memory API of '
                             'MLNX_OFED or DOCA-OFED'),
}


@pytest.fixture(scope='module')
def refusals(tmp_path_factory):
    hosts = {name: case[:3] for name, case in REFUSALS.items()}
    return run_role(tmp_path_factory.mktemp('refusals'), hosts)


@pytest.mark.parametrize('name', sorted(REFUSALS))
def test_refused_before_any_change(refusals, name):
    rc, out, computed = refusals
    assert rc != 0
    assert REFUSALS[name][3] in out
    assert name not in computed
