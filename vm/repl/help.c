/* repl/help.c: the REPL's self-description: help(), dir(), quit(), the echo that keeps '_', and the
 * name lists (public names in scope, attributes and methods of a value) that completion shares. */
#include "repl/help.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "dict.h"
#include "autograd/library.h"
#include "import.h"
#include "autograd/op.h"
#include "state.h"
#include "tensor/tensor.h"
#include "vm.h"

extern const ad_builtin_def ad_bi_dict_defs[];

/* Prefixes of the library's helpers: formulas, test generators and the
 * optimisers' internals, which scripts never call by name. */
static const char *const internal_prefixes[] = {"rs_", "ew_", "EW_", "optim_", "fx_", "ad_", "traj_", "inplace_", "build_", "sp_", "xc_"};
/* Operators' ops and the accumulation their gradients use; frexp's two
 * kernels (frexp(x) is the public name). */
static const char *const internal_names[] = {"index_get", "index_add_at", "test_inputs", "op_test_inputs", "reduce_loss_",
                                             "frexp_mantissa", "frexp_exponent"};

/* Attributes that tensors answer (vm/vm.c get_attr). */
static const char *const tensor_attrs[] = {"shape", "dtype", "ndim", "device", "grad", "requires_grad", "T",
                                           "is_leaf", "data", "mT", "mH", "H", "grad_fn", "_version"};

/* An optimiser or scheduler is a dict with "_kind"; lib/optim.ad's functions are its methods. */
static const char *const optim_methods[] = {"step", "zero_grad", "state_dict", "load_state_dict",
                                            "add_param_group", "get_last_lr"};

static const char *const keywords[] = {"let", "fn", "op", "return", "if", "else", "while", "for", "in",
                                       "break", "continue", "import", "as", "no_grad", "detect_anomaly",
                                       "true", "false", "none", "and", "or", "not"};

bool ad_help_internal(const char *name) {
    if (!name[0] || strchr(name, '\001') || strchr(name, '$') || strchr(name, '~')) return true;
    if (name[0] == '_' && name[1]) return true; /* private by convention; '_' is the last result */
    size_t n = strlen(name);
    if ((n > 4 && strcmp(name + n - 4, "_jvp") == 0) || (n > 5 && strcmp(name + n - 5, "_impl") == 0)) return true;
    for (size_t i = 0; i < sizeof internal_prefixes / sizeof internal_prefixes[0]; i++)
        if (strncmp(name, internal_prefixes[i], strlen(internal_prefixes[i])) == 0) return true;
    for (size_t i = 0; i < sizeof internal_names / sizeof internal_names[0]; i++)
        if (strcmp(name, internal_names[i]) == 0) return true;
    return strstr(name, "_backward") != NULL;
}

/* ---- name lists ---- */

void ad_names_init(ad_names *l, ad_state *S) {
    memset(l, 0, sizeof *l);
    l->S = S;
}

void ad_names_free(ad_names *l) {
    ad_free(l->S, (void *)l->v);
    memset(l, 0, sizeof *l);
}

int ad_names_add(ad_names *l, const char *name) {
    if (l->failed) return ADDSL_ENOMEM;
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 64;
        const char **v = ad_realloc(l->S, (void *)l->v, (size_t)cap * sizeof *v);
        if (!v) { l->failed = true; return ADDSL_ENOMEM; }
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = name;
    return ADDSL_OK;
}

