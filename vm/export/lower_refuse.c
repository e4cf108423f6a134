/* export/lower_refuse.c: the ops export_c refuses for a reason of their own, said
 * in the error (the others without a C form get "has no C form"). */
#include "export/lower.h"

#include <string.h>

int ad_export_refuse(ad_xctx *ctx, const ad_xrec *r) {
    if (r->n->kind != AD_TN_OP) return AD_XL_PASS;
    int id = r->n->op;
    if (id == AD_OP_mpi_allreduce || id == AD_OP_mpi_broadcast || id == AD_OP_all_gather)
        return ad_xl_fail(ctx, "exchanges data between MPI ranks, which an exported function cannot: it runs in one process with no communicator (do the exchange outside f and pass its result in)");
    return AD_XL_PASS;
}
