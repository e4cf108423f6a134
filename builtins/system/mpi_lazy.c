/* system/mpi_lazy.c: loading the MPI module on first need (system/mpi_lazy.h). */
#include "system/mpi_lazy.h"

#include <dlfcn.h>
#include <stdio.h>

#include "dlmodule.h"

const addsl_mpi_api *ad_mpi_module_load(char *why, size_t why_len) {
    char reason[400];
    /* Global: Open MPI's plugins, which it dlopens itself, resolve libmpi's
     * and open-pal's symbols through the global scope. */
    void *h = ad_dlmodule_open("addsl_mpi.so", "ADDSL_MPI_MODULE", RTLD_NOW | RTLD_GLOBAL, reason, sizeof reason);
    if (!h) {
        if (reason[0])
            snprintf(why, why_len, "MPI is not available: %s (on Debian: apt-get install libopenmpi3 openmpi-bin)",
                     reason);
        else
            snprintf(why, why_len, "MPI is not available: addsl's MPI module (addsl_mpi.so) is not installed "
                                   "(make install, or set ADDSL_MPI_MODULE to its path)");
        return NULL;
    }
    const addsl_mpi_api *(*get)(void);
    /* dlsym returns void *; POSIX guarantees it converts to a function pointer. */
    *(void **)&get = dlsym(h, "addsl_mpi_get_api");
    const addsl_mpi_api *api = get ? get() : NULL;
    if (!api || api->version < ADDSL_MPI_API_VERSION) {
        snprintf(why, why_len, "MPI is not available: the MPI module is too old (API version %d, need %d; "
                               "reinstall addsl)", api ? api->version : 0, ADDSL_MPI_API_VERSION);
        return NULL;
    }
    return api;
}
