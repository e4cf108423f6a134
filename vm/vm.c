/* vm.c: the bytecode interpreter: call frames over one register stack,
 * argument binding, operators on numbers (tensors go to builtins), and
 * runtime errors that unwind with a traceback. */
#include "vm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../builtins/builtins.h"
#include "../builtins/kernels/scalar_math.h"
#include "ad_assert.h"
#include "buf.h"
#include "autograd/engine.h"
#include "tensor/device.h"
#include "autograd/inplace.h"
#include "trace/trace.h"
#include "iter.h"
#include "dict.h"
#include "gc.h"
#include "autograd/gradfn.h"
#include "tensor/heap.h"
#include "repl/help.h"
#include "import.h"
#include "sandbox.h"
#include "codegen.h"
#include "format.h"
#include "autograd/library.h"
#include "autograd/op.h"
#include "state.h"
#include "repl/suggest.h"
#include "tensor/tensor.h"

typedef struct ad_frame {
    ad_closure *fn;
    const ad_instr *pc;   /* next instruction (saved while a callee runs) */
    int base;             /* index of R[0] in the stack */
    int ret;              /* absolute stack index for the result */
} ad_frame;

struct ad_vm {
    ad_value *stack;
    int stacksize;
    ad_frame *frames;
    int nframes, capframes;
    char *errbuf;         /* long formatted message (traceback) */
    bool err_located;     /* the message already has its location */
    uint64_t ticks;       /* backward jumps and calls since the last interrupt poll */
};

/* ---- attributes ---- */

static const char *const attr_names[AD_ATTR__COUNT] = {
    "shape", "dtype", "ndim", "device", "grad", "requires_grad", "T", "is_leaf", "data",
    "mT", "mH", "H", "grad_fn", "_version",
    "next_functions", "variable", "values", "indices", "sign", "logabsdet"
};

int ad_attr_lookup(const char *name) {
    for (int i = 0; i < AD_ATTR__COUNT; i++)
        if (strcmp(attr_names[i], name) == 0) return i;
    return -1;
}

const char *ad_attr_name(int attr) { return attr >= 0 && attr < AD_ATTR__COUNT ? attr_names[attr] : "?"; }

/* ---- prototypes and closures ---- */

void ad_chunk_decref(ad_state *S, ad_chunk *c) {
    ad_assert(!c || c->refcount > 0);
    if (!c || --c->refcount > 0) return;
    ad_free(S, c->name);
    ad_free(S, c->src);
    ad_free(S, c);
}

void ad_proto_incref(ad_proto *p) {
    ad_assert(p->refcount > 0);
    p->refcount++;
}

void ad_proto_decref(ad_state *S, ad_proto *p) {
    ad_assert(!p || p->refcount > 0);
    if (!p || --p->refcount > 0) return;
    /* A proto the compiler gave up on mid-way is freed here too: its counts
     * are checked where it runs (push_frame), not here. */
    ad_assert(p->nk >= 0 && p->nprotos >= 0 && p->noptemplates >= 0);

    for (int i = 0; i < p->nk; i++) ad_value_decref(S, p->k[i]);
    for (int i = 0; i < p->nprotos; i++) ad_proto_decref(S, p->protos[i]);
    if (p->pnames) for (int i = 0; i < p->nparams; i++) ad_free(S, p->pnames[i]);
    ad_free(S, p->pnames);
    for (int i = 0; i < p->noptemplates; i++) ad_optemplate_free(S, p->optemplates[i]);
    ad_free(S, p->optemplates);
    ad_free(S, p->k); ad_free(S, p->protos); ad_free(S, p->upvals);
    ad_free(S, p->code); ad_free(S, p->lines); ad_free(S, p->name);
    ad_chunk_decref(S, p->chunk);
    ad_free(S, p);
}

void ad_vm_closure_free(ad_state *S, ad_closure *f) {
    ad_assert(f->nupvals == f->p->nupvals);
    ad_gc_untrack(S, &f->gc);
    for (int i = 0; i < f->nupvals; i++) {
        ad_value c; c.t = AD_TCELL; c.u.cell = f->upvals[i];
        if (f->upvals[i]) ad_value_decref(S, c);
    }
    if (f->defaults) {
        for (int i = 0; i < f->p->ndefaults; i++) ad_value_decref(S, f->defaults[i]);
        ad_obj_free(S, f->defaults, (size_t)f->p->ndefaults * sizeof(ad_value));
    }
    ad_proto_decref(S, f->p);
    ad_obj_free(S, f, sizeof *f + (size_t)f->nupvals * sizeof(ad_cell *));
}

const char *ad_vm_closure_name(const ad_closure *f) { return f->p->name; }

void ad_vm_builtin_free(ad_state *S, ad_builtin *b) {
    if (b->ud_free) b->ud_free(S, b->ud);
    if (b->defaults) for (int i = 0; i < b->nparams; i++) ad_value_decref(S, b->defaults[i]);
    ad_free(S, b->defaults);
    ad_free(S, b->required);
    if (b->pnames) for (int i = 0; i < b->nparams; i++) ad_free(S, (void *)b->pnames[i]);
    ad_free(S, (void *)b->pnames);
    ad_free(S, b);
}

/* ---- builtin registration ---- */

static int parse_default(ad_state *S, const char *s, size_t n, ad_value *out) {
    char buf[64];
    if (n >= sizeof buf) return ad_error(S, "bad builtin default");
    memcpy(buf, s, n); buf[n] = '\0';
    if (strcmp(buf, "none") == 0) { *out = ad_none(); return ADDSL_OK; }
    if (strcmp(buf, "true") == 0) { *out = ad_bool(true); return ADDSL_OK; }
    if (strcmp(buf, "false") == 0) { *out = ad_bool(false); return ADDSL_OK; }
    for (int dt = 0; dt < AD_NDTYPES; dt++)
        if (strcmp(buf, ad_dtype_name((ad_dtype)dt)) == 0) { *out = ad_dtype_value(dt); return ADDSL_OK; }
    if (buf[0] == '"') return ad_string_value(S, buf + 1, n >= 2 ? n - 2 : 0, out);
    char *end;
    double x = strtod(buf, &end);
    if (end == buf) return ad_error(S, "bad builtin default '%s'", buf);
    bool is_int = strpbrk(buf, ".eEn") == NULL; /* "inf"/"nan" contain n */
    *out = is_int ? ad_int(x) : ad_num(x);
    return ADDSL_OK;
}

static int builtin_new(ad_state *S, const ad_builtin_def *d, ad_builtin **out) {
    ad_builtin *b = ad_calloc(S, 1, sizeof *b);
    if (!b) return ADDSL_ENOMEM;
    b->hdr.refcount = 1;
    b->name = d->name;
    b->fn = d->fn;
    b->doc = d->doc;
    b->kid = -1;
    const char *p = d->params ? d->params : "";
    while (*p == ' ') p++;
    if (strcmp(p, "*") == 0) { b->nparams = -1; *out = b; return ADDSL_OK; }
    if (p[0] == '*' && p[1] == ',') { b->varargs = true; p += 2; while (*p == ' ') p++; }
    int np = 0;
    if (*p) { np = 1; for (const char *q = p; *q; q++) if (*q == ',') np++; }
    b->nparams = np;
    b->pnames = ad_calloc(S, (size_t)(np ? np : 1), sizeof(char *));
    b->defaults = ad_calloc(S, (size_t)(np ? np : 1), sizeof(ad_value));
    b->required = ad_calloc(S, (size_t)(np ? np : 1), sizeof(bool));
    if (!b->pnames || !b->defaults || !b->required) { ad_vm_builtin_free(S, b); return ADDSL_ENOMEM; }
    for (int i = 0; i < np; i++) {
        while (*p == ' ') p++;
        if (*p == '*') { b->sizes_param = i + 1; p++; }
        const char *e = p;
        while (*e && *e != ',' && *e != '=' && *e != ' ') e++;
        size_t len = (size_t)(e - p);
        char *name = ad_malloc(S, len + 1);
        if (!name) { ad_vm_builtin_free(S, b); return ADDSL_ENOMEM; }
        memcpy(name, p, len); name[len] = '\0';
        b->pnames[i] = name;
        while (*e == ' ') e++;
        b->required[i] = true;
        b->defaults[i] = ad_none();
        if (*e == '=') {
            e++;
            while (*e == ' ') e++;
            const char *v = e;
            if (*e == '"') { e++; while (*e && *e != '"') e++; if (*e) e++; }
            else while (*e && *e != ',' && *e != ' ') e++;
            int rc = parse_default(S, v, (size_t)(e - v), &b->defaults[i]);
            if (rc) { ad_vm_builtin_free(S, b); return rc; }
            b->required[i] = false;
        }
        while (*e && *e != ',') e++;
        p = *e ? e + 1 : e;
    }
    *out = b;
    return ADDSL_OK;
}

/* Tables whose every builtin takes GPU tensors (element-wise, core, the
 * trajectory steps, the device queries, formatting, MPI); the builtins of
 * other tables that do are listed by name in vm/tensor/device.c. Decided
 * here, where the tables are registered, so that the tensor layer knows no
 * builtin table. */
static bool table_on_device(const ad_builtin_def *table) {
    return table == ad_bi_elementwise_defs || table == ad_bi_core_defs || table == ad_bi_traj_defs ||
           table == ad_bi_device_defs || table == ad_bi_format_defs || table == ad_bi_mpi_defs;
}

int ad_vm_register(ad_state *S, const ad_builtin_def *defs) {
    bool whole = table_on_device(defs);
    for (; defs->name; defs++) {
        ad_builtin *b;
        int rc = builtin_new(S, defs, &b);
        if (rc) return rc;
        b->on_device = whole || ad_device_builtin_ok(defs->name);
        b->doors = ad_sandbox_doors(defs->name);
        ad_value v; v.t = AD_TBUILTIN; v.u.bi = b;
        /* 'ad_NAME' keeps the raw builtin reachable when an op named NAME
         * (with derivative formulas) replaces it; kernel("ad_NAME") uses it. */
        char alias[128];
        snprintf(alias, sizeof alias, "ad_%s", defs->name);
        b->hdr.refcount++;
        rc = ad_global_set(S, alias, v);
        if (rc) { ad_value_decref(S, v); return rc; }
        rc = ad_global_set(S, defs->name, v);
        if (rc) return rc;
    }
    return ADDSL_OK;
}

/* ---- state of the VM ---- */

int ad_vm_open(ad_state *S) {
    struct ad_vm *vm = ad_calloc(S, 1, sizeof *vm);
    if (!vm) return ADDSL_ENOMEM;
    S->vm = vm;
    return ADDSL_OK;
}

void ad_vm_close(ad_state *S) {
    struct ad_vm *vm = S->vm;
    if (!vm) return;
    for (int i = 0; i < vm->stacksize; i++) ad_value_decref(S, vm->stack[i]);
    ad_free(S, vm->stack);
    ad_free(S, vm->frames);
    ad_free(S, vm->errbuf);
    ad_free(S, vm);
    S->vm = NULL;
}

const char *ad_vm_errmsg(ad_state *S) {
    if (S->vm && S->vm->errbuf && S->errcode != ADDSL_ENOMEM) return S->vm->errbuf;
    return S->errmsg;
}

