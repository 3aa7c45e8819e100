#!/usr/bin/env bash
# How close the allreduce bench gets to the link: iperf3 between the first two nodes over the fabric (one TCP
# stream, four, and both directions at once), then the bench with one rank on each of those nodes; prints busbw per
# size as a fraction of the ceilings. A 2-rank allreduce sends and receives the whole buffer on both nodes at the
# same time, so the both-directions rate (per direction) is the ceiling it can reach; on the lab both directions
# share the same CPU cores. Between the two: MPI_Sendrecv of a buffer each way (tests/perf/mpi_bidir.py), MPI's own
# both-directions rate over the same path without any reduction, and what a numpy add of the buffer costs.
# Usage: tests/perf/fabric_efficiency.sh [INVENTORY]   (default inventories/lab, after `make demo` or site.yml)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
export PATH="$ROOT/.venv/bin:$PATH" ANSIBLE_NOCOLOR=1 ANSIBLE_LOAD_CALLBACK_PLUGINS=0 ANSIBLE_STDOUT_CALLBACK=ansible.builtin.minimal
inv="${1:-inventories/lab}"
hosts="$(ansible-inventory -i "$inv" --list | python3 -c 'import json, sys; print(" ".join(json.load(sys.stdin)["gpu_nodes"]["hosts"][:2]))')"
read -r a b <<<"$hosts"
[ -n "${b:-}" ] || { echo "need two nodes in gpu_nodes of $inv" >&2; exit 1; }

on() {  # on HOST COMMAND: the command's stdout
  ansible -i "$inv" "$1" -m ansible.builtin.command -a "$2" -o 2>&1 | sed -n 's/^[^|]*| [A-Z]* | rc=0 | (stdout) //p' | sed 's/\\n/\n/g'
}
fabric_ip() { ansible-inventory -i "$inv" --host "$1" | python3 -c 'import json, sys; print(json.load(sys.stdin)["fabric_network_interfaces"][0]["address"].split("/")[0])'; }

ansible -i "$inv" "$a,$b" -m ansible.builtin.apt -a "name=iperf3 state=present" >/dev/null
ip_b="$(fabric_ip "$b")"
on "$b" "iperf3 --server --daemon --one-off --bind $ip_b" >/dev/null
sleep 1
one="$(on "$a" "iperf3 --client $ip_b --time 10 --json" | python3 -c 'import json, sys; print(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"] / 8e9)')"
on "$b" "iperf3 --server --daemon --one-off --bind $ip_b" >/dev/null
sleep 1
four="$(on "$a" "iperf3 --client $ip_b --time 10 --parallel 4 --json" | python3 -c 'import json, sys; print(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"] / 8e9)')"
on "$b" "iperf3 --server --daemon --one-off --bind $ip_b" >/dev/null
sleep 1
bidir="$(on "$a" "iperf3 --client $ip_b --time 10 --bidir --json" | python3 -c 'import json, sys; e = json.load(sys.stdin)["end"]; print(min(e["sum_received"]["bits_per_second"], e["sum_received_bidir_reverse"]["bits_per_second"]) / 8e9)')"
printf 'iperf3 %s -> %s over the fabric: %.3f GB/s (1 stream), %.3f GB/s (4 streams), %.3f GB/s each way (both directions at once)\n' \
  "$a" "$b" "$one" "$four" "$bidir"

user="$(ansible-inventory -i "$inv" --host "$a" | python3 -c 'import json, sys; print(json.load(sys.stdin).get("ssh_trust_user", "mpiuser"))')"
names="$(on "$a" "cat /etc/mpi/hostfile" | grep -v '^#' | head -2 | awk '{print $1 ":1"}' | paste -sd,)"
ansible -i "$inv" "$a,$b" -m ansible.builtin.copy -a "src=tests/perf/mpi_bidir.py dest=/tmp/hpcfabric-mpi-bidir.py mode=0644" >/dev/null
on "$a" "su - $user -c 'mpirun --host $names -np 2 python3 /tmp/hpcfabric-mpi-bidir.py'" |
  while read -r size gbs add; do
    printf 'MPI_Sendrecv %9d B both ways: %.3f GB/s each way = %3.0f%% of iperf3 both directions; a numpy add of it %.1f ms\n' \
      "$size" "$gbs" "$(python3 -c "print(100 * $gbs / $bidir)")" "$add"
  done
on "$a" "su - $user -c 'mpirun --host $names -np 2 python3 /opt/hpcfabric/bench/allreduce.py --device cpu --min-bytes 1M --max-bytes 64M --iters 10 --warmup 3 --json /tmp/hpcfabric-efficiency.json >/dev/null && cat /tmp/hpcfabric-efficiency.json'" |
  python3 -c '
import json, sys
ceiling = float(sys.argv[1])
bench = json.load(sys.stdin)
both = float(sys.argv[2])
for r in bench["results"]:
    print("bench 2 ranks %9d B: busbw %.3f GB/s = %3.0f%% of 1 stream, %3.0f%% of both directions" % (
        r["size_bytes"], r["busbw_gbs"], 100 * r["busbw_gbs"] / ceiling, 100 * r["busbw_gbs"] / both))
' "$one" "$bidir"