static int cmp_names(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void ad_names_sort(ad_names *l) {
    if (l->n == 0) return;
    qsort((void *)l->v, (size_t)l->n, sizeof *l->v, cmp_names);
    int k = 1;
    for (int i = 1; i < l->n; i++)
        if (strcmp(l->v[i], l->v[k - 1]) != 0) l->v[k++] = l->v[i];
    l->n = k;
}

int ad_names_to_list(ad_state *S, const ad_names *l, ad_value *out) {
    if (l->failed) return ad_nomem(S);
    ad_list *r = ad_list_new(S, AD_TLIST, l->n);
    if (!r) return S->errcode;
    for (int i = 0; i < l->n; i++) {
        if (ad_string_value(S, l->v[i], strlen(l->v[i]), &r->items[i])) {
            ad_value_decref(S, ad_list_value(r, AD_TLIST));
            return S->errcode;
        }
    }
    *out = ad_list_value(r, AD_TLIST);
    return ADDSL_OK;
}

int ad_help_scope(ad_state *S, ad_names *l, bool with_keywords) {
    ad_globals *G = S->globals;
    for (int i = 0; i < G->n; i++) {
        if (!G->defined[i] && !G->lazy[i]) continue;
        if (ad_help_internal(G->names[i])) continue;
        if (ad_names_add(l, G->names[i])) return ad_nomem(S);
    }
    if (with_keywords)
        for (size_t i = 0; i < sizeof keywords / sizeof keywords[0]; i++)
            if (ad_names_add(l, keywords[i])) return ad_nomem(S);
    ad_names_sort(l);
    return ADDSL_OK;
}

/* Parameter names of a callable value (borrowed); -1 when it has none to show. */
static int params_of(ad_value v, const char *const **names) {
    switch (v.t) {
    case AD_TBUILTIN:
        if (v.u.bi->varargs || v.u.bi->nparams < 0) return -1;
        *names = v.u.bi->pnames;
        return v.u.bi->nparams;
    case AD_TOP: *names = (const char *const *)v.u.op->pnames; return v.u.op->nparams;
    case AD_TFUNC: *names = (const char *const *)v.u.fn->p->pnames; return v.u.fn->p->nparams;
    default: return -1;
    }
}

int ad_help_params(ad_value fn, ad_names *l) {
    const char *const *names = NULL;
    int n = params_of(fn, &names);
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], "self") != 0 && names[i][0] != '~' && ad_names_add(l, names[i])) return ADDSL_ENOMEM;
    if (fn.t == AD_TBUILTIN && fn.u.bi->varargs)
        for (int i = 0; i < fn.u.bi->nparams; i++)
            if (ad_names_add(l, fn.u.bi->pnames[i])) return ADDSL_ENOMEM;
    return ADDSL_OK;
}

/* The methods of a tensor: every public callable whose first parameter is 'self'
 * (x.f(a) is f(x, a)). The library is loaded whole to see its ops' parameters. */
static int tensor_methods(ad_state *S, ad_names *l) {
    int rc = ad_library_load_all(S);
    if (rc) return rc;
    ad_globals *G = S->globals;
    for (int i = 0; i < G->n; i++) {
        if (!G->defined[i] || !G->lib[i] || ad_help_internal(G->names[i])) continue;
        const char *const *names = NULL;
        if (params_of(G->values[i], &names) > 0 && (strcmp(names[0], "self") == 0 || strcmp(names[0], "tensors") == 0) &&
            ad_names_add(l, G->names[i]))
            return ad_nomem(S);
    }
    return ADDSL_OK;
}

static bool is_identifier(const char *s) {
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_')) return false;
    for (s++; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_'))
            return false;
    return true;
}

int ad_help_attrs(ad_state *S, ad_value v, ad_names *l) {
    int rc = ADDSL_OK;
    switch (v.t) {
    case AD_TTENSOR:
        for (size_t i = 0; i < sizeof tensor_attrs / sizeof tensor_attrs[0]; i++) ad_names_add(l, tensor_attrs[i]);
        rc = tensor_methods(S, l);
        break;
    case AD_TMODULE: {
        int64_t it = 0;
        ad_value k, val;
        while (ad_dict_next(v.u.mod->slots, &it, &k, &val))
            if (k.t == AD_TSTR && !ad_help_internal(k.u.s->data)) ad_names_add(l, k.u.s->data);
        break;
    }
    case AD_TDICT: {
        int64_t it = 0;
        ad_value k, val;
        for (const ad_builtin_def *d = ad_bi_dict_defs; d->name; d++)
            if (strcmp(d->name, "dict") != 0) ad_names_add(l, d->name);
        if (ad_dict_get_str(v.u.d, "_kind"))
            for (size_t i = 0; i < sizeof optim_methods / sizeof optim_methods[0]; i++) ad_names_add(l, optim_methods[i]);
        /* d.key reads d["key"] */
        while (ad_dict_next(v.u.d, &it, &k, &val))
            if (k.t == AD_TSTR && is_identifier(k.u.s->data) && k.u.s->data[0] != '_') ad_names_add(l, k.u.s->data);
        break;
    }
    case AD_TTUPLE:
        if (v.u.l->names)
            for (int64_t i = 1; i < v.u.l->names->len; i++) ad_names_add(l, v.u.l->names->items[i].u.s->data);
        break;
    case AD_TGRADFN:
        ad_names_add(l, "name");
        ad_names_add(l, "next_functions");
        ad_names_add(l, "variable");
        break;
    default:
        break;
    }
    if (rc) return rc;
    if (l->failed) return ad_nomem(S);
    ad_names_sort(l);
    return ADDSL_OK;
}

/* ---- doc comments ---- */

/* Start of 1-based line 'line' in src, or NULL. */
static const char *line_start(const char *src, size_t len, int line) {
    const char *p = src, *end = src + len;
    for (int i = 1; i < line; i++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) return NULL;
        p = nl + 1;
    }
    return p;
}

