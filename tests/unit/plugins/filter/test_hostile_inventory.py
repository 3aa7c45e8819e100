# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Hostile and careless values in the example inventory, through check_inventory.yml's one filter.

Each case mutates one value of inventories/example (as a sysadmin's typo or an attacker's string would) and must be
refused before any host is touched, by a message that names the variable and the host. The cases are grouped by
the file or trust store the value would otherwise reach.
"""
from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from ansible_collections.hpcfabric.cluster.plugins.filter.inventory_problems import FilterModule

inventory_problems = FilterModule().filters()['inventory_problems']

EXAMPLE = Path(__file__).resolve().parents[4] / 'inventories' / 'example'
NODE_ROLES = ['cluster_model', 'os_base', 'rdma', 'nvidia_driver', 'fabric_network', 'roce_qos', 'mpi', 'bench_env',
              'mpi_hostfile', 'ssh_trust', 'storage', 'validate', 'slurm']
NODES = ['b300-01', 'b300-02']


def example_inventory(group_name):
    """The example's hosts.yml and the variables of ``group_name`` (over all and hpc_cluster), as Ansible layers them."""
    group = {}
    for name in ('all', 'hpc_cluster', group_name):
        f = EXAMPLE / 'group_vars' / (name + '.yml')
        if f.exists():
            group.update(yaml.safe_load(f.read_text()) or {})
    return yaml.safe_load((EXAMPLE / 'hosts.yml').read_text()), group


def example_hostvars():
    """The example's two nodes as check_inventory.yml sees them: group variables, then host variables."""
    inventory, group = example_inventory('gpu_nodes')
    hosts = inventory['hpc_cluster']['children']['gpu_nodes']['hosts']
    hostvars = {}
    for host in NODES:
        own = yaml.safe_load((EXAMPLE / 'host_vars' / (host + '.yml')).read_text()) or {}
        hostvars[host] = dict(copy.deepcopy(group), **hosts[host], **own)
    return hostvars


def problems_of(hostvars):
    result = inventory_problems(hostvars, NODES, [], NODE_ROLES, [])
    return result['arguments'] + result['cluster_model'] + result['roce_policy'] + result['node_settings']


def test_the_example_passes_as_shipped():
    assert problems_of(example_hostvars()) == []


def iface(host, i, **values):
    def mutate(hv):
        hv[host]['fabric_network_interfaces'][i].update(values)
    return mutate


def rail(i, **values):
    def mutate(hv):
        for host in NODES:
            hv[host]['fabric_network_rails'][i].update(values)
    return mutate


def route(host, i, **values):
    def mutate(hv):
        hv[host]['fabric_network_interfaces'][i]['routes'] = [dict({'to': '10.200.0.0/16', 'via': '10.100.0.1'}, **values)]
    return mutate


def setting(host, **values):
    def mutate(hv):
        hv[host].update(values)
    return mutate