void ad_vm_set_errmsg(ad_state *S, int code, const char *msg) {
    struct ad_vm *vm = S->vm;
    S->errcode = code;
    snprintf(S->errmsg, sizeof S->errmsg, "%s", msg);
    if (!vm) return;
    ad_free(S, vm->errbuf);
    size_t n = strlen(msg);
    vm->errbuf = S->cfg.alloc(S->cfg.alloc_ud, NULL, n + 1);
    if (vm->errbuf) memcpy(vm->errbuf, msg, n + 1);
}

void ad_vm_error_handled(ad_state *S) {
    ad_clear_error(S);
    struct ad_vm *vm = S->vm;
    if (!vm) return;
    ad_free(S, vm->errbuf);
    vm->errbuf = NULL;
    vm->err_located = false;
}

static int ensure_stack(ad_state *S, int need) {
    struct ad_vm *vm = S->vm;
    ad_assert(need > 0 && vm->stacksize >= 0);
    if (need <= vm->stacksize) return ADDSL_OK;
    int size = vm->stacksize ? vm->stacksize : 1024;
    while (size < need) size *= 2;
    size_t more = (size_t)(size - vm->stacksize) * sizeof(ad_value);
    if (ad_heap_charge_objects(S, more)) return ADDSL_ENOMEM;
    ad_value *st = ad_realloc(S, vm->stack, (size_t)size * sizeof *st);
    if (!st) { ad_heap_discharge_objects(S, more); return ADDSL_ENOMEM; }
    for (int i = vm->stacksize; i < size; i++) st[i] = ad_none();
    vm->stack = st;
    vm->stacksize = size;
    return ADDSL_OK;
}

static int push_frame(ad_state *S, ad_closure *fn, int base, int ret) {
    struct ad_vm *vm = S->vm;
    if (vm->nframes >= S->cfg.max_depth + 1)
        return ad_error(S, "stack overflow (more than %d nested calls)", S->cfg.max_depth);
    if (vm->nframes == vm->capframes) {
        int cap = vm->capframes ? vm->capframes * 2 : 16;
        size_t more = (size_t)(cap - vm->capframes) * sizeof(ad_frame);
        if (ad_heap_charge_objects(S, more)) return ADDSL_ENOMEM;
        ad_frame *f = ad_realloc(S, vm->frames, (size_t)cap * sizeof *f);
        if (!f) { ad_heap_discharge_objects(S, more); return ADDSL_ENOMEM; }
        vm->frames = f; vm->capframes = cap;
    }
    /* A callee's registers start right after the caller's slot for its
     * result, inside or past the caller's frame, never below it. */
    ad_assert(base >= 0 && ret < base && ret >= -1);
    ad_assert(!vm->nframes || base >= vm->frames[vm->nframes - 1].base);
    ad_assert(fn->hdr.refcount > 0 && fn->p->nregs >= fn->p->nparams && fn->p->ncode > 0);
    ad_assert(fn->p->ndefaults >= 0 && fn->p->ndefaults <= fn->p->nparams);

    int rc = ensure_stack(S, base + fn->p->nregs + 1);
    if (rc) return rc;
    ad_frame *f = &vm->frames[vm->nframes++];
    f->fn = fn; f->pc = fn->p->code; f->base = base; f->ret = ret;
    fn->hdr.refcount++;
    return ADDSL_OK;
}

static void clear_regs(ad_state *S, int from, int to) {
    ad_value *st = S->vm->stack;
    ad_assert(from >= 0 && from <= to && to <= S->vm->stacksize);
    for (int i = from; i < to; i++) {
        ad_value v = st[i];
        st[i] = ad_none();
        ad_value_decref(S, v);
    }
}

static void pop_frame(ad_state *S) {
    struct ad_vm *vm = S->vm;
    ad_assert(vm->nframes > 0);
    ad_frame *f = &vm->frames[--vm->nframes];
    clear_regs(S, f->base, f->base + f->fn->p->nregs);
    ad_value fv; fv.t = AD_TFUNC; fv.u.fn = f->fn;
    ad_value_decref(S, fv);
}

/* ---- errors ---- */

static void frame_pos(const ad_frame *f, int *line, int *col) {
    const ad_proto *p = f->fn->p;
    int pc = (int)(f->pc - p->code) - 1;
    if (pc < 0) pc = 0;
    if (pc >= p->ncode) pc = p->ncode - 1;
    int32_t lc = p->ncode ? p->lines[pc] : 0;
    *line = lc >> 12; *col = lc & 0xfff;
}

/* Formats the error raised at the top frame, with a traceback of every frame
 * down to 'floor', then unwinds those frames. */
static int raise_error(ad_state *S, int floor, int code) {
    struct ad_vm *vm = S->vm;
    ad_assert(code != ADDSL_OK && floor >= 0 && vm->nframes > floor);
    ad_buf b;
    ad_buf_init(&b, S);
    if (code == ADDSL_EXIT) {
        while (vm->nframes > floor) pop_frame(S);
        return code;
    }
    if (!vm->err_located) {
        /* An error inside the op library is reported where the script called
         * into it (the library frames stay in the traceback); frames below
         * 'floor' belong to the run that called this one and are still live. */
        ad_frame *top = &vm->frames[vm->nframes - 1];
        for (int i = vm->nframes - 1; i >= 0 && top->fn->p->chunk->library; i--)
            if (!vm->frames[i].fn->p->chunk->library) top = &vm->frames[i];
        int line, col;
        frame_pos(top, &line, &col);
        ad_chunk *c = top->fn->p->chunk;
        ad_format_location(&b, c->name, c->src, c->len, line, col, S->errmsg);
        ad_buf_puts(&b, "traceback (most recent call first):\n");
    } else {
        ad_buf_puts(&b, vm->errbuf ? vm->errbuf : S->errmsg);
        if (b.len && b.data[b.len - 1] != '\n') ad_buf_puts(&b, "\n");
    }
    int prev_line = -1, prev_col = -1, repeats = 0;
    const ad_proto *prev = NULL;
    for (int i = vm->nframes - 1; i >= floor; i--) {
        int line, col;
        frame_pos(&vm->frames[i], &line, &col);
        const ad_proto *p = vm->frames[i].fn->p;
        /* Deep recursion would print the same frame hundreds of times. */
        if (p == prev && line == prev_line && col == prev_col) { repeats++; continue; }
        if (repeats) ad_buf_printf(&b, "  [previous frame repeated %d more times]\n", repeats);
        repeats = 0;
        prev = p; prev_line = line; prev_col = col;
        ad_buf_printf(&b, "  %s:%d:%d: in %s\n", p->chunk->name, line, col, p->name);
    }
    if (repeats) ad_buf_printf(&b, "  [previous frame repeated %d more times]\n", repeats);
    while (vm->nframes > floor) pop_frame(S);
    if (b.failed) { ad_buf_free(&b); vm->err_located = false; return ad_nomem(S); }
    if (b.len && b.data[b.len - 1] == '\n') b.data[--b.len] = '\0';
    char saved[AD_ERRMSG_MAX];
    snprintf(saved, sizeof saved, "%s", S->errmsg);
    ad_vm_set_errmsg(S, code, b.data);
    ad_buf_free(&b);
    /* Keep the short message reachable for API users: errmsg gets the full text. */
    (void)saved;
    vm->err_located = true;
    return code;
}

/* ---- value operations ---- */

static inline void setreg(ad_state *S, ad_value *r, ad_value v) {
    ad_assert(ad_vtype_valid(v.t) && ad_vtype_valid(r->t));
    ad_value old = *r;
    *r = v;
    ad_value_decref(S, old);
}

static inline bool num_like(ad_value v) { return v.t == AD_TINT || v.t == AD_TNUM || v.t == AD_TBOOL; }
static inline double num_of(ad_value v) { return v.t == AD_TBOOL ? (double)v.u.b : v.u.n; }
static inline bool int_like(ad_value v) { return v.t == AD_TINT || v.t == AD_TBOOL; }

static ad_value make_num(double x, bool is_int) {
    if (is_int && fabs(x) <= 9007199254740992.0) return ad_int(x);
    return ad_num(x);
}

static int truth(ad_state *S, ad_value v, bool *out) {
    if (v.t == AD_TTENSOR) {
        ad_tensor *t = v.u.tensor;
        int trc = ad_trace_check_truth(S, v, "the truth value of a tensor (if, while, not, and, or)");
        if (trc) return trc;
        if (t->numel != 1)
            return ad_error(S, t->numel == 0 ? "Boolean value of Tensor with no values is ambiguous"
                                             : "Boolean value of Tensor with more than one value is ambiguous");
        double x;
        int rc = ad_tensor_item(S, t, &x);
        if (rc) return rc;
        *out = x != 0;
        return ADDSL_OK;
    }
    *out = ad_truthy(v);
    return ADDSL_OK;
}

static int concat_seq(ad_state *S, ad_value a, ad_value b, ad_value *out) {
    ad_list *l = ad_list_new(S, a.t, a.u.l->len + b.u.l->len);
    if (!l) return S->errcode;
    for (int64_t i = 0; i < a.u.l->len; i++) { l->items[i] = a.u.l->items[i]; ad_value_incref(l->items[i]); }
    for (int64_t i = 0; i < b.u.l->len; i++) { l->items[a.u.l->len + i] = b.u.l->items[i]; ad_value_incref(b.u.l->items[i]); }
    *out = ad_list_value(l, a.t);
    return ADDSL_OK;
}

static const char *op_symbol(ad_opcode op) {
    switch (op) {
    case OP_ADD: return "+"; case OP_SUB: return "-"; case OP_MUL: return "*"; case OP_DIV: return "/";
    case OP_MOD: return "%"; case OP_IDIV: return "//"; case OP_POW: return "**"; case OP_MATMUL: return "@";
    case OP_LT: return "<"; case OP_LE: return "<="; case OP_GT: return ">"; case OP_GE: return ">=";
    default: return "?";
    }
}

/* t // u is torch's div(t, u, rounding_mode="floor"), through the differentiable op. */
static int floor_div_tensor(ad_state *S, ad_value a, ad_value b, ad_value *out) {
    if (!S->op_div) return ad_error(S, "'//' on tensors needs the op 'div' of the library");
    ad_value args[3] = {a, b, ad_none()};
    int rc = ad_string_value(S, "floor", 5, &args[2]);
    if (rc) return rc;
    rc = ad_op_call(S, S->op_div, args, 3, NULL, out);
    ad_value_decref(S, args[2]);
    return rc;
}

