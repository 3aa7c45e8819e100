#!/bin/sh
# mpirun starts this once per rank: rank_env.sh MAP COMMAND... The rank already has the node's job environment
# (mca_base_env_list, the same as a login shell's). The map, written by the validate role from the cluster model,
# only binds: the rank's GPU's nearest fabric RDMA ports (a subset of the job environment's UCX_NET_DEVICES) and the
# GPU's NUMA node; then the command runs. Without a map (no GPU facts, as in the lab) the command runs as it is.
map="$1"
shift
rank="${OMPI_COMM_WORLD_LOCAL_RANK:-0}"
if [ -r "$map" ]; then
  # rank lines: local_rank gpu net_devices numa
  line="$(awk -v r="$rank" '$1 == r { print $3 " " $4; exit }' "$map")"
  nets="${line% *}"
  numa="${line#* }"
  if [ -n "$nets" ] && [ "$nets" != "-" ]; then
    UCX_NET_DEVICES="$nets"
    export UCX_NET_DEVICES
  fi
  if [ -n "$numa" ] && [ "$numa" != "-" ] && command -v numactl >/dev/null 2>&1; then
    exec numactl --cpunodebind="$numa" --membind="$numa" "$@"
  fi
fi
exec "$@"
