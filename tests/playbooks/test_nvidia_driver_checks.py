# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The nvidia_driver role's checks on the controller under each supported OS's facts: what passes, what is refused.

Each host is the controller under another OS's facts (the ``os_play`` fixture of conftest.py) with PCI functions
from a directory the test writes (nvidia_driver_pci_devices_dir), so the role's layered per-OS variables
(tasks/set_vars.yml), its PCI facts module and every check that runs before a change meet for Ubuntu 22.04 and 24.04,
Debian 12 and 13, RHEL 8 and Rocky 9 without those machines. The refusals that name an OS's repository directory,
CUDA releases or driver sources prove that OS's variable files loaded. What the role computes (package names, the
repository, the CUDA releases, the version resolution) is unit-tested in
tests/unit/plugins/module_utils/test_nvidia_driver.py.
"""
from __future__ import annotations
# PCI functions: (vendor, class, device[, vpd]); ids from pci.ids (pciutils/pciids): 10de:3182 "GB110 [B300 SXM6 AC]",
# 10de:2901 "GB100 [B200]", 15b3:1021 "MT2910 Family [ConnectX-7]"
H100 = ('0x10de', '0x030200', '0x2330')
NVSWITCH = ('0x10de', '0x068000', '0x22a3')
V100 = ('0x10de', '0x030200', '0x1db1')
NIC = ('0x15b3', '0x020000', '0x1021')
B300 = ('0x10de', '0x030200', '0x3182')
B200 = ('0x10de', '0x030200', '0x2901')
# the limited PF of the HGX baseboard's ConnectX-7 bridge: its VPD carries SW_MNG in the vendor field SMDL (NVIDIA
# Fabric Manager user guide, release 2.3); here that one keyword
BRIDGE = ('0x15b3', '0x020700', '0x1021', b'V3\x0bSMDL=SW_MNG')
# a site's own mirror of the CUDA repository on a private network, without TLS
MIRROR = 'http://mirror.cluster.internal/cuda/ubuntu2404/x86_64/'

# the checks, then what the role would go on with (written only by a host that passed them)
CHECKS = """    - name: Run the role's checks
      ansible.builtin.include_role:
        name: hpcfabric.cluster.nvidia_driver
        tasks_from: assert.yml

    - name: Write what the host's PCI facts say
      ansible.builtin.copy:
        content: "{{ ansible_facts['nvidia_pci'] | to_json }}"
        dest: "{{ out }}/{{ inventory_hostname }}.json"
        mode: "0644"
      delegate_to: localhost