static int arith(ad_state *S, ad_opcode op, ad_value a, ad_value b, ad_value *out) {
    if (num_like(a) && num_like(b)) {
        double x = num_of(a), y = num_of(b);
        bool ints = int_like(a) && int_like(b);
        switch (op) {
        case OP_ADD: *out = make_num(x + y, ints); return ADDSL_OK;
        case OP_SUB: *out = make_num(x - y, ints); return ADDSL_OK;
        case OP_MUL: *out = make_num(x * y, ints); return ADDSL_OK;
        case OP_DIV:
            if (ints && y == 0) return ad_error(S, "division by zero");
            *out = ad_num(x / y); return ADDSL_OK;
        case OP_MOD: {
            if (ints && y == 0) return ad_error(S, "division by zero (modulo)");
            double r = fmod(x, y);
            if (r != 0 && ((r < 0) != (y < 0))) r += y;
            *out = make_num(r, ints); return ADDSL_OK;
        }
        case OP_IDIV:
            /* Python's //: towards minus infinity; a float zero divisor gives IEEE as '/' does. */
            if (ints && y == 0) return ad_error(S, "division by zero (floor division)");
            *out = make_num(ad_floordiv(x, y), ints); return ADDSL_OK;
        case OP_POW:
            if (ints && y < 0 && x == 0) return ad_error(S, "division by zero (0 raised to a negative power)");
            *out = make_num(pow(x, y), ints && y >= 0); return ADDSL_OK;
        case OP_MATMUL: return ad_error(S, "'@' needs tensors, not numbers");
        default: break;
        }
    }
    if (op == OP_MOD && a.t == AD_TSTR) return ad_format_percent(S, a.u.s, b, out); /* "%.3f" % x */
    if (a.t == AD_TTENSOR || b.t == AD_TTENSOR) {
        /* Through the differentiable op when the library defines one. */
        int which = op == OP_ADD ? AD_OPER_ADD : op == OP_SUB ? AD_OPER_SUB : op == OP_MUL ? AD_OPER_MUL
                  : op == OP_DIV || op == OP_IDIV ? AD_OPER_DIV : op == OP_MOD ? AD_OPER_REM
                  : op == OP_POW ? AD_OPER_POW : op == OP_MATMUL ? AD_OPER_MATMUL : -1;
        int lrc = which < 0 ? ad_library_ensure_operators(S)
                : (S->ops_loaded >> which) & 1u ? ADDSL_OK : ad_library_ensure_operator(S, which);
        if (lrc) return lrc;
        ad_opdef *dop = NULL;
        switch (op) {
        case OP_ADD: dop = S->op_add; break;
        case OP_SUB: dop = S->op_sub; break;
        case OP_MUL: dop = S->op_mul; break;
        case OP_DIV: dop = S->op_div; break;
        case OP_MOD: dop = S->op_rem; break;
        case OP_POW: dop = S->op_pow; break;
        case OP_MATMUL: dop = S->op_matmul; break;
        default: break;
        }
        if (op == OP_IDIV) return floor_div_tensor(S, a, b, out);
        if (dop) { ad_value args[2] = {a, b}; return ad_op_call(S, dop, args, 2, NULL, out); }
        switch (op) {
        case OP_ADD: return ad_bi_add(S, a, b, out);
        case OP_SUB: return ad_bi_sub(S, a, b, out);
        case OP_MUL: return ad_bi_mul(S, a, b, out);
        case OP_DIV: return ad_bi_div(S, a, b, out);
        case OP_MOD: return ad_bi_rem(S, a, b, out);
        case OP_POW: return ad_bi_pow(S, a, b, out);
        case OP_MATMUL: return ad_bi_matmul(S, a, b, out);
        default: break;
        }
    }
    if (op == OP_ADD && a.t == AD_TSTR && b.t == AD_TSTR) {
        size_t n = a.u.s->len + b.u.s->len; /* each is at most AD_MAX_STRING: no wrap */
        if (n > AD_MAX_STRING)
            return ad_error(S, "string too long (%zu bytes; the limit is %zu)", n, (size_t)AD_MAX_STRING);
        ad_str *r = ad_str_alloc(S, n);
        if (!r) return S->errcode;
        memcpy(r->data, a.u.s->data, a.u.s->len);
        memcpy(r->data + a.u.s->len, b.u.s->data, b.u.s->len);
        out->t = AD_TSTR; out->u.s = r;
        return ADDSL_OK;
    }
    if (op == OP_ADD && a.t == b.t && ad_is_seq(a)) return concat_seq(S, a, b, out);
    return ad_error(S, "unsupported operand types for %s: %s and %s", op_symbol(op), ad_type_name(a), ad_type_name(b));
}

static int compare(ad_state *S, ad_opcode op, ad_value a, ad_value b, ad_value *out) {
    if ((op == OP_EQ || op == OP_NE) && (a.t == AD_TNONE || b.t == AD_TNONE)) {
        /* t == none is a plain comparison (false for a tensor), as in Python. */
        bool same = a.t == b.t;
        *out = ad_bool(op == OP_EQ ? same : !same);
        return ADDSL_OK;
    }
    if (a.t == AD_TTENSOR || b.t == AD_TTENSOR) {
        static const int cmp[] = {AD_CMP_EQ, AD_CMP_NE, AD_CMP_LT, AD_CMP_LE, AD_CMP_GT, AD_CMP_GE};
        if (ad_trace_on(S)) return ad_trace_vm(S, AD_TN_COMPARE, cmp[op - OP_EQ], (ad_value[]){a, b}, 2, out);
        return ad_bi_compare(S, cmp[op - OP_EQ], a, b, out);
    }
    if (op == OP_EQ || op == OP_NE) {
        bool eq;
        int rc = ad_values_eq(S, a, b, &eq);
        if (rc) return rc;
        *out = ad_bool(op == OP_EQ ? eq : !eq);
        return ADDSL_OK;
    }
    int c;
    if (num_like(a) && num_like(b)) {
        double x = num_of(a), y = num_of(b);
        switch (op) {
        case OP_LT: *out = ad_bool(x < y); break;
        case OP_LE: *out = ad_bool(x <= y); break;
        case OP_GT: *out = ad_bool(x > y); break;
        default: *out = ad_bool(x >= y); break;
        }
        return ADDSL_OK;
    }
    if (a.t == AD_TSTR && b.t == AD_TSTR) {
        size_t n = a.u.s->len < b.u.s->len ? a.u.s->len : b.u.s->len;
        c = memcmp(a.u.s->data, b.u.s->data, n);
        if (c == 0) c = (a.u.s->len > b.u.s->len) - (a.u.s->len < b.u.s->len);
        switch (op) {
        case OP_LT: *out = ad_bool(c < 0); break;
        case OP_LE: *out = ad_bool(c <= 0); break;
        case OP_GT: *out = ad_bool(c > 0); break;
        default: *out = ad_bool(c >= 0); break;
        }
        return ADDSL_OK;
    }
    return ad_error(S, "'%s' not supported between %s and %s", op_symbol(op), ad_type_name(a), ad_type_name(b));
}

static int seq_len(ad_value v, int64_t *n) {
    switch (v.t) {
    case AD_TLIST: case AD_TTUPLE: *n = v.u.l->len; return 1;
    case AD_TSTR: *n = (int64_t)v.u.s->len; return 1;
    case AD_TTENSOR: if (v.u.tensor->ndim == 0) return 0; *n = v.u.tensor->shape[0]; return 1;
    default: return 0;
    }
}

static int get_index(ad_state *S, ad_value obj, int n, const ad_value *idx, ad_value *out);

static int seq_item(ad_state *S, ad_value v, int64_t i, ad_value *out) {
    switch (v.t) {
    case AD_TLIST: case AD_TTUPLE: *out = v.u.l->items[i]; ad_value_incref(*out); return ADDSL_OK;
    case AD_TSTR: return ad_string_value(S, v.u.s->data + i, 1, out);
    case AD_TTENSOR: {
        /* A tensor on a graph (or carrying a tangent) yields t[i] through the
         * indexing op, so `for e in x` keeps the gradient as torch's does. */
        if (v.u.tensor->requires_grad || v.u.tensor->fw_grad || ad_trace_depends(S, v.u.tensor)) {
            ad_value ix = ad_int((double)i);
            return get_index(S, v, 1, &ix, out);
        }
        ad_tensor *t = ad_tensor_select(S, v.u.tensor, 0, i);
        if (!t) return S->errcode ? S->errcode : ADDSL_ERUNTIME;
        *out = ad_tensor_value(t);
        return ADDSL_OK;
    }
    default: return ad_error(S, "%s is not iterable", ad_type_name(v));
    }
}

bool ad_vm_seq_len(ad_value v, int64_t *n) {
    if (v.t == AD_TITER) v = v.u.it->src;
    return seq_len(v, n) != 0;
}

int ad_vm_seq_item(ad_state *S, ad_value v, int64_t i, ad_value *out) {
    if (v.t == AD_TITER) v = v.u.it->src;
    return seq_item(S, v, i, out);
}

static int norm_slice_part(ad_state *S, ad_value v, int64_t dflt, int64_t *out) {
    if (v.t == AD_TNONE) { *out = dflt; return ADDSL_OK; }
    return ad_arg_int(S, v, "slice", "index", out);
}

static int index_seq(ad_state *S, ad_value obj, int n, const ad_value *idx, ad_value *out) {
    if (n != 1) return ad_error(S, "%s indices must be a single integer or slice", ad_type_name(obj));
    int64_t len;
    seq_len(obj, &len);
    ad_value ix = idx[0];
    if (ix.t == AD_TSLICE) {
        int64_t start, stop, step;
        int rc;
        if ((rc = norm_slice_part(S, ix.u.sl->step, 1, &step))) return rc;
        if (step <= 0) return ad_error(S, "slice step must be positive");
        if ((rc = norm_slice_part(S, ix.u.sl->start, 0, &start))) return rc;
        if ((rc = norm_slice_part(S, ix.u.sl->stop, len, &stop))) return rc;
        if (start < 0) start += len;
        if (stop < 0) stop += len;
        if (start < 0) start = 0;
        if (stop > len) stop = len;
        if (start > len) start = len;
        int64_t cnt = stop > start ? (stop - start + step - 1) / step : 0;
        if (obj.t == AD_TSTR) {
            char *tmp = ad_malloc(S, (size_t)cnt + 1);
            if (!tmp) return ADDSL_ENOMEM;
            for (int64_t i = 0; i < cnt; i++) tmp[i] = obj.u.s->data[start + i * step];
            rc = ad_string_value(S, tmp, (size_t)cnt, out);
            ad_free(S, tmp);
            return rc;
        }
        ad_list *l = ad_list_new(S, obj.t, cnt);
        if (!l) return S->errcode;
        for (int64_t i = 0; i < cnt; i++) { l->items[i] = obj.u.l->items[start + i * step]; ad_value_incref(l->items[i]); }
        *out = ad_list_value(l, obj.t);
        return ADDSL_OK;
    }
    int64_t i;
    int rc = ad_arg_int(S, ix, "index", "index", &i);
    if (rc) return ad_error(S, "%s indices must be integers or slices, not %s", ad_type_name(obj), ad_type_name(ix));
    if (i < -len || i >= len)
        return ad_error(S, "index %lld is out of range for %s of length %lld", (long long)i, ad_type_name(obj), (long long)len);
    if (i < 0) i += len;
    return seq_item(S, obj, i, out);
}