# (mutation, the text the refusal must contain: the variable, the host, the rule)
CASES = {
    # /etc/hosts and known_hosts: the fabric names
    'hostname with a newline adds a hosts line': (
        iface('b300-02', 0, hostname='b300-02-r0\n10.0.0.1 evil'),
        'fabric_network_interfaces[0].hostname on b300-02:'),
    'hostname wildcard in known_hosts': (iface('b300-01', 1, hostname='*'), 'fabric_network_interfaces[1].hostname on b300-01:'),
    'hostname with a space gives two names': (iface('b300-01', 0, hostname='node a'), 'fabric_network_interfaces[0].hostname on b300-01:'),
    'hostname cert-authority marker': (iface('b300-01', 0, hostname='@cert-authority'), '.hostname on b300-01:'),
    'hostname with a comma (known_hosts list)': (iface('b300-02', 2, hostname='a,b'), 'fabric_network_interfaces[2].hostname on b300-02:'),
    'hostname trailing hyphen': (iface('b300-02', 2, hostname='node-'), 'fabric_network_interfaces[2].hostname on b300-02:'),
    'hostname label too long': (iface('b300-02', 3, hostname='a' * 64), 'fabric_network_interfaces[3].hostname on b300-02:'),
    'hostname with an underscore': (iface('b300-01', 3, hostname='b300_01'), 'fabric_network_interfaces[3].hostname on b300-01:'),
    'rail name with a space': (rail(0, name='rail 0'), 'fabric_network_rails[0].name:'),
    'rail name with a newline': (rail(1, name='r1\n1.2.3.4 x'), 'fabric_network_rails[1].name:'),
    'rail name with a dot': (rail(2, name='r.2'), 'fabric_network_rails[2].name:'),
    'rail name a wildcard': (rail(3, name='*'), 'fabric_network_rails[3].name:'),
    # network files: interface names and MACs
    'interface name with a slash': (iface('b300-01', 0, name='enp1/0'), 'fabric_network_interfaces[0].name on b300-01:'),
    'interface name too long': (iface('b300-01', 0, name='enp1as0np0abcdef'), 'fabric_network_interfaces[0].name on b300-01:'),
    'interface name glob matches every link': (iface('b300-02', 1, name='enp*'), 'fabric_network_interfaces[1].name on b300-02:'),
    'interface name with a newline': (iface('b300-02', 1, name='eth0\nRUN+="x"'), 'fabric_network_interfaces[1].name on b300-02:'),
    'interface name with a quote': (iface('b300-02', 4, name='eth"0'), 'fabric_network_interfaces[4].name on b300-02:'),
    'interface name dot-dot': (iface('b300-02', 5, name='..'), 'fabric_network_interfaces[5].name on b300-02:'),
    'interface name with a colon (alias)': (iface('b300-02', 5, name='eth0:1'), 'fabric_network_interfaces[5].name on b300-02:'),
    'interface name with a space': (iface('b300-01', 6, name='eth 0'), 'fabric_network_interfaces[6].name on b300-01:'),
    'MAC with dashes': (iface('b300-01', 7, mac='58-a2-e1-00-00-01'), 'fabric_network_interfaces[7].mac on b300-01:'),
    'MAC too short': (iface('b300-01', 7, mac='58:a2:e1:00:00'), 'fabric_network_interfaces[7].mac on b300-01:'),
    'MAC multicast': (iface('b300-02', 7, mac='01:00:5e:00:00:01'), 'fabric_network_interfaces[7].mac on b300-02:'),
    'MAC all zero': (iface('b300-02', 7, mac='00:00:00:00:00:00'), 'fabric_network_interfaces[7].mac on b300-02:'),
    'MAC with a newline': (iface('b300-02', 6, mac='58:a2:e1:00:00:01\n[Match]'), 'fabric_network_interfaces[6].mac on b300-02:'),
    # routes
    'gateway outside the rail': (route('b300-01', 0, via='10.100.9.1'), 'fabric_network_interfaces[0].routes[0].via on b300-01:'),
    'gateway is the node itself': (route('b300-01', 0, via='10.100.0.11'), 'fabric_network_interfaces[0].routes[0].via on b300-01:'),
    'gateway not an address': (route('b300-02', 0, via='gw; reboot'), 'fabric_network_interfaces[0].routes[0].via on b300-02:'),
    'default route on a rail': (route('b300-01', 0, to='0.0.0.0/0'),
                                'fabric_network_interfaces[0].routes[0].to on b300-01: 0.0.0.0/0 is a default route'),
    'route destination with host bits': (route('b300-02', 0, to='10.200.0.1/16'), 'fabric_network_interfaces[0].routes[0].to on b300-02:'),
    'route destination with a newline': (route('b300-02', 1, to='10.200.0.0/16\nGateway=1.1.1.1', via='10.100.1.1'),
                                         'fabric_network_interfaces[1].routes[0].to on b300-02:'),
    # /etc/fstab: mount strings
    'mount source with a newline': (
        lambda hv: hv['b300-01']['storage_mounts'].append(
            {'src': 'nfs01:/export\n/dev/sda1 / ext4', 'path': '/data/x', 'fstype': 'nfs'}),
        'storage_mounts on b300-01: [2].src'),
    'mount point /etc/..': (
        lambda hv: hv['b300-02']['storage_mounts'].append({'src': 'nfs01:/x', 'path': '/data/../etc', 'fstype': 'nfs'}),
        'storage_mounts on b300-02: [2].path /data/../etc has a . or .. component'),
    'mount option with a TAB': (
        lambda hv: hv['b300-02']['storage_mounts'][0].update(opts='ro\tnoexec'), 'storage_mounts on b300-02: [0].opts'),
    'default NFS options with a newline': (
        lambda hv: hv['b300-01'].update(storage_nfs_options='hard\n/dev/sdb /boot ext4'), 'storage_mounts on b300-01: storage_nfs_options'),
    # directories and files the roles create, own, empty or install into
    'work directory /': (setting('b300-01', validate_work_dir='/'), "validate_work_dir on b300-01: '/' is a system directory"),
    'work directory /tmp loses its sticky bit': (setting('b300-02', validate_work_dir='/tmp'),
                                                 "validate_work_dir on b300-02: '/tmp' is a system directory"),
    'checkpoints over /etc': (setting('b300-01', validate_checkpoint_dir='/etc'), 'validate_checkpoint_dir on b300-01:'),
    'checkpoint dir with a shell command': (setting('b300-01', validate_checkpoint_dir='/data/ckpt;reboot'),
                                            'validate_checkpoint_dir on b300-01:'),
    'HPC-X prefix with $( )': (setting('b300-02', mpi_hpcx_prefix='/opt/hpcx$(id)'), 'mpi_hpcx_prefix on b300-02:'),
    'HPC-X prefix relative': (setting('b300-02', mpi_hpcx_prefix='opt/hpcx'), 'mpi_hpcx_prefix on b300-02:'),
    'source prefix with ..': (setting('b300-01', mpi_source_prefix='/opt/../usr'), 'mpi_source_prefix on b300-01:'),
    'build dir /var/tmp (emptied after the build)': (setting('b300-01', mpi_source_build_dir='/var/tmp'),
                                                     'mpi_source_build_dir on b300-01:'),
    'modulefiles into /usr/share': (setting('b300-02', mpi_modulefiles_dir='/usr/share'), 'mpi_modulefiles_dir on b300-02:'),
    'bench dir under /proc': (setting('b300-02', validate_bench_dir='/proc/self'), 'validate_bench_dir on b300-02:'),
    'bench venv over /usr': (setting('b300-01', bench_env_dir='/usr'), "bench_env_dir on b300-01: '/usr' is a system directory"),
    'script dir with a newline (unit file)': (setting('b300-01', roce_qos_script_dir='/usr/local/lib/x\nExecStartPost=/bin/sh'),
                                              'roce_qos_script_dir on b300-01:'),
    'hostfile path with a space': (setting('b300-01', mpi_hostfile_path='/etc/mpi/host file'), 'mpi_hostfile_path on b300-01:'),
    'cluster key in /tmp': (setting('b300-01', ssh_trust_key_dir='/tmp/keys'),
                            "ssh_trust_key_dir on b300-01: '/tmp/keys' is under a directory every user can write to"),
    'cluster key dir relative': (setting('b300-02', ssh_trust_key_dir='keys'), 'ssh_trust_key_dir on b300-02:'),
    # the cluster key's from= patterns
    'authorized from everywhere': (setting('b300-01', ssh_trust_authorized_from=['*']), 'ssh_trust_authorized_from[0] on b300-01:'),
    'authorized from with a quote injecting command=': (
        setting('b300-02', ssh_trust_authorized_from=['10.0.0.0/8",command="/bin/sh']), 'ssh_trust_authorized_from[0] on b300-02:'),
    'authorized from a negation': (setting('b300-02', ssh_trust_authorized_from=['10.0.0.0/8', '!10.0.0.1']),
                                   'ssh_trust_authorized_from[1] on b300-02:'),
    'authorized from a comma-joined list': (setting('b300-01', ssh_trust_authorized_from=['10.0.0.1,*']),
                                            'ssh_trust_authorized_from[0] on b300-01:'),
    'download cache over /var/cache': (setting('b300-02', mpi_download_dir='/var/cache'), 'mpi_download_dir on b300-02:'),
    'report directory /': (setting('b300-01', validate_report_dir='/'), 'validate_report_dir on b300-01:'),
    'RoCE config path relative': (setting('b300-02', roce_qos_config_path='roce.json'), 'roce_qos_config_path on b300-02:'),
    # apt sources, dnf repositories and downloads: the URLs of repositories, signing keys and tarballs
    'DOCA repository over plain HTTP': (
        setting('b300-01', rdma_doca_repo_url='http://mirror.example.com/nvidia/doca/2.9.1/ubuntu24.04/x86_64/'),
        "rdma_doca_repo_url on b300-01: 'http://mirror.example.com/nvidia/doca/2.9.1/ubuntu24.04/x86_64/' is plain HTTP"),
    'DOCA signing key over plain HTTP': (
        setting('b300-02', rdma_doca_repo_key_url='http://mirror.example.com/nvidia/doca/GPG-KEY-Mellanox.pub'),
        "rdma_doca_repo_key_url on b300-02: 'http://mirror.example.com/nvidia/doca/GPG-KEY-Mellanox.pub' is plain HTTP"),
    'CUDA keyring over plain HTTP': (
        setting('b300-01', nvidia_driver_keyring_url='http://mirror.example.com/nvidia/cuda/cuda-keyring_1.1-1_all.deb'),
        'nvidia_driver_keyring_url on b300-01: '),
    'plain HTTP allowed for one role only': (
        setting('b300-02', rdma_allow_http=True, nvidia_driver_repo_url='http://mirror.example.com/nvidia/cuda/'),
        "nvidia_driver_repo_url on b300-02: 'http://mirror.example.com/nvidia/cuda/' is plain HTTP: what it serves could "
        "be replaced on the way; use https://, or set nvidia_driver_allow_http: true"),
    'repository URL with a newline adding a trusted source': (
        setting('b300-01', rdma_doca_repo_url='https://mirror.example.com/doca/\ndeb [trusted=yes] http://evil.example/ ./'),
        'rdma_doca_repo_url on b300-01: '),
    'repository URL with a space adding apt options': (
        setting('b300-02', nvidia_driver_repo_url='https://mirror.example.com/cuda/ / [trusted=yes]'),
        'nvidia_driver_repo_url on b300-02: '),
    'credentials in the CUDA repository URL': (
        setting('b300-02', nvidia_driver_repo_url='https://admin:s3cret@mirror.example.com/nvidia/cuda/'),
        "nvidia_driver_repo_url on b300-02: 'https://***@mirror.example.com/nvidia/cuda/' holds credentials"),
    'HPC-X tarball over ftp': (setting('b300-01', mpi_hpcx_url='ftp://mirror.example.com/nvidia/hpcx/hpcx.tbz'),
                               "mpi_hpcx_url on b300-01: 'ftp://mirror.example.com/nvidia/hpcx/hpcx.tbz' is not an "
                               "https:// URL"),
    'Open MPI tarball URL without a scheme': (
        setting('b300-02', mpi_source_ompi_url='download.open-mpi.org/release/open-mpi/v4.1/openmpi-4.1.8.tar.bz2'),
        'mpi_source_ompi_url on b300-02: '),
    'local mirror URL naming another host': (setting('b300-01', rdma_doca_repo_url='file://fileserver/srv/doca/'),
                                             "rdma_doca_repo_url on b300-01: 'file://fileserver/srv/doca/' is not a file: "
                                             "URL of an absolute path on the node"),
    # the slurm role's site repository and its package names
    'Slurm repository URL with a newline adding a trusted source': (
        setting('b300-01', slurm_version='23.11', slurm_repo_key_src='/srv/keys/slurm.asc',
                slurm_repo_url='http://10.77.12.1:8080/\ndeb [trusted=yes] http://evil.example/ ./'),
        'slurm_repo_url on b300-01: '),
    'Slurm repository suite with apt options': (
        setting('b300-02', slurm_version='23.11', slurm_repo_key_src='/srv/keys/slurm.asc',
                slurm_repo_url='https://10.77.12.1:8443/', slurm_repo_suite='./ [trusted=yes]'),
        "slurm_repo_suite on b300-02: './ [trusted=yes]' is not an apt suite"),
    'Slurm repository without a signing key': (
        setting('b300-01', slurm_version='23.11', slurm_repo_url='https://repo.example.com/slurm/'),
        'slurm_repo_key_url on b300-01: the site repository needs its signing key from exactly one of'),
    'Slurm signing key over plain HTTP': (
        setting('b300-02', slurm_version='23.11', slurm_repo_url='https://10.77.12.1:8443/',
                slurm_repo_key_url='http://10.77.12.1:8080/key.asc'),
        "slurm_repo_key_url on b300-02: 'http://10.77.12.1:8080/key.asc' is plain HTTP"),
    'Slurm package name carrying apt options': (
        setting('b300-01', slurm_version='23.11',
                slurm_packages={'compute': ['slurmd -o APT::Get::AllowUnauthenticated=true']}),
        'slurm_packages.compute[0] on b300-01: '),
    'Slurm repository without the version it installs': (
        setting('b300-02', slurm_repo_url='https://repo.example.com/slurm/', slurm_repo_key_src='/srv/keys/slurm.asc'),
        'slurm_version on b300-02: required with slurm_repo_url or slurm_packages'),
    # limits.d, sysctl.d, chrony: os_base
    'open-file limit zero': (setting('b300-02', os_base_nofile=0), 'os_base on b300-02: os_base_nofile 0'),
    'memlock with a unit limits.d cannot read': (setting('b300-01', os_base_memlock='64G'), 'os_base on b300-01: os_base_memlock "64G"'),
    'sysctl value with a newline': (setting('b300-02', os_base_sysctl_extra={'vm.swappiness': '10\nkernel.sysrq = 1'}),
                                    'os_base on b300-02: kernel parameter vm.swappiness'),
    'sysctl name that is no parameter': (setting('b300-02', os_base_sysctl_extra={'swappiness': 10}),
                                         'os_base on b300-02: kernel parameter "swappiness" is not a sysctl name'),
    'time server with a newline adds a chrony directive': (
        setting('b300-01', os_base_ntp_servers=['ntp1.example.org\nallow all']), 'os_base on b300-01: os_base_ntp_servers[0]'),
    # the MPI account, the validation's settings (refused before layer 1, not in layer 4)
    'MPI jobs as root without the opt-in': (
        lambda hv: [hv[h].update(ssh_trust_user='root') for h in NODES], 'ssh_trust_user on b300-01: \'root\' would let'),
    'MPI account with a space': (lambda hv: [hv[h].update(ssh_trust_user='mpi user') for h in NODES],
                                 "ssh_trust_user on b300-02: 'mpi user' is not a login name"),
    'zero bandwidth threshold without the opt-in': (
        setting('b300-01', validate_allreduce_min_busbw_gbs=0), 'validate on b300-01: validate_allreduce_min_busbw_gbs=0'),
    'negative bandwidth threshold': (setting('b300-02', validate_allreduce_min_busbw_gbs=-5),
                                     'validate on b300-02: validate_allreduce_min_busbw_gbs=-5 is below zero'),
    'no iteration': (setting('b300-01', validate_iters=0), 'validate on b300-01: validate_iters=0 must be at least 1'),
    'derived fraction above one': (setting('b300-02', validate_derived_fraction=1.5),
                                   'validate on b300-02: validate_derived_fraction=1.5'),
    # modprobe.d: LNet networks
    'LNet network with a quote and a line break adds an install command': (
        setting('b300-01', storage_lnet_networks=['o2ib0(ib0)"\ninstall lnet /bin/sh -c id']),
        'storage_lnet_networks[0] on b300-01:'),
    'LNet network of an unknown type': (setting('b300-02', storage_lnet_networks=['udp0(eth0)']),
                                        'storage_lnet_networks[0] on b300-02:'),
    # the MCA file and the job environment
    'UCX device with a line break': (setting('b300-01', mpi_ucx_net_devices=['mlx5_0:1\nUCX_TLS=tcp']),
                                     'mpi_ucx_net_devices[0] on b300-01:'),
    'UCX device list in one entry with a ;': (
        setting('b300-02', mpi_ucx_net_devices=['mlx5_0:1;LD_PRELOAD=/tmp/x.so']), 'mpi_ucx_net_devices[0] on b300-02:'),
    'UCX transport with a comma': (setting('b300-01', mpi_ucx_tls=['rc,tcp', 'cuda_copy', 'cuda_ipc']),
                                   'mpi_ucx_tls[0] on b300-01:'),
    'MCA value with a line break sets another parameter': (
        setting('b300-02', mpi_mca_params_extra={'btl_tcp_if_include': 'ib0\nplm_rsh_agent = /tmp/x'}),
        'mpi_mca_params_extra on b300-02: btl_tcp_if_include:'),
    'MCA parameter name with a space': (setting('b300-01', mpi_mca_params_extra={'btl tcp': 'x'}),
                                        'mpi_mca_params_extra on b300-01:'),
    'environment value with a line break': (setting('b300-01', mpi_env_extra={'NCCL_DEBUG': 'INFO\nexport X=1'}),
                                            'mpi_env_extra.NCCL_DEBUG on b300-01:'),
    'environment name with a trailing line break': (setting('b300-02', mpi_env_extra={'NCCL_DEBUG\n': 'INFO'}),
                                                    'mpi_env_extra on b300-02:'),
    # a trailing line break, which a $-anchored pattern lets through
    'hostname with a trailing line break': (iface('b300-01', 2, hostname='b300-01-r2\n'),
                                            'fabric_network_interfaces[2].hostname on b300-01:'),
    'sysctl name with a trailing line break': (setting('b300-01', os_base_sysctl_extra={'vm.swappiness\n': 10}),
                                               'os_base on b300-01: kernel parameter'),
    # names and addresses of other inventory hosts
    'fabric address is another node\'s management address': (
        lambda hv: (hv['b300-02'].update(ansible_host='10.100.0.99'),
                    hv['b300-01']['fabric_network_interfaces'][0].update(address='10.100.0.99/24')),
        'fabric_network_interfaces[0].address on b300-01: 10.100.0.99 is already used by b300-02 (ansible_host)'),
    # misspelt settings, which the roles would ignore
    'misspelt MTU variable': (setting('b300-01', fabric_network_mtus=4200),
                              'fabric_network_mtus on b300-01: no hpcfabric.cluster role has this variable (did you mean '
                              'fabric_network_mtu?)'),
    'misspelt slots variable': (setting('b300-02', mpi_hostfile_slot=4), 'mpi_hostfile_slot on b300-02:'),
    # system directories a role would own or a mount would hide, however the path is written
    'RoCE script dir is where udev reads its rules': (
        setting('b300-01', roce_qos_script_dir='/etc/udev/rules.d'),
        "roce_qos_script_dir on b300-01: '/etc/udev/rules.d' is a system directory"),
    'RoCE script dir is profile.d': (setting('b300-02', roce_qos_script_dir='/etc/profile.d'),
                                     "roce_qos_script_dir on b300-02: '/etc/profile.d' is a system directory"),
    'RoCE script dir over the NFS homes': (setting('b300-01', roce_qos_script_dir='/home'),
                                           "roce_qos_script_dir on b300-01: '/home' is a system directory"),
    'mount over /etc with a trailing slash': (
        lambda hv: hv['b300-01']['storage_mounts'].append({'src': 'nfs01:/etc', 'path': '/etc/', 'fstype': 'nfs'}),
        "storage_mounts on b300-01: [2].path '/etc/' is a system directory"),
    'mount over /usr written //usr': (
        lambda hv: hv['b300-02']['storage_mounts'].append({'src': 'nfs01:/usr', 'path': '//usr', 'fstype': 'nfs4'}),
        "storage_mounts on b300-02: [2].path '//usr' is a system directory"),
    'mount over /opt hides HPC-X': (
        lambda hv: hv['b300-01']['storage_mounts'][0].update(path='/opt'),
        "storage_mounts on b300-01: [0].path '/opt' is a system directory"),
    'mount over /etc/ssh': (
        lambda hv: hv['b300-02']['storage_mounts'][1].update(path='/etc/ssh'),
        "storage_mounts on b300-02: [1].path '/etc/ssh' is a system directory"),
    'mount under /proc': (lambda hv: hv['b300-02']['storage_mounts'][0].update(path='/proc/fs/nfsd'),
                          "storage_mounts on b300-02: [0].path '/proc/fs/nfsd' is a system directory or under /proc"),
    # the udev rule and the systemd units of roce_qos
    'RoCE interface with a trailing line break ends the udev rule': (
        setting('b300-01', roce_qos_interfaces=['enp1as0np0\n']), 'roce_qos_interfaces[0] on b300-01:'),
    'RoCE interface with a quote closes the udev match': (
        setting('b300-02', roce_qos_interfaces=['enp1as0np0', 'x", RUN+="/bin/sh']), 'roce_qos_interfaces[1] on b300-02:'),
    'RoCE interface with | widens the udev match': (
        setting('b300-01', roce_qos_interfaces=['enp1as0np0|eth0']), 'roce_qos_interfaces[0] on b300-01:'),
    'interpreter with a line break adds an ExecStart line': (
        setting('b300-01', roce_qos_python='/usr/bin/python3\nExecStartPre=/bin/sh -c id'), 'roce_qos_python on b300-01:'),
    'interpreter with arguments and a quote': (setting('b300-02', roce_qos_python='/usr/bin/python3 -c "import os"'),
                                               'roce_qos_python on b300-02:'),
    'config path with a systemd specifier': (setting('b300-01', roce_qos_config_path='/etc/hpcfabric/%H.json'),
                                             'roce_qos_config_path on b300-01:'),
    # an interpreter setting that is not a path
    'interpreter by command name': (setting('b300-01', roce_qos_python='python3'),
                                    "roce_qos_python on b300-01: 'python3' is not an absolute normalised path"),
    'interpreter auto, which only Ansible knows': (setting('b300-02', roce_qos_python='auto'),
                                                   "roce_qos_python on b300-02: 'auto' is not an absolute"),
    # interface identities: names that resolve to the node itself, one MAC or one rail twice
    'fabric hostname localhost': (iface('b300-01', 0, hostname='localhost'),
                                  'fabric_network_interfaces[0].hostname on b300-01: fabric hostname localhost resolves '
                                  'locally on every node'),
    'fabric hostname localhost.localdomain': (iface('b300-02', 1, hostname='localhost.localdomain'),
                                              'fabric_network_interfaces[1].hostname on b300-02: fabric hostname'),
    'fabric hostname ip6-localhost': (iface('b300-01', 2, hostname='ip6-localhost'),
                                      'fabric_network_interfaces[2].hostname on b300-01: fabric hostname'),
    'fabric hostname in upper case LOCALHOST': (iface('b300-02', 3, hostname='LOCALHOST'),
                                                'fabric_network_interfaces[3].hostname on b300-02: fabric hostname'),
    'fabric hostname under .localhost': (iface('b300-01', 4, hostname='rail4.localhost'),
                                         'fabric_network_interfaces[4].hostname on b300-01: fabric hostname'),
    'one MAC on two interfaces of a node': (
        lambda hv: (iface('b300-01', 0, mac='58:a2:e1:00:00:01')(hv), iface('b300-01', 1, mac='58:A2:E1:00:00:01')(hv)),
        'fabric_network_interfaces[1].mac on b300-01: 58:a2:e1:00:00:01 is also the MAC of fabric_network_interfaces[0] '
        'on b300-01'),
    'one MAC on two nodes (a copied entry)': (
        lambda hv: (iface('b300-01', 5, mac='58:a2:e1:00:00:05')(hv), iface('b300-02', 5, mac='58:a2:e1:00:00:05')(hv)),
        'fabric_network_interfaces[5].mac on b300-02: 58:a2:e1:00:00:05 is also the MAC of fabric_network_interfaces[5] '
        'on b300-01'),
    'two interfaces of a node on one rail': (
        iface('b300-02', 6, rail=5, address='10.100.5.99/24'),
        'fabric_network_interfaces[6].rail on b300-02: rail 5 already has fabric_network_interfaces[5]'),
    # one MTU range for the fabric and the RoCE policy
    'fabric MTU below Ethernet\'s 1500': (iface('b300-01', 0, mtu=1400),
                                          'fabric_network_interfaces[0].mtu on b300-01: 1400 is outside 1500-9216'),
}