"""


def hosts(tmp_path, cases):
    """os_play hosts from {name: (os key, PCI functions, role variables)}, each with its own PCI directory."""
    result = {}
    for name, (os_key, functions, role_vars) in cases.items():
        devices = tmp_path / 'pci' / name
        devices.mkdir(parents=True)
        for i, (vendor, pci_class, device, *vpd) in enumerate(functions):
            function = devices / ('0000:%02x:00.0' % (0x17 + i * 0x24))
            function.mkdir()
            (function / 'vendor').write_text(vendor + '\n')
            (function / 'class').write_text(pci_class + '\n')
            (function / 'device').write_text(device + '\n')
            for data in vpd:
                (function / 'vpd').write_bytes(data)
        result[name] = (os_key, dict({'nvidia_driver_pci_devices_dir': str(devices)}, **role_vars))
    return result


# every supported OS with a configuration worth checking; all pass
PASSES = {
    'ubuntu2204': ('ubuntu2204', [H100, NVSWITCH, NIC],
                   {'nvidia_driver_branch': '575', 'nvidia_driver_cuda_versions': ['11.7', '12.8']}),
    'ubuntu2404': ('ubuntu2404', [H100], {'nvidia_driver_branch': '590', 'nvidia_driver_cuda_versions': ['13.1']}),
    'ubuntu2404_canonical': ('ubuntu2404', [H100, NVSWITCH],
                             {'nvidia_driver_source': 'canonical', 'nvidia_driver_dcgm': True}),
    'debian12': ('debian12', [H100], {'nvidia_driver_open': False, 'nvidia_driver_fabricmanager': 'always',
                                      'nvidia_driver_cuda_versions': ['12.2']}),
    'debian13': ('debian13', [H100], {'nvidia_driver_cuda_versions': ['13.1']}),
    'rhel8': ('rhel8', [H100, NVSWITCH], {'nvidia_driver_branch': '550', 'nvidia_driver_cuda_versions': ['11.0']}),
    'rocky9': ('rocky9', [H100], {'nvidia_driver_branch': '575', 'nvidia_driver_open': False,
                                  'nvidia_driver_cuda_versions': ['11.7']}),
    # proprietary modules, R580 and CUDA 12 still drive a V100
    'v100': ('debian12', [V100], {'nvidia_driver_branch': '580', 'nvidia_driver_open': False,
                                  'nvidia_driver_cuda_versions': ['12.8']}),
    'nogpu_skip': ('debian12', [NIC], {'nvidia_driver_no_gpu_action': 'skip'}),
    'nogpu_install': ('debian12', [], {'nvidia_driver_no_gpu_action': 'install'}),
    # a site's mirror on a private network without TLS, allowed; a local one needs no allowance
    'http_mirror': ('ubuntu2404', [H100], {'nvidia_driver_repo_url': MIRROR, 'nvidia_driver_allow_http': True}),
    'file_mirror': ('rocky9', [H100], {'nvidia_driver_repo_url': 'file:///srv/mirror/cuda/rhel9/x86_64/',
                                       'nvidia_driver_keyring_url': 'file:///srv/mirror/cuda/D42D0685.pub'}),
    # fourth-generation NVSwitch boards: an HGX B300 with its bridge, an HGX B200 told by its GPUs alone, with the
    # guide's metapackage and IMEX of the branch; and a bridge whose GPUs are not (yet) known by id
    'hgx_b300': ('ubuntu2404', [BRIDGE, B300, B300, NIC], {'nvidia_driver_cuda_versions': ['12.9']}),
    'hgx_b200_el9': ('rocky9', [B200], {'nvidia_driver_branch': '570',
                                        'nvidia_driver_packages_extra': ['nvlink5-570', 'nvidia-imex-570']}),
    'bridge_only': ('debian12', [BRIDGE, H100], {}),
}


def test_every_supported_os_passes_with_a_sound_configuration(os_play, tmp_path):
    run = os_play(CHECKS, hosts(tmp_path, PASSES))
    assert (run.rc, run.failed) == (0, [])
    assert sorted(run.out) == sorted(PASSES)
    assert [g['slot'] for g in run.out['ubuntu2204']['gpus']] == ['0000:17:00.0']
    assert [s['slot'] for s in run.out['ubuntu2204']['nvswitches']] == ['0000:3b:00.0']
    assert run.out['v100']['pre_turing'] == ['0000:17:00.0 (0x1db1)']
    assert run.out['nogpu_skip']['gpu_count'] == 0
    assert [run.out[h]['nvswitch_gen4'] for h in ('hgx_b300', 'hgx_b200_el9', 'bridge_only', 'ubuntu2204')] == \
        [True, True, True, False]
    assert run.out['hgx_b300']['nvswitch_gen4_evidence'] == [
        '0000:3b:00.0 GPU 0x3182 (B300 SXM6 AC)', '0000:5f:00.0 GPU 0x3182 (B300 SXM6 AC)',
        '0000:17:00.0 NVLink management bridge 0x1021 (VPD SW_MNG)']


# one host per bad setting, all in one run: each fails at its own check, before the role would change anything
REFUSALS = {
    'branch_format': ('debian12', [H100], {'nvidia_driver_branch': '57x'},
                      "nvidia_driver_branch on branch_format: '57x' is not a driver branch (three digits"),
    'version_of_other_branch': ('debian12', [H100], {'nvidia_driver_branch': '575', 'nvidia_driver_version': '580.65.06'},
                                "nvidia_driver_version on version_of_other_branch: '580.65.06' is not a version of "
                                "branch 575"),
    'open_before_515': ('debian12', [H100], {'nvidia_driver_branch': '470'},
                        'nvidia_driver_open on open_before_515: open kernel modules exist from R515 on; branch 470'),
    'cuda13_on_575': ('debian12', [H100], {'nvidia_driver_branch': '575', 'nvidia_driver_cuda_versions': ['13.0']},
                      'nvidia_driver_cuda_versions on cuda13_on_575: CUDA 13.0 needs driver branch 580 or later, and '
                      'nvidia_driver_branch is 575'),
    'no_gpu': ('debian12', [NIC], {},
               'nvidia_driver on no_gpu: no NVIDIA GPU (no PCI function of vendor 0x10de with a display or 3D class '
               'under'),
    'open_on_v100': ('debian12', [H100, V100], {},
                     'nvidia_driver_open on open_on_v100: GPU 0000:3b:00.0 (0x1db1) is older than Turing (PCI device id '
                     'below 0x1e00)'),
    'v100_on_590': ('debian12', [V100], {'nvidia_driver_open': False, 'nvidia_driver_branch': '590'},
                    'on v100_on_590: GPU 0000:17:00.0 (0x1db1) is older than Turing: R580 is the last driver branch '
                    'and CUDA 12 the last toolkit'),
    'dmabuf_on_4_18': ('rhel8', [H100], {'nvidia_driver_gpudirect': 'dmabuf'},
                       'nvidia_driver_gpudirect on dmabuf_on_4_18: dmabuf needs the open kernel modules and kernel '
                       '5.12 or later'),
    'peermem_without_ofed': ('debian12', [H100], {'nvidia_driver_gpudirect': 'peermem'},
                             'nvidia_driver_gpudirect on peermem_without_ofed: nvidia-peermem needs the peer-memory API '
                             'of MLNX_OFED or DOCA-OFED'),
    'repo_plain_http': ('ubuntu2404', [H100], {'nvidia_driver_repo_url': MIRROR},
                        "nvidia_driver_repo_url on repo_plain_http: '%s' is plain HTTP: what it serves "
                        "could be replaced on the way; use https://, or set nvidia_driver_allow_http: true" % MIRROR),
    'keyring_ftp': ('debian12', [H100], {'nvidia_driver_keyring_url': 'ftp://mirror/cuda-keyring_1.1-1_all.deb',
                                         'nvidia_driver_allow_http': True},
                    "nvidia_driver_keyring_url on keyring_ftp: 'ftp://mirror/cuda-keyring_1.1-1_all.deb' "
                    "is not an http:// or https:// URL with a host"),
    'no_pci_directory': ('debian12', [H100], {'nvidia_driver_pci_devices_dir': '/nonexistent/pci'},
                         'no such directory: /nonexistent/pci'),
    # the per-OS dispatch: each message names what only that OS's variable files hold
    'debian11': ('debian11', [H100], {},
                 'nvidia_driver on debian11: Debian 11.11 has no NVIDIA CUDA repository this role knows'),
    'canonical_on_debian': ('debian12', [H100], {'nvidia_driver_source': 'canonical'},
                            "nvidia_driver_source on canonical_on_debian: 'canonical' is not available on Debian "
                            "(available: cuda_repo;"),
    'canonical_on_rocky': ('rocky9', [H100], {'nvidia_driver_source': 'canonical'},
                           "nvidia_driver_source on canonical_on_rocky: 'canonical' is not available on Rocky "
                           "(available: cuda_repo;"),
    'cuda_not_on_ubuntu2204': ('ubuntu2204', [H100], {'nvidia_driver_cuda_versions': ['11.6']},
                               "nvidia_driver_cuda_versions on cuda_not_on_ubuntu2204: CUDA 11.6 is not offered by "
                               "NVIDIA's ubuntu2204 repository (it offers 11.7, 11.8,"),
    'cuda_not_on_ubuntu2404': ('ubuntu2404', [H100], {'nvidia_driver_cuda_versions': ['12.3']},
                               "nvidia_driver_cuda_versions on cuda_not_on_ubuntu2404: CUDA 12.3 is not offered by "
                               "NVIDIA's ubuntu2404 repository (it offers 12.5, 12.6,"),
    'cuda_not_on_debian12': ('debian12', [H100], {'nvidia_driver_cuda_versions': ['12.1']},
                             "nvidia_driver_cuda_versions on cuda_not_on_debian12: CUDA 12.1 is not offered by "
                             "NVIDIA's debian12 repository (it offers 12.2, 12.3,"),
    'cuda12_on_debian13': ('debian13', [H100], {'nvidia_driver_cuda_versions': ['12.8']},
                           "nvidia_driver_cuda_versions on cuda12_on_debian13: CUDA 12.8 is not offered by NVIDIA's "
                           "debian13 repository (it offers 13.1, 13.2, 13.3;"),
    'cuda_not_on_rhel8': ('rhel8', [H100], {'nvidia_driver_cuda_versions': ['10.2']},
                          "nvidia_driver_cuda_versions on cuda_not_on_rhel8: CUDA 10.2 is not offered by NVIDIA's "
                          "rhel8 repository (it offers 11.0, 11.1,"),
    'cuda_not_on_rocky9': ('rocky9', [H100], {'nvidia_driver_cuda_versions': ['11.6']},
                           "nvidia_driver_cuda_versions on cuda_not_on_rocky9: CUDA 11.6 is not offered by NVIDIA's "
                           "rhel9 repository (it offers 11.7, 11.8,"),
    # fourth-generation NVSwitch boards (the Fabric Manager user guide's minimum R570, open modules only on Blackwell,
    # NVLSM from NVIDIA's CUDA repository only) and extra packages of another branch
    'b200_on_565': ('ubuntu2204', [B200], {'nvidia_driver_branch': '565'},
                    'nvidia_driver_branch on b200_on_565: fourth-generation NVSwitch boards need driver branch 570 or '
                    'later, the branch is 565; fourth-generation NVSwitch board: 0000:17:00.0 GPU 0x2901 (B200)'),
    'b300_proprietary': ('debian12', [B300], {'nvidia_driver_open': False},
                         'nvidia_driver_open on b300_proprietary: the Blackwell GPUs of fourth-generation NVSwitch '
                         'boards run only with the open kernel modules'),
    'b300_canonical': ('ubuntu2404', [BRIDGE, B300], {'nvidia_driver_source': 'canonical'},
                       "nvidia_driver_source on b300_canonical: the source has no NVLink Subnet Manager (nvlsm, "
                       "published in NVIDIA's CUDA repository only)"),
    'extra_other_branch': ('ubuntu2404', [B300], {'nvidia_driver_packages_extra': ['nvlink5-575', 'jq']},
                           'nvidia_driver_packages_extra on extra_other_branch: nvlink5-575 is built for branch 575, '
                           'and nvidia_driver_branch is 580'),
}


def test_each_bad_setting_is_refused_before_any_change_naming_variable_and_host(os_play, tmp_path):
    run = os_play(CHECKS, hosts(tmp_path, {name: case[:3] for name, case in REFUSALS.items()}))
    said = [' '.join(msg.split()) for msg in run.failed]
    assert run.rc != 0
    assert [name for name, case in REFUSALS.items() if not any(case[3] in msg for msg in said)] == [], said
    # one refusal per host, and none of them went on
    assert len(said) == len(REFUSALS)
    assert run.out == {}


SKIP = """    - name: Run the role
      ansible.builtin.include_role:
        name: hpcfabric.cluster.nvidia_driver

    - name: Write the role's status
      ansible.builtin.copy:
        content: "{{ nvidia_driver_status | to_json }}"
        dest: "{{ out }}/{{ inventory_hostname }}.json"
        mode: "0644"
      delegate_to: localhost
"""


def test_a_host_without_a_gpu_is_left_alone_when_told_to_skip(os_play, tmp_path):
    run = os_play(SKIP, hosts(tmp_path, {os_key: (os_key, [NIC], {'nvidia_driver_no_gpu_action': 'skip'})
                                         for os_key in ('ubuntu2404', 'rocky9')}))
    assert (run.rc, run.failed) == (0, [])
    assert run.out == {os_key: {'installed': False, 'reason': 'no NVIDIA GPU; nvidia_driver_no_gpu_action is skip',
                                'reboot_pending': False} for os_key in ('ubuntu2404', 'rocky9')}