static int get_index(ad_state *S, ad_value obj, int n, const ad_value *idx, ad_value *out) {
    if (obj.t == AD_TTENSOR) {
        int rc = ad_library_ensure_operator(S, AD_OPER_INDEX);
        if (rc) return rc;
    }
    if (obj.t == AD_TTENSOR && S->op_index) {
        ad_list *l = ad_list_new(S, AD_TLIST, n);
        if (!l) return S->errcode;
        for (int i = 0; i < n; i++) { l->items[i] = idx[i]; ad_value_incref(idx[i]); }
        ad_value args[2] = {obj, ad_list_value(l, AD_TLIST)};
        int rc = ad_op_call(S, S->op_index, args, 2, NULL, out);
        ad_value_decref(S, args[1]);
        return rc;
    }
    if (obj.t == AD_TTENSOR) return ad_bi_index_get(S, obj.u.tensor, n, idx, out);
    if (ad_is_seq(obj) || obj.t == AD_TSTR) return index_seq(S, obj, n, idx, out);
    if (obj.t == AD_TDICT) {
        if (n != 1) return ad_error(S, "a dict takes one key in [ ], not %d", n);
        return ad_dict_get_checked(S, obj.u.d, idx[0], out);
    }
    return ad_error(S, "%s is not subscriptable", ad_type_name(obj));
}

static int set_index(ad_state *S, ad_value obj, int n, const ad_value *idx, ad_value v) {
    if (obj.t == AD_TTENSOR && ad_trace_on(S)) {
        ad_value args[AD_MAX_CALL_ARGS];
        if (n + 2 > AD_MAX_CALL_ARGS) return ad_error(S, "too many indices");
        args[0] = obj;
        for (int i = 0; i < n; i++) args[i + 1] = idx[i];
        args[n + 1] = v;
        return ad_trace_vm(S, AD_TN_SETINDEX, 0, args, n + 2, NULL);
    }
    if (obj.t == AD_TTENSOR) return ad_inplace_setindex(S, obj.u.tensor, n, idx, v);
    if (obj.t == AD_TLIST) {
        int64_t i;
        if (n != 1 || ad_arg_int(S, idx[0], "index", "index", &i)) return ad_error(S, "list indices must be integers");
        int64_t len = obj.u.l->len;
        if (i < -len || i >= len) return ad_error(S, "index %lld is out of range for list of length %lld", (long long)i, (long long)len);
        if (i < 0) i += len;
        ad_value_incref(v);
        setreg(S, &obj.u.l->items[i], v);
        return ADDSL_OK;
    }
    if (obj.t == AD_TTUPLE) return ad_error(S, "tuples cannot be modified");
    if (obj.t == AD_TDICT) {
        if (n != 1) return ad_error(S, "a dict takes one key in [ ], not %d", n);
        return ad_dict_set(S, obj.u.d, idx[0], v);
    }
    return ad_error(S, "%s does not support item assignment", ad_type_name(obj));
}

/* x OP= y: PyTorch updates a tensor x in place (x.add_(y)); other values rebind. */
static int augmented(ad_state *S, ad_opcode op, ad_value a, ad_value b, ad_value *out) {
    if (a.t != AD_TTENSOR) return arith(S, op, a, b, out);
    switch (op) {
    case OP_ADD: return ad_inplace_binop(S, "add_", a, b, out);
    case OP_SUB: return ad_inplace_binop(S, "sub_", a, b, out);
    case OP_MUL: return ad_inplace_binop(S, "mul_", a, b, out);
    case OP_DIV: return ad_inplace_binop(S, "div_", a, b, out);
    case OP_MOD: return ad_inplace_binop(S, "remainder_", a, b, out);
    case OP_POW: return ad_inplace_binop(S, "pow_", a, b, out);
    case OP_IDIV: return ad_inplace_binop(S, "floor_divide_", a, b, out);
    case OP_MATMUL: return ad_error(S, "In-place matmul is not supported. Use 'a = a @ b' instead.");
    default: return arith(S, op, a, b, out);
    }
}

/* vm/repl/hint.h (not included: its parser types clash with the graph's ad_node). */
void ad_hint_attribute(ad_state *S, const char *name, char *out, size_t n);

/* d.name is d["name"], so objects kept in dicts read like PyTorch's. */
static int get_attr_named(ad_state *S, ad_value obj, const char *name, ad_value *out) {
    if (obj.t == AD_TMODULE) return ad_module_get(S, obj.u.mod, name, out);
    if (obj.t == AD_TDICT) {
        ad_value *v = ad_dict_get_str(obj.u.d, name);
        if (!v) return ad_error(S, "dict has no key \"%s\" (d.%s reads d[\"%s\"])", name, name, name);
        *out = *v;
        ad_value_incref(*out);
        return ADDSL_OK;
    }
    /* any field of a named tuple (a user's op names its own outputs) */
    const ad_value *f = obj.t == AD_TTUPLE && obj.u.l->names ? ad_tuple_field(obj.u.l, name) : NULL;
    if (f) {
        *out = *f;
        ad_value_incref(*out);
        return ADDSL_OK;
    }
    char msg[AD_ERRMSG_MAX / 2];
    ad_hint_attribute(S, name, msg, sizeof msg);
    return ad_error(S, "%s", msg);
}

/* Calls the library's op 'name': the attributes that are views (.T, .mT)
 * record a graph node exactly as x.permute(...) and x.transpose(-2, -1) do. */
static int call_library(ad_state *S, const char *name, int argc, const ad_value *argv, ad_value *out) {
    int slot = ad_global_slot(S, name, false);
    if (slot < 0) return ad_error(S, "the library's op '%s' is missing", name);
    int rc = ad_library_resolve(S, slot);
    if (rc) return rc;
    return ad_vm_call_value(S, S->globals->values[slot], argc, argv, out);
}

/* .T (every dim reversed, as torch's deprecated form for other than 2-D),
 * .mT/.mH (the last two dims; real tensors, so mH is mT) and .H (2-D). */
static int attr_transposed(ad_state *S, ad_value obj, int attr, ad_value *out) {
    ad_tensor *t = obj.u.tensor;
    if ((attr == AD_ATTR_MT || attr == AD_ATTR_MH) && t->ndim < 2)
        return ad_error(S, "tensor.%s is only supported on matrices or batches of matrices. Got %d-D tensor.", ad_attr_name(attr), t->ndim);
    if (attr == AD_ATTR_H && t->ndim != 2 && t->ndim != 0)
        return ad_error(S, "tensor.H is only supported on matrices (2-D tensors). Got %d-D tensor.", t->ndim);
    if (attr == AD_ATTR_MT || attr == AD_ATTR_MH) {
        ad_value args[3] = {obj, ad_int(-2), ad_int(-1)};
        return call_library(S, "transpose", 3, args, out);
    }
    ad_list *dims = ad_list_new(S, AD_TLIST, t->ndim);
    if (!dims) return S->errcode;
    for (int i = 0; i < t->ndim; i++) dims->items[i] = ad_int(t->ndim - 1 - i);
    ad_value args[2] = {obj, ad_list_value(dims, AD_TLIST)};
    int rc = call_library(S, "permute", 2, args, out);
    ad_value_decref(S, args[1]);
    return rc;
}

static int get_attr(ad_state *S, ad_value obj, int attr, ad_value *out) {
    if (obj.t == AD_TTENSOR && (attr == AD_ATTR_GRAD || attr == AD_ATTR_DATA) && ad_trace_on(S))
        return ad_trace_vm(S, AD_TN_GETATTR, attr, &obj, 1, out);
    if (obj.t == AD_TDICT || obj.t == AD_TMODULE) return get_attr_named(S, obj, ad_attr_name(attr), out);
    if (obj.t == AD_TGRADFN) return ad_gradfn_attr(S, obj.u.gf, ad_attr_name(attr), out);
    if (obj.t == AD_TTUPLE && obj.u.l->names) {
        const ad_value *f = ad_tuple_field(obj.u.l, ad_attr_name(attr));
        if (!f) return ad_error(S, "'torch.return_types.%s' has no attribute '%s'", obj.u.l->names->items[0].u.s->data, ad_attr_name(attr));
        ad_value_incref(*f);
        *out = *f;
        return ADDSL_OK;
    }
    if (obj.t != AD_TTENSOR || attr >= AD_ATTR_NEXT_FUNCTIONS)
        return ad_error(S, "%s has no attribute '%s'", ad_type_name(obj), ad_attr_name(attr));
    ad_tensor *t = obj.u.tensor;
    switch (attr) {
    case AD_ATTR_SHAPE: {
        ad_list *l = ad_list_new(S, AD_TLIST, t->ndim);
        if (!l) return S->errcode;
        for (int i = 0; i < t->ndim; i++) l->items[i] = ad_int((double)t->shape[i]);
        *out = ad_list_value(l, AD_TLIST);
        return ADDSL_OK;
    }
    case AD_ATTR_DTYPE: *out = ad_dtype_value(t->dtype); return ADDSL_OK;
    case AD_ATTR_NDIM: *out = ad_int(t->ndim); return ADDSL_OK;
    case AD_ATTR_DEVICE: {
        const char *dn = ad_device_name(ad_tensor_device(t));
        return ad_string_value(S, dn, strlen(dn), out);
    }
    case AD_ATTR_GRAD:
        if (!t->grad) { *out = ad_none(); return ADDSL_OK; }
        ad_tensor_incref(t->grad);
        *out = ad_tensor_value(t->grad);
        return ADDSL_OK;
    case AD_ATTR_REQUIRES_GRAD: *out = ad_bool(t->requires_grad); return ADDSL_OK;
    case AD_ATTR_IS_LEAF: *out = ad_bool(t->grad_fn == NULL); return ADDSL_OK;
    case AD_ATTR_VERSION: *out = ad_int((double)t->storage->version); return ADDSL_OK; /* shared by views */
    case AD_ATTR_T: case AD_ATTR_MT: case AD_ATTR_MH: case AD_ATTR_H:
        return attr_transposed(S, obj, attr, out);
    case AD_ATTR_GRAD_FN: return ad_gradfn_of(S, t, out);
    case AD_ATTR_DATA: {
        ad_tensor *r = ad_tensor_as_strided(S, t, t->ndim, t->shape, t->strides, t->offset);
        if (!r) return S->errcode;
        r->requires_grad = false;
        *out = ad_tensor_value(r);
        return ADDSL_OK;
    }
    }
    return ad_error(S, "unknown attribute");
}

static int set_attr(ad_state *S, ad_value obj, int attr, ad_value v) {
    if (obj.t != AD_TTENSOR) return ad_error(S, "cannot set attribute '%s' of %s", ad_attr_name(attr), ad_type_name(obj));
    if (ad_trace_on(S)) return ad_trace_vm(S, AD_TN_SETATTR, attr, (ad_value[]){obj, v}, 2, NULL);
    ad_tensor *t = obj.u.tensor;
    if (attr == AD_ATTR_REQUIRES_GRAD) {
        bool b;
        int rc = ad_arg_bool(S, v, "requires_grad", "value", &b);
        if (rc) return rc;
        if (b && !ad_dtype_is_float(t->dtype))
            return ad_error(S, "only Tensors of floating point dtype can require gradients");
        if (!b && t->grad_fn)
            return ad_error(S, "you can only change requires_grad flags of leaf variables");
        t->requires_grad = b;
        return ADDSL_OK;
    }
    if (attr == AD_ATTR_GRAD) {
        if (v.t == AD_TNONE) { ad_tensor_decref(S, t->grad); t->grad = NULL; return ADDSL_OK; }
        if (v.t != AD_TTENSOR) return ad_error(S, "assigned grad must be a tensor or none, not %s", ad_type_name(v));
        if (!ad_shape_equal(t->ndim, t->shape, v.u.tensor->ndim, v.u.tensor->shape))
            return ad_error(S, "assigned grad has data of a different size");
        ad_tensor_incref(v.u.tensor);
        ad_tensor_decref(S, t->grad);
        t->grad = v.u.tensor;
        return ADDSL_OK;
    }
    return ad_error(S, "attribute '%s' cannot be assigned", ad_attr_name(attr));
}