/* The line (1-based) of the last 'fn NAME(' or 'op NAME(' at or before
 * 'before' (any line when 'before' <= 0); 0 when there is none. */
static int def_line(const char *src, size_t len, const char *name, int before) {
    const char *p = src, *end = src + len;
    size_t n = strlen(name);
    int line = 1, found = 0;
    while (p < end) {
        const char *q = p;
        while (q < end && (*q == ' ' || *q == '\t')) q++;
        if (end - q > 3 && (strncmp(q, "fn ", 3) == 0 || strncmp(q, "op ", 3) == 0)) {
            q += 3;
            while (q < end && *q == ' ') q++;
            if ((size_t)(end - q) > n && strncmp(q, name, n) == 0 && (q[n] == '(' || q[n] == ' ')) {
                if (before > 0 && line > before) break;
                found = line;
            }
        }
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) break;
        p = nl + 1;
        line++;
    }
    return found;
}

/* Appends the '#' lines directly above line 'line', without the '# ', up to
 * and including the first "# Example:" line: what follows it in the block is
 * for maintainers (formulas, torch's quirks) and help leaves it out. */
static void doc_above(ad_buf *b, const char *src, size_t len, int line) {
    int nlines = 0;
    for (int l = line - 1; l >= 1; l--) {
        const char *s = line_start(src, len, l);
        while (s && (*s == ' ' || *s == '\t')) s++;
        if (!s || *s != '#') break;
        nlines++;
    }
    for (int l = line - nlines; nlines > 0 && l < line; l++) {
        const char *s = line_start(src, len, l);
        while (*s == ' ' || *s == '\t') s++;
        s++;
        if (*s == ' ') s++;
        const char *nl = memchr(s, '\n', (size_t)(src + len - s));
        size_t n = nl ? (size_t)(nl - s) : (size_t)(src + len - s);
        ad_buf_puts(b, "  ");
        ad_buf_add(b, s, n);
        ad_buf_puts(b, "\n");
        if (n >= 8 && strncmp(s, "Example:", 8) == 0) break;
    }
}

/* Doc comment of 'name' defined in chunk text src (near line 'near'), or in the library. */
static bool doc_of(ad_buf *b, const char *name, const ad_chunk *chunk, int near) {
    size_t before = b->len;
    if (chunk) {
        /* only a named definition has doc comments (not a lambda's line) */
        int l = name[0] ? def_line(chunk->src, chunk->len, name, near) : 0;
        if (l > 0) doc_above(b, chunk->src, chunk->len, l);
        return b->len > before;
    }
    for (size_t i = 0; i < ad_lib_ndefs; i++) {
        if (strcmp(ad_lib_defs[i].name, name) != 0) continue;
        const char *src = ad_lib_sources[ad_lib_defs[i].file];
        size_t len = strlen(src);
        int l = def_line(src, len, name, 0);
        if (l > 0) doc_above(b, src, len, l);
        break;
    }
    return b->len > before;
}

/* ---- signatures ---- */

static void put_default(ad_state *S, ad_buf *b, ad_value v) {
    ad_buf_puts(b, "=");
    ad_value_format(S, v, b, true);
}

