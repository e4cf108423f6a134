/* test_op_ids.c: TAP tests of the generated op ids (vm/trace/op_ids.h): names and
 * ids round-trip, aliases give their op's id, and export's dispatch lowers
 * every op id its string chain used to lower, aliases included. */
#include "tap.h"

#include "trace/op_ids.h"
#include "export/lower.h"

/* What vm/export/lower.c's dispatch() compared names against before it
 * switched on ids (the names of its strcmp chain and of ew_table). */
static const char *const lowered_before[] = {
    "add", "sub", "subtract", "rsub", "div", "divide", "clamp", "clip", "gelu", "float", "double", "long", "to",
    "type_as", "clone", "contiguous", "detach", "zeros", "ones", "empty", "full", "tril", "triu", "diag_embed",
    "zeros_like", "ones_like", "full_like", "sum", "nansum", "mean", "prod", "amax", "amin", "max_all", "min_all",
    "trace", "addmm", "addmv", "baddbmm", "movedim", "moveaxis", "repeat", "tile", "var", "std", "matmul", "mm",
    "bmm", "mv", "dot", "linear", "outer", "reshape", "view", "flatten", "ravel", "unflatten", "reshape_as",
    "view_as", "t", "transpose", "swapaxes", "swapdims", "permute", "expand", "broadcast_to", "expand_as",
    "squeeze", "unsqueeze", "select", "narrow", "diagonal", "diag", "index_get", "index_add_at", "cat", "concat",
    "concatenate", "stack", "softmax", "log_softmax", "logsumexp", "cumsum", "cumprod", "mse_loss", "l1_loss",
    "huber_loss", "smooth_l1_loss", "round", "logit", "norm", "linalg_vector_norm", "flip", "eq", "ne", "lt", "le",
    "gt", "ge", "neg", "negative", "abs", "absolute", "exp", "sigmoid", "special_expit", "lgamma",
    "special_gammaln", "trunc", "fix", "mul", "multiply", "true_divide", "where", "masked_fill", "relu",
    "logical_and", "isnan", "tanh_backward", "sigmoid_backward", "_index_check",
};

int main(void) {
    int n = (int)(sizeof lowered_before / sizeof lowered_before[0]);
    plan(5 + n);
    int bad = 0;
    for (int id = 1; id < AD_OP__COUNT; id++)
        if (ad_op_id_of(ad_op_id_name(id)) != id) bad++;
    ok(bad == 0, "every id's name gives the id back (%d ids)", AD_OP__COUNT - 1);
    ok(ad_op_id_name(AD_OP__NONE) == NULL && ad_op_id_of("no_such_op") == AD_OP__NONE, "unknown names have no id");
    ok(ad_op_id_of("concat") == AD_OP_cat && ad_op_id_of("concatenate") == AD_OP_cat, "concat and concatenate are cat");
    bad = 0;
    int na = ad_op_id_alias_count();
    for (int i = 0, id = 0; i < na; i++) {
        const char *a = ad_op_id_alias(i, &id);
        if (!a || ad_op_id_of(a) != id || id == AD_OP__NONE) bad++;
    }
    ok(na >= 46 && bad == 0, "%d aliases, each resolving to its op's id", na);
    bad = 0;
    for (int id = 1; id < AD_OP__COUNT; id++) bad += ad_export_lowers_id(id);
    ok(bad > 100, "export lowers %d op ids itself", bad);
    for (int i = 0; i < n; i++) {
        int id = ad_op_id_of(lowered_before[i]);
        ok(id != AD_OP__NONE && ad_export_lowers_id(id), "dispatch lowers %s (id %d)", lowered_before[i], id);
    }
    return done_testing();
}