static int unpack(ad_state *S, ad_value src, int n, ad_value *dst) {
    int64_t len;
    if (!seq_len(src, &len) || src.t == AD_TSTR) return ad_error(S, "cannot unpack a %s", ad_type_name(src));
    if (len != n) return ad_error(S, "cannot unpack %lld values into %d names", (long long)len, n);
    for (int i = 0; i < n; i++) {
        ad_value v;
        int rc = seq_item(S, src, i, &v);
        if (rc) return rc;
        setreg(S, &dst[i], v);
    }
    return ADDSL_OK;
}

/* 'x in c': a key of a dict, an item of a list or tuple, a substring of a string. */
static int contains(ad_state *S, ad_value x, ad_value c, bool *out) {
    switch (c.t) {
    case AD_TDICT: {
        int rc = ad_dict_check_key(S, x);
        if (rc) return rc;
        ad_value v;
        *out = ad_dict_get(c.u.d, x, &v);
        return ADDSL_OK;
    }
    case AD_TLIST: case AD_TTUPLE:
        *out = false;
        for (int64_t i = 0; i < c.u.l->len && !*out; i++) {
            int rc = ad_values_eq(S, c.u.l->items[i], x, out);
            if (rc) return rc;
        }
        return ADDSL_OK;
    case AD_TSTR:
        if (x.t != AD_TSTR) return ad_error(S, "'in <string>' requires a string on the left, not %s", ad_type_name(x));
        *out = x.u.s->len == 0 || (x.u.s->len <= c.u.s->len && memmem(c.u.s->data, c.u.s->len, x.u.s->data, x.u.s->len) != NULL);
        return ADDSL_OK;
    case AD_TTENSOR:
        return ad_error(S, "'in' on a tensor is not supported: use any(t == x)");
    default:
        return ad_error(S, "argument of type %s is not a container for 'in'", ad_type_name(c));
    }
}

static int import_module(ad_state *S, const char *importer, ad_value *r) {
    struct ad_vm *vm = S->vm;
    ad_value done;
    ad_proto *main = NULL;
    char *key = NULL;
    int rc = ad_module_begin(S, r->u.s->data, importer, &done, &main, &key);
    if (rc == ADDSL_ECOMPILE) {
        /* The module's compile error is already located in its own file. */
        ad_buf b;
        ad_buf_init(&b, S);
        ad_buf_puts(&b, S->errmsg);
        if (b.len && b.data[b.len - 1] != '\n') ad_buf_puts(&b, "\n");
        ad_buf_puts(&b, "traceback (most recent call first):");
        if (!b.failed) { ad_vm_set_errmsg(S, rc, b.data); vm->err_located = true; }
        ad_buf_free(&b);
        return rc;
    }
    if (rc) return rc;
    if (!main) { setreg(S, r, done); return ADDSL_OK; }
    int off = (int)(r - vm->stack);
    rc = ad_vm_run_main(S, main);
    ad_proto_decref(S, main);
    ad_value m;
    int frc = ad_module_finish(S, key, rc, &m);
    if (rc) { vm->err_located = true; return rc; }
    if (frc) return frc;
    setreg(S, vm->stack + off, m);
    return ADDSL_OK;
}

static int new_dict(ad_state *S, const ad_value *kv, int n, ad_value *out) {
    ad_dict *d = ad_dict_new(S);
    if (!d) return S->errcode ? S->errcode : ADDSL_ENOMEM;
    for (int i = 0; i < n; i++) {
        int rc = ad_dict_set(S, d, kv[2 * i], kv[2 * i + 1]);
        if (rc) { ad_dict_free(S, d); return rc; }
    }
    *out = ad_dict_value(d);
    return ADDSL_OK;
}

int ad_vm_get_attr(ad_state *S, ad_value obj, int attr, ad_value *out) { return get_attr(S, obj, attr, out); }
int ad_vm_set_attr(ad_state *S, ad_value obj, int attr, ad_value v) { return set_attr(S, obj, attr, v); }
int ad_vm_set_index(ad_state *S, ad_value obj, int n, const ad_value *idx, ad_value v) { return set_index(S, obj, n, idx, v); }

/* ---- calls ---- */

/* Orders arguments by parameter: positional first, keywords by name. 'slots'
 * receives borrowed values (defaults included); returns an error for bad calls. */
static int bind_args(ad_state *S, const char *fname, int np, const char *const *pnames,
                     const ad_value *defaults, const bool *required, int ndef_tail,
                     const ad_value *args, int nargs, const ad_list *kwnames, ad_value *slots) {
    int nkw = kwnames ? (int)kwnames->len : 0;
    int npos = nargs - nkw;
    if (npos > np) return ad_error(S, "%s() takes %d argument%s but %d were given", fname, np, np == 1 ? "" : "s", npos);
    bool set[256];
    memset(set, 0, (size_t)np);
    for (int i = 0; i < npos; i++) { slots[i] = args[i]; set[i] = true; }
    for (int k = 0; k < nkw; k++) {
        const char *kw = kwnames->items[k].u.s->data;
        int j = ad_param_find(np, pnames, kw);
        if (j < 0) return ad_error_unknown_kw(S, fname, kw, pnames, np);
        if (set[j]) return ad_error(S, "%s() got multiple values for argument '%s'", fname, kw);
        slots[j] = args[npos + k];
        set[j] = true;
    }
    for (int j = 0; j < np; j++) {
        if (set[j]) continue;
        if (required) {
            if (required[j]) return ad_error(S, "%s() missing required argument '%s'", fname, pnames[j]);
            slots[j] = defaults[j];
        } else {
            int first_def = np - ndef_tail;
            if (j < first_def) return ad_error(S, "%s() missing required argument '%s'", fname, pnames[j]);
            slots[j] = defaults[j - first_def];
        }
    }
    return ADDSL_OK;
}

static int call_builtin(ad_state *S, ad_builtin *b, const ad_value *args, int nargs, const ad_list *kw, ad_value *out) {
    *out = ad_none();
    /* The one place a closed door refuses: before tracing or running it. */
    if (b->doors & S->cfg.deny) return ad_sandbox_check(S, b, args, nargs, kw);
    if (ad_trace_on(S) && S->trace->through != b) return ad_trace_builtin(S, b, args, nargs, kw, out);
    if (b->call) return b->call(S, b, args, nargs, kw, out);
    /* A builtin that reads tensor memory on the host must never see a GPU
     * tensor; there is none before the CUDA module was asked for. */
    if (S->device && !b->on_device) {
        int rc = ad_device_refuse(S, b->name, args, nargs, kw);
        if (rc) return rc;
    }
    if (b->nparams < 0) {
        if (kw && kw->len) return ad_error(S, "%s() takes no keyword arguments", b->name);
        return b->fn(S, (ad_value *)args, nargs, out);
    }
    ad_value slots[256], packed_args[256], packed = ad_none();
    int rc = ADDSL_OK;
    if (b->varargs) {
        /* The values, then the keyword-only parameters bound by name. */
        int nkw = kw ? (int)kw->len : 0, npos = nargs - nkw;
        if (npos + b->nparams > 256) return ad_error(S, "%s(): too many arguments", b->name);
        rc = bind_args(S, b->name, b->nparams, b->pnames, b->defaults, b->required, 0, args + npos, nkw, kw, slots + npos);
        if (rc) return rc;
        memcpy(slots, args, (size_t)npos * sizeof *slots);
        rc = b->fn(S, slots, npos + b->nparams, out);
        if (rc && S->errcode == ADDSL_OK) S->errcode = rc;
        return rc;
    }
    if (b->sizes_param) {
        rc = ad_args_pack_sizes(S, b->name, b->pnames[b->sizes_param - 1], b->sizes_param - 1,
                                args, nargs, kw ? (int)kw->len : 0, packed_args, &args, &nargs, &packed);
        if (rc) return rc;
    }
    rc = bind_args(S, b->name, b->nparams, b->pnames, b->defaults, b->required, 0, args, nargs, kw, slots);
    if (!rc) rc = b->fn(S, slots, b->nparams, out);
    ad_value_decref(S, packed);
    if (rc && S->errcode == ADDSL_OK) S->errcode = rc;
    return rc;
}

int ad_vm_call_builtin(ad_state *S, ad_builtin *b, const ad_value *args, int nargs, const ad_list *kw, ad_value *out) {
    return call_builtin(S, b, args, nargs, kw, out);
}

/* Sets up a frame for closure f whose arguments are args[0..nargs). */
static int enter_closure(ad_state *S, ad_closure *f, int base, const ad_value *args, int nargs, const ad_list *kw, int ret) {
    ad_proto *p = f->p;
    ad_value slots[256];
    int rc = bind_args(S, p->name, p->nparams, (const char *const *)p->pnames, f->defaults, NULL, p->ndefaults, args, nargs, kw, slots);
    if (rc) return rc;
    for (int i = 0; i < p->nparams; i++) ad_value_incref(slots[i]);
    rc = push_frame(S, f, base, ret);
    if (rc) { for (int i = 0; i < p->nparams; i++) ad_value_decref(S, slots[i]); return rc; }
    ad_value *R = S->vm->stack + base;
    for (int i = 0; i < p->nparams; i++) setreg(S, &R[i], slots[i]);
    return ADDSL_OK;
}

static int poll_interrupt(ad_state *S) {
    struct ad_vm *vm = S->vm;
    if (S->interrupted) { S->interrupted = 0; return ad_error_code(S, ADDSL_EINTERRUPT, "interrupted"); }
    if (S->cfg.interrupt && ++vm->ticks >= S->cfg.interrupt_every) {
        vm->ticks = 0;
        if (S->cfg.interrupt(S->cfg.interrupt_ud)) return ad_error_code(S, ADDSL_EINTERRUPT, "interrupted by the host");
    }
    return ADDSL_OK;
}

static int echo(ad_state *S, ad_value v) {
    if (v.t == AD_TNONE) return ADDSL_OK;
    return ad_repl_echo(S, v); /* vm/repl/help.c: also binds '_' */
}

#if defined(__GNUC__)
#define AD_COMPUTED_GOTO 1
#endif

/* What holds before each instruction (a debug build checks it, as Lua's
 * lvm.c does at each fetch): pc inside the running function's code, cl and
 * R the top frame's, its registers inside the stack, and the run's own
 * frames still there. A stale R after a call that grew the stack, or a jump
 * past the code, stops here instead of reading freed memory. */
#define VMCHECK()                                                                                     \
    (ad_assert(vm->nframes > floor && vm->frames[vm->nframes - 1].fn == cl),                          \
     ad_assert(pc >= cl->p->code && pc < cl->p->code + cl->p->ncode),                                  \
     ad_assert(R == vm->stack + vm->frames[vm->nframes - 1].base),                                    \
     ad_assert(R + cl->p->nregs <= vm->stack + vm->stacksize && K == cl->p->k))