def test_plain_http_passes_where_each_role_allows_it():
    hostvars = example_hostvars()
    for host in NODES:
        hostvars[host].update(
            rdma_allow_http=True, rdma_doca_repo_url='http://mirror.cluster.internal/doca/2.9.1/ubuntu24.04/x86_64/',
            rdma_doca_repo_key_url='http://mirror.cluster.internal/doca/GPG-KEY-Mellanox.pub',
            nvidia_driver_allow_http=True, nvidia_driver_repo_url='http://mirror.cluster.internal:8080/cuda/',
            mpi_allow_http=True, mpi_hpcx_url='http://mirror.cluster.internal/hpcx/hpcx-v2.22.tbz',
            slurm_allow_http=True, slurm_version='23.11', slurm_repo_url='http://10.77.12.1:8080/',
            slurm_repo_key_src='/srv/keys/slurm.asc')
    assert problems_of(hostvars) == []
    # the allowance is each node's own
    hostvars['b300-02']['mpi_allow_http'] = False
    assert [p.split(':')[0] for p in problems_of(hostvars)] == ['mpi_hpcx_url on b300-02']


def test_a_password_in_a_url_never_reaches_a_message():
    hostvars = example_hostvars()
    hostvars['b300-01']['mpi_hpcx_url'] = 'https://svc:s3cret@mirror.example.com/hpcx.tbz'
    problems = problems_of(hostvars)
    assert problems and not [p for p in problems if 's3cret' in p]


