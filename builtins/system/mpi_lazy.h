/* system/mpi_lazy.h: the MPI module (addsl_mpi.so, mpi/mpi_api.h) opened with
 * dlopen when a state first needs MPI instead of at start-up: libmpi and what
 * it pulls in (open-rte, open-pal, hwloc, libevent, udev) cost ~2 ms of every
 * run. A plain process never loads it. */
#ifndef AD_MPI_LAZY_H
#define AD_MPI_LAZY_H

#include <stddef.h>

#include "../../mpi/mpi_api.h"

/* Opens the module (ADDSL_MPI_MODULE, else where vm/dlmodule.c looks) and
 * returns its table, or NULL with 'why' saying what failed and what to
 * install. The module stays loaded for the life of the process: Open MPI
 * registers exit handlers and cannot be initialised twice. */
const addsl_mpi_api *ad_mpi_module_load(char *why, size_t why_len);

#endif