#ifdef AD_COMPUTED_GOTO
#define vmdispatch(o) goto *jump_table[o];
#define vmcase(name) L_##name:
#define vmbreak do { VMCHECK(); ins = *pc++; ad_assert(AD_OP(ins) < OP__COUNT); goto *jump_table[AD_OP(ins)]; } while (0)
#else
#define vmdispatch(o) switch (o)
#define vmcase(name) case OP_##name:
#define vmbreak break
#endif

/* Registers named by an instruction are inside the function's frame. */
#define RA (ad_assert(AD_A(ins) < cl->p->nregs), R + AD_A(ins))
#define RB (ad_assert(AD_B(ins) < cl->p->nregs), R + AD_B(ins))
#define RC (ad_assert(AD_C(ins) < cl->p->nregs), R + AD_C(ins))
#define CHECK(expr) do { int rc_ = (expr); if (rc_) { code = rc_; goto fail; } } while (0)
#define RELOAD() (R = vm->stack + vm->frames[vm->nframes - 1].base)
#define SAVEPC() (vm->frames[vm->nframes - 1].pc = pc)

/* Runs frames until the frame at depth 'floor' returns; its result goes to
 * stack[ret] of that frame (or *result when floor's ret is -1). */
static int execute(ad_state *S, int floor, ad_value *result) {
    struct ad_vm *vm = S->vm;
#ifdef AD_COMPUTED_GOTO
    static const void *const jump_table[OP__COUNT] = {
#define OPCODE(name, fmt, syn) &&L_##name,
#include "opcodes.def"
#undef OPCODE
    };
#endif
    ad_frame *F = &vm->frames[vm->nframes - 1];
    ad_closure *cl = F->fn;
    const ad_value *K = cl->p->k;
    const ad_instr *pc = F->pc;
    ad_value *R = vm->stack + F->base;
    ad_instr ins;
    int code = ADDSL_OK;
    int gslot;  /* the global slot GETGLOBAL's load reads (also reached from METHODFB/GETGLOBALS) */
    ad_assert(floor >= 0 && vm->nframes > floor);
    for (;;) {
        VMCHECK();
        ins = *pc++;
        ad_assert(AD_OP(ins) < OP__COUNT);
#ifndef AD_COMPUTED_GOTO
      dispatch:
#endif
        vmdispatch(AD_OP(ins)) {
        /* Opcode: MOVE  Synopsis: R[A] = R[B] */
        vmcase(MOVE) { ad_value v = *RB; ad_value_incref(v); setreg(S, RA, v); vmbreak; }
        /* Opcode: LOADK  Synopsis: R[A] = K[Bx] */
        vmcase(LOADK) {
            ad_assert(AD_BX(ins) < cl->p->nk);
            ad_value v = K[AD_BX(ins)]; ad_value_incref(v); setreg(S, RA, v); vmbreak;
        }
        /* Opcode: LOADINT  Synopsis: R[A] = sBx */
        vmcase(LOADINT) { setreg(S, RA, ad_int(AD_SBX(ins))); vmbreak; }
        vmcase(LOADNONE) { setreg(S, RA, ad_none()); vmbreak; }
        vmcase(LOADTRUE) { setreg(S, RA, ad_bool(true)); vmbreak; }
        vmcase(LOADFALSE) { setreg(S, RA, ad_bool(false)); vmbreak; }
        /* Opcode: METHODFB  Synopsis: R[A] = G[Bx] unless R[A] is callable */
        vmcase(METHODFB) {
            if (RA->t == AD_TFUNC || RA->t == AD_TBUILTIN || RA->t == AD_TOP) vmbreak;
            gslot = AD_BX(ins);
            goto get_global;
        }
        /* Opcode: GETGLOBALS  Synopsis: R[A] = the script's binding of library name G[Bx], else G[Bx] */
        vmcase(GETGLOBALS) {
            ad_globals *G = S->globals;
            gslot = AD_BX(ins);
            if (G->shadow[gslot] && G->defined[G->shadow[gslot] - 1]) gslot = G->shadow[gslot] - 1;
            goto get_global;
        }
        /* Opcode: GETGLOBAL  Synopsis: R[A] = G[Bx]; an undefined slot is an error */
        vmcase(GETGLOBAL) {
            gslot = AD_BX(ins);
        get_global:;
            ad_globals *G = S->globals;
            ad_assert(gslot >= 0 && gslot < G->n);
            if (!G->defined[gslot]) {
                SAVEPC();
                CHECK(ad_global_resolve(S, &gslot));
                RELOAD(); G = S->globals;
                if (!G->defined[gslot]) CHECK(ad_error(S, "name '%.*s' is not defined", (int)strcspn(G->names[gslot], "\x01"), G->names[gslot])); /* a module name ends at \x01 */
            }
            ad_value v = G->values[gslot];
            if (S->trace && ad_trace_on(S)) ad_trace_guard(S, gslot, NULL, v);
            ad_value_incref(v);
            setreg(S, RA, v);
            vmbreak;
        }
        vmcase(SETGLOBAL) {
            int slot = AD_BX(ins);
            if (S->trace && ad_trace_on(S)) ad_trace_global_write(S);
            ad_globals *G = S->globals;
            ad_assert(slot >= 0 && slot < G->n);
            ad_value v = *RA;
            ad_value_incref(v);
            setreg(S, &G->values[slot], v);
            G->defined[slot] = true;
            vmbreak;
        }
        /* Opcode: GETUPVAL  Synopsis: R[A] = Upvalue[B] */
        vmcase(GETUPVAL) {
            ad_assert(AD_B(ins) < cl->nupvals && cl->upvals[AD_B(ins)]);
            ad_value v = cl->upvals[AD_B(ins)]->v;

            if (S->trace && ad_trace_on(S)) ad_trace_guard(S, -1, cl->upvals[AD_B(ins)], v);
            ad_value_incref(v);
            setreg(S, RA, v);
            vmbreak;
        }
        vmcase(SETUPVAL) {
            if (S->trace && ad_trace_on(S)) ad_trace_cell_write(S, cl->upvals[AD_B(ins)]);
            ad_value v = *RA;
            ad_value_incref(v);
            setreg(S, &cl->upvals[AD_B(ins)]->v, v);
            vmbreak;
        }
        /* Opcode: NEWCELL  Synopsis: R[A] = cell(R[B]) */
        vmcase(NEWCELL) {
            ad_cell *c = ad_cell_new(S, *RB);
            if (!c) { SAVEPC(); CHECK(ADDSL_ENOMEM); }
            ad_value cv; cv.t = AD_TCELL; cv.u.cell = c;
            if (S->trace && ad_trace_on(S)) ad_trace_new_cell(S, c);
            setreg(S, RA, cv);
            vmbreak;
        }
        vmcase(GETCELL) { ad_value v = RB->u.cell->v; ad_value_incref(v); setreg(S, RA, v); vmbreak; }
        vmcase(SETCELL) { ad_value v = *RB; ad_value_incref(v); setreg(S, &RA->u.cell->v, v); vmbreak; }
        vmcase(SELF) { ad_value v; v.t = AD_TFUNC; v.u.fn = cl; cl->hdr.refcount++; setreg(S, RA, v); vmbreak; }
        /* Opcode: ADD  Synopsis: R[A] = R[B] + R[C] (numbers inline, tensors via builtins) */
        vmcase(ADD) {
            ad_value a = *RB, b = *RC;
            if (a.t == AD_TINT && b.t == AD_TINT) { setreg(S, RA, make_num(a.u.n + b.u.n, true)); vmbreak; }
            if (a.t == AD_TNUM && b.t == AD_TNUM) { setreg(S, RA, ad_num(a.u.n + b.u.n)); vmbreak; }
            goto arith_generic;
        }
        vmcase(SUB) {
            ad_value a = *RB, b = *RC;
            if (a.t == AD_TINT && b.t == AD_TINT) { setreg(S, RA, make_num(a.u.n - b.u.n, true)); vmbreak; }
            if (a.t == AD_TNUM && b.t == AD_TNUM) { setreg(S, RA, ad_num(a.u.n - b.u.n)); vmbreak; }
            goto arith_generic;
        }
        vmcase(MUL) {
            ad_value a = *RB, b = *RC;
            if (a.t == AD_TNUM && b.t == AD_TNUM) { setreg(S, RA, ad_num(a.u.n * b.u.n)); vmbreak; }
            goto arith_generic;
        }
        vmcase(DIV)
        vmcase(IDIV)
        vmcase(MOD)
        vmcase(POW)
        vmcase(MATMUL)
        arith_generic: {
            ad_value out = ad_none();
            SAVEPC();
            CHECK(arith(S, AD_OP(ins), *RB, *RC, &out));
            RELOAD();
            setreg(S, RA, out);
            vmbreak;
        }
        /* Opcode: LT  Synopsis: R[A] = R[B] < R[C] */
        vmcase(LT) {
            ad_value a = *RB, b = *RC;
            if (ad_is_number(a) && ad_is_number(b)) { setreg(S, RA, ad_bool(a.u.n < b.u.n)); vmbreak; }
            goto compare_generic;
        }
        vmcase(EQ)
        vmcase(NE)
        vmcase(LE)
        vmcase(GT)
        vmcase(GE)
        compare_generic: {
            ad_value out = ad_none();
            SAVEPC();
            CHECK(compare(S, AD_OP(ins), *RB, *RC, &out));
            RELOAD();
            setreg(S, RA, out);
            vmbreak;
        }
        vmcase(UNM) {
            ad_value a = *RB, out;
            if (num_like(a)) { setreg(S, RA, make_num(-num_of(a), int_like(a))); vmbreak; }
            SAVEPC();
            if (a.t != AD_TTENSOR) CHECK(ad_error(S, "bad operand type for unary -: %s", ad_type_name(a)));
            CHECK(ad_library_ensure_operator(S, AD_OPER_NEG));
            if (S->op_neg) CHECK(ad_op_call(S, S->op_neg, &a, 1, NULL, &out));
            else CHECK(ad_bi_neg(S, a, &out));
            RELOAD();
            setreg(S, RA, out);
            vmbreak;
        }
        vmcase(NOT) {
            bool b;
            SAVEPC();
            CHECK(truth(S, *RB, &b));
            setreg(S, RA, ad_bool(!b));
            vmbreak;
        }
        /* Opcode: JMP  Synopsis: pc += sBx; backward jumps poll for interrupts */
        vmcase(JMP) {
            int off = AD_SBX(ins);
            if (off < 0) { SAVEPC(); CHECK(poll_interrupt(S)); }
            pc += off;
            vmbreak;
        }
        vmcase(JMPIF) {
            ad_value v = *RA;
            bool b;
            if (v.t == AD_TBOOL) b = v.u.b;
            else { SAVEPC(); CHECK(truth(S, v, &b)); }
            if (b) pc += AD_SBX(ins);
            vmbreak;
        }
        vmcase(JMPIFNOT) {
            ad_value v = *RA;
            bool b;
            if (v.t == AD_TBOOL) b = v.u.b;
            else { SAVEPC(); CHECK(truth(S, v, &b)); }
            if (!b) pc += AD_SBX(ins);
            vmbreak;
        }
        /* Opcode: CALL  Synopsis: R[A] = R[A](R[A+1..A+B]); C keyword arguments, names in the next word */
        vmcase(CALL) {
            int a = AD_A(ins), nargs = AD_B(ins), nkw = AD_C(ins);
            const ad_list *kw = NULL;
            if (nkw) { kw = K[AD_BX(*pc)].u.l; pc++; }
            SAVEPC();
            ad_value fv = R[a];
            if (fv.t == AD_TBUILTIN) {
                ad_value out;
                int base_abs = (int)(R - vm->stack) + a;
                CHECK(call_builtin(S, fv.u.bi, R + a + 1, nargs, kw, &out));
                R = vm->stack + vm->frames[vm->nframes - 1].base;
                setreg(S, vm->stack + base_abs, out);
                vmbreak;
            }
            if (fv.t == AD_TOP) {
                ad_value out;
                int base_abs = (int)(R - vm->stack) + a;
                ad_value args[256];
                for (int i = 0; i < nargs; i++) { args[i] = R[a + 1 + i]; ad_value_incref(args[i]); }
                ad_opdef *dop = fv.u.op;
                dop->hdr.refcount++;
                int rc = ad_op_call(S, dop, args, nargs, kw, &out);
                for (int i = 0; i < nargs; i++) ad_value_decref(S, args[i]);
                ad_value dv; dv.t = AD_TOP; dv.u.op = dop;
                ad_value_decref(S, dv);
                CHECK(rc);
                R = vm->stack + vm->frames[vm->nframes - 1].base;
                setreg(S, vm->stack + base_abs, out);
                vmbreak;
            }
            if (fv.t == AD_TFUNC) {
                CHECK(poll_interrupt(S));
                int base_abs = (int)(R - vm->stack) + a;
                ad_value args[256];
                for (int i = 0; i < nargs; i++) { args[i] = R[a + 1 + i]; ad_value_incref(args[i]); }
                int rc = enter_closure(S, fv.u.fn, base_abs + 1, args, nargs, kw, base_abs);
                for (int i = 0; i < nargs; i++) ad_value_decref(S, args[i]);
                CHECK(rc);
                F = &vm->frames[vm->nframes - 1];
                cl = F->fn; K = cl->p->k; pc = F->pc; R = vm->stack + F->base;
                vmbreak;
            }
            if (fv.t == AD_TDTYPE && fv.u.dtype == AD_BOOL) {
                /* bool(x), Python's truth value; the other dtypes are not callable. */
                ad_value out;
                int base_abs = (int)(R - vm->stack) + a;
                if (nargs == 1) CHECK(ad_trace_check_truth(S, R[a + 1], "bool()"));
                CHECK(ad_bi_truth(S, R + a + 1, nargs, kw, &out));
                setreg(S, vm->stack + base_abs, out);
                vmbreak;
            }
            CHECK(ad_error(S, "%s is not callable", ad_type_name(fv)));
            vmbreak;
        }
        /* Opcode: RETURN  Synopsis: return R[A] (or none) to the caller */
        vmcase(RETURN) {
            ad_value v = AD_B(ins) ? *RA : ad_none();
            ad_value_incref(v);
            F = &vm->frames[vm->nframes - 1];
            int ret = F->ret;
            ad_assert(ret >= -1 && ret < F->base);
            pop_frame(S);
            if (vm->nframes == floor) {
                if (ret >= 0) setreg(S, vm->stack + ret, v);
                else *result = v;
                return ADDSL_OK;
            }
            setreg(S, vm->stack + ret, v);
            F = &vm->frames[vm->nframes - 1];
            cl = F->fn; K = cl->p->k; pc = F->pc; R = vm->stack + F->base;
            vmbreak;
        }
        vmcase(NEWLIST)
        vmcase(NEWTUPLE) {
            int n = AD_C(ins);
            ad_vtype kind = AD_OP(ins) == OP_NEWLIST ? AD_TLIST : AD_TTUPLE;
            ad_list *l = ad_list_new(S, kind, n);
            if (!l) { SAVEPC(); CHECK(S->errcode ? S->errcode : ADDSL_ENOMEM); }
            for (int i = 0; i < n; i++) { l->items[i] = RB[i]; ad_value_incref(l->items[i]); }
            setreg(S, RA, ad_list_value(l, kind));
            vmbreak;
        }
        vmcase(NEWSLICE) {
            ad_slice *s = ad_obj_alloc(S, sizeof *s);
            if (!s) { SAVEPC(); CHECK(ADDSL_ENOMEM); }
            s->hdr.refcount = 1;
            s->start = RB[0]; s->stop = RB[1]; s->step = RB[2];
            ad_value_incref(s->start); ad_value_incref(s->stop); ad_value_incref(s->step);
            ad_value v; v.t = AD_TSLICE; v.u.sl = s;
            setreg(S, RA, v);
            vmbreak;
        }
        /* Opcode: INPLACE  Synopsis: R[A] = R[A] op= R[B] (in place on a tensor) */
        vmcase(INPLACE) {
            ad_value out = ad_none();
            SAVEPC();
            CHECK(augmented(S, (ad_opcode)AD_C(ins), *RA, *RB, &out));
            RELOAD();
            setreg(S, RA, out);
            vmbreak;
        }
        /* Opcode: INDEX  Synopsis: R[A] = R[B][R[B+1] ... R[B+C]] */
        vmcase(INDEX) {
            ad_value out = ad_none();
            SAVEPC();
            CHECK(get_index(S, *RB, AD_C(ins), RB + 1, &out));
            RELOAD();
            setreg(S, RA, out);
            vmbreak;
        }
        vmcase(SETINDEX) {
            SAVEPC();
            CHECK(set_index(S, *RA, AD_B(ins), RA + 1, *RC));
            RELOAD();
            vmbreak;
        }
        /* Opcode: GETATTRK  Synopsis: R[A] = R[B].name (name K[Bx] of the next word) */
        vmcase(GETATTRK) {
            ad_value out = ad_none();
            const ad_value nm = K[AD_BX(*pc)];
            pc++;
            SAVEPC();
            CHECK(get_attr_named(S, *RB, nm.u.s->data, &out));
            setreg(S, RA, out);
            vmbreak;
        }
        /* Opcode: APPEND  Synopsis: R[A].append(R[B]) for a list R[A] */
        vmcase(APPEND) {
            ad_value v = *RB;
            ad_value_incref(v);
            SAVEPC();
            CHECK(ad_list_push(S, RA->u.l, v));
            vmbreak;
        }
        /* Opcode: IMPORT  Synopsis: R[A] = module of file R[A], relative to this chunk's file */
        vmcase(IMPORT) {
            SAVEPC();
            CHECK(import_module(S, cl->p->chunk->name, RA));
            RELOAD();
            vmbreak;
        }
        vmcase(NEWDICT) {
            ad_value out = ad_none();
            SAVEPC();
            CHECK(new_dict(S, RB, AD_C(ins), &out));
            setreg(S, RA, out);
            vmbreak;
        }
        vmcase(IN) {
            bool b = false;
            SAVEPC();
            CHECK(contains(S, *RB, *RC, &b));
            setreg(S, RA, ad_bool(b));
            vmbreak;
        }
        vmcase(GETATTR) {
            ad_value out = ad_none();
            SAVEPC();
            CHECK(get_attr(S, *RB, AD_C(ins), &out));
            RELOAD(); /* .T and .mT call the library's ops */
            setreg(S, RA, out);
            vmbreak;
        }
        vmcase(SETATTR) {
            SAVEPC();
            CHECK(set_attr(S, *RA, AD_B(ins), *RC));
            vmbreak;
        }
        vmcase(UNPACK) {
            SAVEPC();
            CHECK(unpack(S, *RB, AD_C(ins), RA));
            RELOAD();
            vmbreak;
        }
        /* Opcode: CLOSURE  Synopsis: R[A] = closure(proto Bx, defaults R[A+1..], upvalues in the next words) */
        vmcase(CLOSURE) {
            ad_assert(AD_BX(ins) < cl->p->nprotos);
            ad_proto *p = cl->p->protos[AD_BX(ins)];

            ad_closure *f = ad_obj_alloc(S, sizeof *f + (size_t)p->nupvals * sizeof(ad_cell *));
            if (!f) { SAVEPC(); CHECK(ADDSL_ENOMEM); }
            f->hdr.refcount = 1;
            f->p = p; ad_proto_incref(p);
            f->nupvals = p->nupvals;
            if (p->ndefaults) {
                f->defaults = ad_obj_alloc(S, (size_t)p->ndefaults * sizeof(ad_value));
                if (!f->defaults) { ad_vm_closure_free(S, f); SAVEPC(); CHECK(ADDSL_ENOMEM); }
                for (int i = 0; i < p->ndefaults; i++) { f->defaults[i] = RA[1 + i]; ad_value_incref(f->defaults[i]); }
            }
            for (int i = 0; i < p->nupvals; i++) {
                ad_instr w = *pc++;
                ad_cell *c = AD_A(w) ? R[AD_BX(w)].u.cell : cl->upvals[AD_BX(w)];
                c->hdr.refcount++;
                f->upvals[i] = c;
            }
            ad_gc_track(S, &f->gc, AD_TFUNC);
            ad_value v; v.t = AD_TFUNC; v.u.fn = f;
            setreg(S, RA, v);
            vmbreak;
        }
        /* Opcode: FORPREP  Synopsis: numeric loop set-up; skip the loop when empty */
        vmcase(FORPREP) {
            ad_value *r = RA;
            SAVEPC();
            for (int i = 0; i < 3; i++)
                if (!num_like(r[i])) CHECK(ad_error(S, "range() arguments must be numbers, not %s", ad_type_name(r[i])));
            double start = num_of(r[0]), stop = num_of(r[1]), step = num_of(r[2]);
            if (step == 0) CHECK(ad_error(S, "range() step must not be zero"));
            bool ints = int_like(r[0]) && int_like(r[2]);
            setreg(S, &r[0], make_num(start, ints));
            setreg(S, &r[1], ad_num(stop));
            setreg(S, &r[2], make_num(step, ints));
            if (step > 0 ? start < stop : start > stop) setreg(S, &r[3], make_num(start, ints));
            else pc += AD_SBX(ins);
            vmbreak;
        }
        vmcase(FORLOOP) {
            ad_value *r = RA;
            double x = r[0].u.n + r[2].u.n, stop = r[1].u.n, step = r[2].u.n;
            bool ints = r[0].t == AD_TINT && r[2].t == AD_TINT;
            r[0] = make_num(x, ints);
            if (step > 0 ? x < stop : x > stop) {
                setreg(S, &r[3], r[0]);
                SAVEPC();
                CHECK(poll_interrupt(S));
                pc += AD_SBX(ins);
            }
            vmbreak;
        }
        vmcase(ITERPREP) {
            int64_t n;
            SAVEPC();
            if (RA->t == AD_TDICT) {
                /* A dict iterates over a snapshot of its keys, in insertion order. */
                ad_value keys;
                CHECK(ad_dict_list(S, RA->u.d, 0, &keys));
                setreg(S, RA, keys);
            }
            /* An iterator wrapper (vm/iter.h) was checked when it was made. */
            if (RA->t != AD_TITER && !seq_len(*RA, &n)) {
                if (RA->t == AD_TTENSOR) CHECK(ad_error(S, "iteration over a 0-d tensor"));
                CHECK(ad_error(S, "%s is not iterable", ad_type_name(*RA)));
            }
            setreg(S, RA + 1, ad_int(0));
            vmbreak;
        }
        vmcase(ITERNEXT) {
            ad_value *r = RA;
            int64_t n = 0, i = (int64_t)r[1].u.n;
            ad_iter *hook = r[0].t == AD_TITER ? r[0].u.it : NULL;
            ad_value seq = hook ? hook->src : r[0];
            seq_len(seq, &n);
            if (hook && hook->step) hook->step(S, hook, i < n ? i : n);
            if (i < n) {
                ad_value v;
                SAVEPC();
                CHECK(seq_item(S, seq, i, &v));
                RELOAD();
                r = RA;
                r[1].u.n = (double)(i + 1);
                setreg(S, &r[2], v);
                CHECK(poll_interrupt(S));
            } else {
                pc += AD_SBX(ins);
            }
            vmbreak;
        }
        vmcase(GRADOFF) { setreg(S, RA, ad_bool(S->grad_enabled)); S->grad_enabled = false; vmbreak; }
        vmcase(GRADRESTORE) { S->grad_enabled = RA->t == AD_TBOOL ? RA->u.b : true; vmbreak; }
        vmcase(ECHO) { SAVEPC(); CHECK(echo(S, *RA)); vmbreak; }
        vmcase(ANOMALYON) { setreg(S, RA, ad_bool(S->anomaly)); S->anomaly = true; vmbreak; }
        vmcase(ANOMALYRESTORE) { S->anomaly = RA->t == AD_TBOOL ? RA->u.b : false; vmbreak; }
        /* Opcode: NEWOP  Synopsis: R[A] = op(template Bx, forward/formulas/defaults in R[A+1...]) */
        vmcase(NEWOP) {
            ad_value v;
            SAVEPC();
            ad_assert(AD_BX(ins) < cl->p->noptemplates);
            CHECK(ad_op_new(S, cl->p->optemplates[AD_BX(ins)], RA + 1, &v));

            setreg(S, RA, v);
            vmbreak;
        }
        vmcase(EXTRAARG) { vmbreak; }
        }
    }
fail:
    return raise_error(S, floor, code);
}

