#!/usr/bin/env bash
# compare_mpi.sh - the former tutti vs Open MPI comparison, kept for its callers: compare.sh with
# Open MPI as the only peer and the all-reduce by default; every option is compare.sh's.
exec "$(dirname "$0")/compare.sh" --peers ompi --colls all_reduce "$@"