static void signature(ad_state *S, ad_buf *b, const char *kind, const char *name, ad_value fn) {
    ad_buf_printf(b, "%s%s(", kind, name);
    if (fn.t == AD_TBUILTIN) {
        ad_builtin *bi = fn.u.bi;
        if (bi->nparams < 0 || bi->varargs) ad_buf_puts(b, "*args");
        for (int i = 0; i < bi->nparams; i++) {
            ad_buf_printf(b, "%s%s%s", i || bi->varargs ? ", " : "", bi->sizes_param == i + 1 ? "*" : "", bi->pnames[i]);
            if (!bi->required[i]) put_default(S, b, bi->defaults[i]);
        }
    } else if (fn.t == AD_TOP) {
        ad_opdef *op = fn.u.op;
        for (int i = 0; i < op->nparams; i++) {
            ad_buf_printf(b, "%s%s%s", i ? ", " : "", op->sizes_param == i + 1 ? "*" : "", op->pnames[i]);
            int d = i - (op->nparams - op->ndefaults);
            if (d >= 0) put_default(S, b, op->defaults[d]);
        }
    } else if (fn.t == AD_TFUNC) {
        ad_closure *f = fn.u.fn;
        for (int i = 0; i < f->p->nparams; i++) {
            ad_buf_printf(b, "%s%s", i ? ", " : "", f->p->pnames[i]);
            int d = i - (f->p->nparams - f->p->ndefaults);
            if (d >= 0) put_default(S, b, f->defaults[d]);
        }
    }
    ad_buf_puts(b, ")");
    if (fn.t == AD_TOP && fn.u.op->nout > 1 && fn.u.op->outnames) {
        ad_buf_puts(b, " -> (");
        for (int i = 0; i < fn.u.op->nout; i++) ad_buf_printf(b, "%s%s", i ? ", " : "", fn.u.op->outnames[i]);
        ad_buf_puts(b, ")");
    }
    ad_buf_puts(b, "\n");
}

static void op_derivatives(ad_buf *b, const ad_opdef *op) {
    if (!op->has_formulas) {
        ad_buf_puts(b, "  Derivatives: through its body (a composite of other ops); VJP and JVP follow from those.\n");
        return;
    }
    ad_buf_puts(b, "  Derivatives:\n");
    for (int i = 0; i < op->nparams; i++) {
        const char *what = NULL;
        switch (op->kind[i]) {
        case AD_PARAM_DIFF: what = "VJP formula"; break;
        case AD_PARAM_NONDIFF: what = "non_differentiable"; break;
        case AD_PARAM_NOTIMPL: what = "not implemented"; break;
        case AD_PARAM_TENSOR: /* parameters with defaults are options (dim, keepdim), not inputs */
            if (i < op->nparams - op->ndefaults) what = "no gradient";
            break;
        default: break;
        }
        if (!what) continue;
        ad_buf_printf(b, "    %s: %s", op->pnames[i], what);
        if (op->kind[i] == AD_PARAM_NOTIMPL && op->notimpl[i]) ad_buf_printf(b, " (%s)", op->notimpl[i]);
        ad_buf_puts(b, "\n");
    }
    static const char *const jvp[] = {"none (forward mode is not supported)", "a formula (result:)",
                                      "auto_element_wise", "auto_linear"};
    ad_buf_printf(b, "    JVP (forward mode): %s\n", jvp[op->jvp_kind]);
}

/* Appends text as lines of at most HELP_WIDTH columns, each indented by two
 * spaces, broken at spaces (a longer word gets a line of its own), as the
 * library's doc comments are laid out in their files. */
#define HELP_WIDTH 100
static void put_wrapped(ad_buf *b, const char *text, size_t len) {
    const char *p = text, *end = text + len;
    while (p < end) {
        while (p < end && *p == ' ') p++;
        if (p == end) break;
        const char *cut = end;
        if ((size_t)(end - p) > HELP_WIDTH - 2) {
            cut = p + (HELP_WIDTH - 2);
            while (cut > p && *cut != ' ') cut--;
            if (cut == p) { cut = p; while (cut < end && *cut != ' ') cut++; }
        }
        ad_buf_puts(b, "  ");
        ad_buf_add(b, p, (size_t)(cut - p));
        ad_buf_puts(b, "\n");
        p = cut;
    }
}

/* ---- help() ---- */