int ad_vm_run_main(ad_state *S, ad_proto *main) {
    struct ad_vm *vm = S->vm;
    ad_closure *f = ad_obj_alloc(S, sizeof *f);
    if (!f) return ADDSL_ENOMEM;
    f->hdr.refcount = 1;
    f->p = main; ad_proto_incref(main);
    ad_gc_track(S, &f->gc, AD_TFUNC);
    int base = vm->nframes ? vm->frames[vm->nframes - 1].base + vm->frames[vm->nframes - 1].fn->p->nregs : 0;
    int floor = vm->nframes;
    bool grad = S->grad_enabled;
    vm->err_located = false;
    int rc = push_frame(S, f, base, -1);
    ad_value fv; fv.t = AD_TFUNC; fv.u.fn = f;
    ad_value_decref(S, fv);
    if (rc) return rc;
    ad_value result = ad_none();
    rc = execute(S, floor, &result);
    ad_value_decref(S, result);
    if (rc) S->grad_enabled = grad;
    return rc;
}

void ad_vm_current_pos(ad_state *S, int *line, int *col, const char **chunk) {
    struct ad_vm *vm = S->vm;
    *line = 0; *col = 0; *chunk = NULL;
    if (!vm || vm->nframes == 0) return;
    ad_frame *f = &vm->frames[vm->nframes - 1];
    frame_pos(f, line, col);
    *chunk = f->fn->p->chunk->name;
}

