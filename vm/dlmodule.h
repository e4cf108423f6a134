/* dlmodule.h: finding and opening one of addsl's loadable modules
 * (addsl_cuda.so, addsl_mpi.so), shared by their loaders. */
#ifndef AD_DLMODULE_H
#define AD_DLMODULE_H

#include <stddef.h>

/* dlopen()s the module 'file' with 'flags': the path in the environment
 * variable 'env' when it is set, else beside the library or executable
 * holding this code (a build tree's .libs/, or the pkglibdir of the tree an
 * installed addsl binary or libaddsl.so sits in), else the configured
 * pkglibdir, else the loader's search path. NULL when none loads; 'why' then holds the
 * loader's reason when a file was found but failed to load, else "". */
void *ad_dlmodule_open(const char *file, const char *env, int flags, char *why, size_t why_len);

#endif