@pytest.mark.parametrize('name', sorted(CASES))
def test_a_hostile_value_is_refused_naming_variable_and_host(name):
    mutate, expected = CASES[name]
    hostvars = example_hostvars()
    mutate(hostvars)
    problems = problems_of(hostvars)
    assert any(expected in p for p in problems), problems


@pytest.mark.parametrize('values', [
    {'ssh_trust_user': 'root', 'ssh_trust_allow_root': True},
    {'validate_allreduce_min_busbw_gbs': 0, 'validate_allow_zero_threshold': True},
    {'storage_lnet_networks': ['o2ib0(eth0,eth1)[0,1]']},

    {'mpi_ucx_net_devices': ['mlx5_0:1', 'mlx5_1:1'], 'mpi_mca_params_extra': {'btl': '^openib,tcp'}},
], ids=['root opted in', 'zero threshold opted in', 'LNet with CPTs', 'UCX devices and MCA'])
def test_what_an_opt_in_or_a_good_value_allows_passes(values):
    hostvars = example_hostvars()
    for host in NODES:
        hostvars[host].update(values)
    assert problems_of(hostvars) == []


def test_a_fabric_name_or_address_of_another_inventory_host_is_refused():
    """A switch's name as a node's fabric name would send the node's peers to the switch; its address likewise."""
    hostvars = example_hostvars()
    hostvars['leaf01'] = {'ansible_host': '10.100.3.254', 'switch_qos_platform': 'cumulus', 'switch_qos_ports': ['swp1']}
    hostvars['b300-01']['fabric_network_interfaces'][0]['hostname'] = 'leaf01'
    hostvars['b300-02']['fabric_network_interfaces'][3]['address'] = '10.100.3.254/24'
    problems = inventory_problems(hostvars, NODES, ['leaf01'], NODE_ROLES, ['switch_qos'])['cluster_model']
    assert 'fabric_network_interfaces[0] on b300-01: fabric hostname leaf01 is already used by leaf01' in problems
    assert 'fabric_network_interfaces[3].address on b300-02: 10.100.3.254 is already used by leaf01 (ansible_host)' \
        in problems


