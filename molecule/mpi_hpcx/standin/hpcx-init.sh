#!/usr/bin/env bash
# Test stand-in for HPC-X's hpcx-init.sh (see README.hpcfabric-standin): the variables hpcx_load exports.
mydir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export HPCX_DIR="$mydir" HPCX_HOME="$mydir"
export HPCX_UCX_DIR="$mydir/ucx" HPCX_UCC_DIR="$mydir/ucc" HPCX_HCOLL_DIR="$mydir/hcoll" HPCX_SHARP_DIR="$mydir/sharp"
export HPCX_MPI_DIR="$mydir/ompi"
hpcx_load() {
    export OMPI_HOME="$HPCX_MPI_DIR" MPI_HOME="$HPCX_MPI_DIR" OPAL_PREFIX="$HPCX_MPI_DIR"
    export PATH="$HPCX_UCX_DIR/bin:$HPCX_MPI_DIR/bin${PATH:+:$PATH}"
    export LD_LIBRARY_PATH="$HPCX_UCX_DIR/lib:$HPCX_UCC_DIR/lib:$HPCX_HCOLL_DIR/lib:$HPCX_SHARP_DIR/lib:$HPCX_MPI_DIR/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}
