#!/bin/sh
# mpirun starts this once per rank: rank_env.sh MAP COMMAND... The map, written by the validate role from each
# node's nvidia-smi topo -m and ib_facts, gives the rank the RDMA ports nearest its GPU (UCX_NET_DEVICES), the
# node's RoCE v2 GID index, and the GPU's NUMA node to run on; then the command runs. Without a map (no GPU or RDMA
# facts, as in the lab) the command runs as it is. Settings travel in the map, not in mpirun -x, because Open MPI
# refuses -x next to the mca_base_env_list the mpi role sets.
map="$1"
shift
rank="${OMPI_COMM_WORLD_LOCAL_RANK:-0}"
if [ -r "$map" ]; then
  gid="$(awk '$1 == "gid_index" { print $2; exit }' "$map")"
  if [ -n "$gid" ]; then
    UCX_IB_GID_INDEX="$gid"
    export UCX_IB_GID_INDEX
  fi
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