def test_a_default_route_on_a_rail_passes_when_asked_for():
    hostvars = example_hostvars()
    route('b300-01', 0, to='0.0.0.0/0')(hostvars)
    hostvars['b300-01']['fabric_network_allow_default_route'] = True
    assert problems_of(hostvars) == []


SWITCHES = ['leaf01', 'leaf02']


def example_switch_hostvars():
    """The example's nodes and its two leaf switches (Cumulus leaf01, SONiC leaf02) as check_inventory.yml sees them."""
    inventory, group = example_inventory('fabric_switches')
    hostvars = example_hostvars()
    for host, own in inventory['hpc_cluster']['children']['fabric_switches']['hosts'].items():
        hostvars[host] = dict(copy.deepcopy(group), **own)
    return hostvars


def switch_problems_of(hostvars):
    result = inventory_problems(hostvars, NODES, SWITCHES, NODE_ROLES, ['switch_qos'])
    return result['arguments'] + result['cluster_model'] + result['roce_policy'] + result['node_settings']


def switch(host, **values):
    def mutate(hv):
        hv[host].update(values)
    return mutate


# what reaches a switch's configuration lines and the NVUE URL built from switch_qos_nvue_host
SWITCH_CASES = {
    'port with a trailing line break (an EOS configuration line of its own)': (
        switch('leaf01', switch_qos_ports=['swp1', 'swp2\n']), "switch_qos_ports on leaf01: 'swp2\\n' is not a port name"),
    'port with a line break and a command': (
        switch('leaf02', switch_qos_ports=['Ethernet0\nshutdown']), 'switch_qos_ports on leaf02:'),
    'port with a blank (two words of nv set)': (switch('leaf01', switch_qos_ports=['swp1 swp2']),
                                                'switch_qos_ports on leaf01:'),
    'port with a quote': (switch('leaf02', switch_qos_ports=['Ethernet0"']), 'switch_qos_ports on leaf02:'),
    'port listed twice': (switch('leaf01', switch_qos_ports=['swp1', 'swp1']),
                          'switch_qos_ports on leaf01: swp1 listed more than once'),
    'NVUE address with a fragment': (switch('leaf01', switch_qos_nvue_host='evil.example.com#'),
                                     "switch_qos_nvue_host on leaf01: 'evil.example.com#' is not a host name"),
    'NVUE address with a query': (switch('leaf01', switch_qos_nvue_host='leaf01?x='), 'switch_qos_nvue_host on leaf01:'),
    'NVUE address with a path': (switch('leaf01', switch_qos_nvue_host='evil.example.com/leaf01'),
                                 'switch_qos_nvue_host on leaf01:'),
    'NVUE address with user information': (switch('leaf01', switch_qos_nvue_host='10.10.0.201@evil.example.com'),
                                           'switch_qos_nvue_host on leaf01:'),
    'NVUE address with a blank': (switch('leaf01', switch_qos_nvue_host='leaf 01'), 'switch_qos_nvue_host on leaf01:'),
    'NVUE address with a port of its own': (switch('leaf01', switch_qos_nvue_host='10.10.0.201:443'),
                                            'switch_qos_nvue_host on leaf01:'),
    'NVUE address a bare IPv6 address': (switch('leaf01', switch_qos_nvue_host='2001:db8::201'),
                                         "switch_qos_nvue_host on leaf01: '2001:db8::201' is an IPv6 address without "
                                         "brackets"),
    'NVUE port out of range': (switch('leaf01', switch_qos_nvue_port=70000), 'switch_qos_nvue_port on leaf01: 70000'),
    'NVUE user with a colon': (switch('leaf01', switch_qos_nvue_user='cumulus:x'), 'switch_qos_nvue_user on leaf01:'),
    'SONiC patch path with a blank (two words of config apply-patch)': (
        switch('leaf02', switch_qos_sonic_patch_path='/tmp/roce patch.json'), 'switch_qos_sonic_patch_path on leaf02:'),
    'render directory /etc': (switch('leaf02', switch_qos_render_dir='/etc'),
                              "switch_qos_render_dir on leaf02: '/etc' is a system directory"),
}