static const char tour[] =
    "addsl: tensors with autograd, in PyTorch's names.\n"
    "\n"
    "  let x = tensor([1.0, 2.0, 3.0], requires_grad=true)\n"
    "  let y = (x * x).sum()       # the REPL prints a bare expression; '_' keeps it\n"
    "  y.backward()\n"
    "  x.grad                      # tensor([2., 4., 6.])\n"
    "\n"
    "  help(name)    a builtin, op or function: signature, what it does, derivatives\n"
    "  help(\"sum\")   the same by name\n"
    "  dir()         the names in scope; dir(x): attributes and methods of x\n"
    "  all_ops()     every differentiable op\n"
    "  Tab           completes names, x.methods, keyword arguments and file names in \"...\"\n"
    "  quit()        leaves (also exit() or Ctrl-D); Ctrl-C drops the current input\n"
    "\n"
    "Functions: fn f(a, b=2) { return a * b }   Ops with derivatives: help(relu).\n"
    "The reference is docs/language.md; 'man addsl' has a one-page primer.\n";

static int write_buf(ad_state *S, ad_buf *b) {
    if (b->failed) { ad_buf_free(b); return ad_nomem(S); }
    if (b->data) ad_write(S, b->data, b->len, 0);
    ad_buf_free(b);
    return ADDSL_OK;
}

/* The global a string names, resolved (library files load on demand). */
static int lookup(ad_state *S, const char *name, ad_value *out) {
    int slot = ad_global_user_slot(S, name, false, false);
    if (slot < 0) return ad_error(S, "help(): no name '%s' in scope (dir() lists them)", name);
    int rc = ad_global_resolve(S, &slot);
    if (rc) return rc;
    if (!S->globals->defined[slot]) return ad_error(S, "help(): no name '%s' in scope (dir() lists them)", name);
    *out = S->globals->values[slot];
    return ADDSL_OK;
}

static int help_value(ad_state *S, ad_value v, const char *asked) {
    ad_buf b;
    ad_buf_init(&b, S);
    switch (v.t) {
    case AD_TBUILTIN: {
        /* doc is "paragraph\nExample: code" (vm/value.h) */
        const char *doc = v.u.bi->doc;
        const char *ex = doc ? strstr(doc, "\nExample: ") : NULL;
        signature(S, &b, "", asked ? asked : v.u.bi->name, v);
        ad_buf para;
        ad_buf_init(&para, S);
        if (doc) ad_buf_add(&para, doc, ex ? (size_t)(ex - doc) : strlen(doc));
        else ad_buf_puts(&para, "A builtin function (C).");
        if (v.u.bi->nparams > 0 && !v.u.bi->varargs && strcmp(v.u.bi->pnames[0], "self") == 0)
            ad_buf_printf(&para, " Also a method: x.%s(...) is %s(x, ...).", v.u.bi->name, v.u.bi->name);
        if (para.failed) b.failed = true;
        else put_wrapped(&b, para.data, para.len);
        ad_buf_free(&para);
        if (ex) ad_buf_printf(&b, "  %s\n", ex + 1);
        break;
    }
    case AD_TOP: {
        ad_opdef *op = v.u.op;
        signature(S, &b, "op ", op->name, v);
        const ad_chunk *ch = op->forward.t == AD_TFUNC ? op->forward.u.fn->p->chunk : NULL;
        if (ch && ch->library) ch = NULL;
        if (!doc_of(&b, op->name, ch, ch ? op->forward.u.fn->p->line : 0))
            ad_buf_puts(&b, "  A differentiable op.\n");
        if (op->target) ad_buf_printf(&b, "  An alias of %s: the same op, with its derivatives.\n", op->target->name);
        if (op->nparams > 0 && strcmp(op->pnames[0], "self") == 0)
            ad_buf_printf(&b, "  Also a method: x.%s(...) is %s(x, ...).\n", op->name, op->name);
        op_derivatives(&b, op);
        break;
    }
    case AD_TFUNC: {
        ad_closure *f = v.u.fn;
        const char *name = ad_vm_closure_name(f);
        signature(S, &b, "fn ", name ? name : "<lambda>", v);
        const ad_chunk *ch = f->p->chunk;
        bool lib = ch && ch->library;
        if (!doc_of(&b, name ? name : "", lib ? NULL : ch, lib ? 0 : f->p->line))
            ad_buf_printf(&b, "  A function%s.\n", lib ? " of the library" : ch ? "" : "");
        if (ch && !lib) { /* the file's name without its directories, as Python's help names a module */
            const char *base = strrchr(ch->name, '/');
            ad_buf_printf(&b, "  Defined at %s:%d.\n", base ? base + 1 : ch->name, f->p->line);
        }
        break;
    }
    case AD_TMODULE: {
        ad_names l;
        ad_names_init(&l, S);
        int rc = ad_help_attrs(S, v, &l);
        if (rc) { ad_names_free(&l); ad_buf_free(&b); return rc; }
        ad_buf_printf(&b, "module \"%s\"\n  names:", v.u.mod->path);
        for (int i = 0; i < l.n; i++) ad_buf_printf(&b, " %s", l.v[i]);
        ad_buf_puts(&b, "\n");
        ad_names_free(&l);
        break;
    }
    case AD_TTENSOR: {
        ad_tensor *t = v.u.tensor;
        ad_buf_puts(&b, "tensor of shape ");
        ad_buf_shape(&b, t->ndim, t->shape);
        ad_buf_printf(&b, ", dtype %s\n", ad_dtype_name(t->dtype));
        ad_buf_puts(&b, "  Attributes: shape, dtype, ndim, device, grad, requires_grad, is_leaf, grad_fn, T, data.\n"
                        "  Its methods are the functions taking 'self': x.sum() is sum(x). dir(x) lists them.\n");
        break;
    }
    default:
        ad_buf_printf(&b, "a value of type %s\n", ad_type_name(v));
        if (v.t == AD_TDICT) ad_buf_puts(&b, "  dir(d) lists its methods and keys.\n");
        break;
    }
    return write_buf(S, &b);
}

