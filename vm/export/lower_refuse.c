/* export/lower_refuse.c: the ops export_c refuses for a reason of their own, said
 * in the error (the others without a C form get "has no C form"). */
#include "export/lower.h"

#include <string.h>

int ad_export_refuse(ad_xctx *ctx, const ad_xrec *r) {
    if (r->n->kind != AD_TN_OP) return AD_XL_PASS;
    const char *nm = ad_xl_name(r->n);
    if (!strcmp(nm, "mpi_allreduce") || !strcmp(nm, "mpi_broadcast") || !strcmp(nm, "all_gather"))
        return ad_xl_fail(ctx, "exchanges data between MPI ranks, which an exported function cannot: it runs in one process with no communicator (do the exchange outside f and pass its result in)");
    return AD_XL_PASS;
}