int ad_vm_call_value(ad_state *S, ad_value fn, int argc, const ad_value *argv, ad_value *out) {
    return ad_vm_call_value_kw(S, fn, argc, argv, NULL, out);
}

int ad_vm_call_value_kw(ad_state *S, ad_value fn, int argc, const ad_value *argv, const ad_list *kw, ad_value *out) {
    struct ad_vm *vm = S->vm;
    *out = ad_none();
    if (fn.t == AD_TBUILTIN) return call_builtin(S, fn.u.bi, argv, argc, kw, out);
    if (fn.t == AD_TOP) return ad_op_call(S, fn.u.op, argv, argc, kw, out);
    if (fn.t != AD_TFUNC) return ad_error(S, "%s is not callable", ad_type_name(fn));
    if (argc > 255) return ad_error(S, "too many arguments");
    int base = vm->nframes ? vm->frames[vm->nframes - 1].base + vm->frames[vm->nframes - 1].fn->p->nregs : 0;
    int floor = vm->nframes;
    bool nested = vm->nframes > 0;
    if (!nested) vm->err_located = false;
    int rc = enter_closure(S, fn.u.fn, base, argv, argc, kw, -1);
    if (rc) return rc;
    return execute(S, floor, out);
}

/* One instruction of closure fn run from C: the call (OP_CALL, callee) or
 * the operator (an arith opcode) at instruction 'pc', on argv, where
 * argument i is attribute attrs[i] of argv[i] (read by the instruction at
 * attr_pcs[i]) when attrs and attrs[i] >= 0. fn's frame is pushed with none
 * of its registers set, so that an error gets the traceback the whole
 * closure would give (vm/autograd/formula_fast.c). */
int ad_vm_call_in_frame(ad_state *S, ad_closure *fn, int pc, int opcode, ad_value callee, int argc,
                        const ad_value *argv, const int16_t *attrs, const int *attr_pcs, ad_value *out) {
    struct ad_vm *vm = S->vm;
    *out = ad_none();
    if (argc > AD_VM_FRAME_CALL_MAX_ARGS) return ad_error(S, "too many arguments");
    int base = vm->nframes ? vm->frames[vm->nframes - 1].base + vm->frames[vm->nframes - 1].fn->p->nregs : 0;
    int floor = vm->nframes;
    if (!vm->nframes) vm->err_located = false;
    int rc = push_frame(S, fn, base, -1);
    if (rc) return rc;
    ad_value args[AD_VM_FRAME_CALL_MAX_ARGS];
    int got = 0; /* attribute values read so far (owned) */
    for (int i = 0; i < argc; i++) args[i] = argv[i];
    for (int i = 0; attrs && i < argc && !rc; i++) {
        if (attrs[i] < 0) continue;
        vm->frames[vm->nframes - 1].pc = fn->p->code + attr_pcs[i] + 1;
        rc = get_attr(S, argv[i], attrs[i], &args[i]);
        if (!rc) got = i + 1;
    }
    if (!rc) {
        vm->frames[vm->nframes - 1].pc = fn->p->code + pc + 1; /* as SAVEPC leaves it */
        if (opcode != OP_CALL) {
            rc = arith(S, (ad_opcode)opcode, args[0], args[1], out);
        } else {
            ad_value_incref(callee); /* the global may be rebound while it runs */
            if (callee.t == AD_TFUNC) rc = poll_interrupt(S);
            if (!rc) rc = ad_vm_call_value(S, callee, argc, args, out);
            ad_value_decref(S, callee);
        }
    }
    for (int i = 0; attrs && i < got; i++)
        if (attrs[i] >= 0) ad_value_decref(S, args[i]);
    if (rc) {
        ad_value_decref(S, *out);
        *out = ad_none();
        return raise_error(S, floor, rc);
    }
    /* Its registers were never written: popped without clearing them. */
    ad_frame *f = &vm->frames[--vm->nframes];
    ad_value fv; fv.t = AD_TFUNC; fv.u.fn = f->fn;
    ad_value_decref(S, fv);
    return ADDSL_OK;
}

/* ---- disassembler ---- */

typedef enum { F_ABC, F_ABx, F_AsBx, F_A } ad_fmt;
static const char *const op_names[OP__COUNT] = {
#define OPCODE(name, fmt, syn) #name,
#include "opcodes.def"
#undef OPCODE
};
#define ABC F_ABC
#define ABx F_ABx
#define AsBx F_AsBx
#define A F_A
static const ad_fmt op_fmts[OP__COUNT] = {
#define OPCODE(name, fmt, syn) fmt,
#include "opcodes.def"
#undef OPCODE
};
#undef ABC
#undef ABx
#undef AsBx
#undef A

static const char *source_line(const ad_chunk *c, int line, int *len) {
    const char *p = c->src, *end = c->src + c->len;
    for (int l = 1; l < line && p < end; l++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) return NULL;
        p = nl + 1;
    }
    const char *e = memchr(p, '\n', (size_t)(end - p));
    if (!e) e = end;
    while (p < e && (*p == ' ' || *p == '\t')) p++;
    *len = (int)(e - p);
    return p;
}

int ad_vm_disasm(ad_state *S, const ad_proto *p, ad_buf *b) {
    ad_buf_printf(b, "function %s (%d params, %d registers, %d constants) at %s:%d\n",
                  p->name, p->nparams, p->nregs, p->nk, p->chunk->name, p->line);
    int last_line = -1;
    for (int i = 0; i < p->ncode; i++) {
        ad_instr ins = p->code[i];
        ad_opcode op = AD_OP(ins);
        int line = p->lines[i] >> 12;
        if (line != last_line) {
            int len;
            const char *src = source_line(p->chunk, line, &len);
            if (src) ad_buf_printf(b, "  ; %d: %.*s\n", line, len > 70 ? 70 : len, src);
            last_line = line;
        }
        ad_buf_printf(b, "  %4d  %-11s", i, op < OP__COUNT ? op_names[op] : "?");
        switch (op < OP__COUNT ? op_fmts[op] : F_ABC) {
        case F_ABC: ad_buf_printf(b, " %d %d %d", AD_A(ins), AD_B(ins), AD_C(ins)); break;
        case F_ABx: ad_buf_printf(b, " %d %d", AD_A(ins), AD_BX(ins)); break;
        case F_AsBx: ad_buf_printf(b, " %d %d", AD_A(ins), AD_SBX(ins)); break;
        case F_A: ad_buf_printf(b, " %d", AD_A(ins)); break;
        }
        if (op == OP_LOADK) {
            ad_buf_puts(b, "    ; ");
            ad_value_format(S, p->k[AD_BX(ins)], b, true);
        } else if (op == OP_GETGLOBAL || op == OP_SETGLOBAL || op == OP_METHODFB || op == OP_GETGLOBALS) {
            ad_buf_printf(b, "    ; %s", S->globals->names[AD_BX(ins)]);
        } else if (op == OP_JMP || op == OP_JMPIF || op == OP_JMPIFNOT || op == OP_FORPREP || op == OP_FORLOOP || op == OP_ITERNEXT) {
            ad_buf_printf(b, "    ; to %d", i + 1 + AD_SBX(ins));
        } else if (op == OP_GETATTRK && i + 1 < p->ncode) {
            ad_buf_puts(b, "    ; .");
            ad_value_format(S, p->k[AD_BX(p->code[i + 1])], b, false);
        } else if (op == OP_GETATTR) {
            ad_buf_printf(b, "    ; .%s", ad_attr_name(AD_C(ins)));
        } else if (op == OP_SETATTR) {
            ad_buf_printf(b, "    ; .%s", ad_attr_name(AD_B(ins)));
        }
        ad_buf_puts(b, "\n");
    }
    for (int i = 0; i < p->nprotos; i++) {
        ad_buf_puts(b, "\n");
        ad_vm_disasm(S, p->protos[i], b);
    }
    return b->failed ? ADDSL_ENOMEM : ADDSL_OK;
}