static int bi_help(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    *out = ad_none();
    if (argc == 0) {
        ad_write(S, tour, strlen(tour), 0);
        return ADDSL_OK;
    }
    if (argc > 1) return ad_error(S, "help() takes at most 1 argument (%d given)", argc);
    ad_value v = argv[0];
    if (v.t == AD_TSTR) {
        const char *name = v.u.s->data;
        int rc = lookup(S, name, &v);
        if (rc) return rc;
        return help_value(S, v, name);
    }
    return help_value(S, v, NULL);
}

static int bi_dir(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    ad_names l;
    ad_names_init(&l, S);
    if (argc > 1) return ad_error(S, "dir() takes at most 1 argument (%d given)", argc);
    int rc = argc == 0 ? ad_help_scope(S, &l, false) : ad_help_attrs(S, argv[0], &l);
    if (!rc) rc = ad_names_to_list(S, &l, out);
    ad_names_free(&l);
    return rc;
}

/* quit(code=0) is exit(code), as in Python's REPL. */
static int bi_quit(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    int64_t code = 0;
    int rc = ad_arg_int(S, argv[0], "quit", "code", &code);
    if (rc) return rc;
    S->exit_code = (int)code;
    *out = ad_none();
    return ad_error_code(S, ADDSL_EXIT, "exit(%d)", (int)code);
}

const ad_builtin_def ad_help_defs[] = {
    {"help", bi_help, "*",
         "help() gives a short tour; help(x) or help(\"name\") describes a builtin, op or function: "
         "its signature with defaults, what it does, an example, and for an op which derivatives "
         "exist."
         "\nExample: help(relu)"},
    {"dir", bi_dir, "*",
         "dir() lists the names in scope; dir(x) the attributes and methods of x (a tensor, "
         "module, dict, ...), sorted, without the library's internal helpers."
         "\nExample: dir(zeros(1))"},
    {"quit", bi_quit, "code=0",
         "The same as exit(code), for the REPL."
         "\nExample: quit()"},
    {NULL, NULL, NULL}
};

int ad_repl_echo(ad_state *S, ad_value v) {
    if (v.t == AD_TBUILTIN && (strcmp(v.u.bi->name, "exit") == 0 || strcmp(v.u.bi->name, "quit") == 0)) {
        char msg[96];
        int n = snprintf(msg, sizeof msg, "Use %s() or Ctrl-D to leave.\n", v.u.bi->name);
        ad_write(S, msg, (size_t)n, 0);
        return ADDSL_OK;
    }
    ad_buf b;
    ad_buf_init(&b, S);
    ad_value_format(S, v, &b, true);
    ad_buf_puts(&b, "\n");
    int rc = write_buf(S, &b);
    if (rc) return rc;
    ad_value_incref(v);
    return ad_global_set(S, "_", v);
}