def test_the_example_with_its_switches_passes_as_shipped():
    assert switch_problems_of(example_switch_hostvars()) == []


@pytest.mark.parametrize('name', sorted(SWITCH_CASES))
def test_a_hostile_switch_value_is_refused_naming_variable_and_host(name):
    mutate, expected = SWITCH_CASES[name]
    hostvars = example_switch_hostvars()
    mutate(hostvars)
    problems = switch_problems_of(hostvars)
    assert any(expected in p for p in problems), problems


@pytest.mark.parametrize('host, values', [
    ('leaf01', {'switch_qos_nvue_host': '[2001:db8::201]'}),
    ('leaf01', {'switch_qos_nvue_host': 'leaf01.mgmt.example.com', 'switch_qos_nvue_port': 443}),
    ('leaf02', {'switch_qos_ports': ['Ethernet1/1', 'Ethernet1/2', 'PortChannel0001']}),
], ids=['bracketed IPv6', 'host name and port', 'EOS and port-channel names'])
def test_good_switch_values_pass(host, values):
    hostvars = example_switch_hostvars()
    hostvars[host].update(values)
    assert switch_problems_of(hostvars) == []


@pytest.mark.parametrize('path', ['/home', '/home/', '/mnt/data', '/srv', '/media/share'])
def test_a_mount_on_home_or_under_mnt_passes(path):
    """An HPC site mounts NFS homes on /home and shares under /mnt: a mount point, unlike a role's own directory."""
    hostvars = example_hostvars()
    hostvars['b300-01']['storage_mounts'].append({'src': 'nfs01:/export/home', 'path': path, 'fstype': 'nfs'})
    assert problems_of(hostvars) == []


def test_the_roce_settings_a_site_sets_pass():
    hostvars = example_hostvars()
    hostvars['b300-01'].update(roce_qos_interfaces=['enp1as0np0', 'enp3cs0np0', 'ens1f0v100.100'],
                               roce_qos_python='/usr/libexec/platform-python', roce_qos_script_dir='/opt/site/hpcfabric')
    assert problems_of(hostvars) == []
