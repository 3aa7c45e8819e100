#!/usr/bin/env bash
# hpcx_layout.sh PREFIX TREE: lay out the Open MPI and UCX installed in PREFIX as an HPC-X tarball lays out its own
# (TREE/ompi, TREE/ucx with UCX's tools, libraries and modules, empty ucc, hcoll and sharp library directories),
# leaving out the mpi role's stamp and mpi4py venv, which belong to PREFIX's install.
set -euo pipefail
prefix=$1
tree=$2
rm -rf "$tree"
mkdir -p "$tree/ompi" "$tree/ucx/bin" "$tree/ucx/lib" "$tree/ucc/lib" "$tree/hcoll/lib" "$tree/sharp/lib"
tar -C "$prefix" --exclude=./mpi4py-venv --exclude=./.hpcfabric-mpi.json -cf - . | tar -C "$tree/ompi" -xf -
mv "$tree"/ompi/bin/ucx_* "$tree/ucx/bin/"
mv "$tree"/ompi/lib/libuc[mpst]* "$tree/ompi/lib/ucx" "$tree/ucx/lib/"
