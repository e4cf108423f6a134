/* codegen.c: the code generator: syntax tree to register bytecode.
 * A resolver pass first marks locals captured by inner functions, so those
 * live in cells from their first store and closures share them. */
#include "codegen.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ast.h"
#include "buf.h"
#include "autograd/desugar.h"
#include "dict.h"
#include "grammar.h"
#include "repl/hint.h"
#include "source.h"
#include "state.h"

/* ---- resolver: which declarations are captured by an inner function ---- */

typedef struct rbind { const char *name; ad_node *decl; int level; } rbind;

typedef struct resolver {
    int nest;        /* recursion depth of the walk */
    const char **imports; int nimports, capimports; /* names bound by import */
    rbind *b;
    int n, cap;
    int level;       /* function nesting: 0 is the main chunk */
    int depth;       /* block nesting inside main: globals live at depth 0 */
    ad_state *S;
    bool failed;
} resolver;

/* Name lookups walk every binding in scope, mostly to miss (a global's
 * name); the first byte settles most misses without a call. */
static inline bool same_name(const char *a, const char *b) {
    return a[0] == b[0] && strcmp(a, b) == 0;
}

static void r_declare(resolver *R, ad_node *decl, const char *name) {
    if (R->level == 0 && R->depth == 0) return; /* a global */
    if (R->n == R->cap) {
        int cap = R->cap ? R->cap * 2 : 32;
        rbind *nb = ad_realloc(R->S, R->b, (size_t)cap * sizeof *nb);
        if (!nb) { R->failed = true; return; }
        R->b = nb; R->cap = cap;
    }
    R->b[R->n].name = name; R->b[R->n].decl = decl; R->b[R->n].level = R->level;
    R->n++;
}

static void r_use(resolver *R, const char *name) {
    for (int i = R->n - 1; i >= 0; i--) {
        if (same_name(R->b[i].name, name)) {
            if (R->b[i].level < R->level) {
                /* A function's reference to its own name is compiled as SELF, not a capture. */
                if (!(R->b[i].decl->kind == N_FNDEF && R->b[i].level == R->level - 1 && R->b[i].decl->captured == false && R->b[i].decl->slot == -2))
                    R->b[i].decl->captured = true;
            }
            return;
        }
    }
}

static void r_node(resolver *R, ad_node *n);

static void r_list(resolver *R, ad_nlist *l) {
    for (int i = 0; l && i < l->n; i++) r_node(R, l->items[i]);
}

static void r_block(resolver *R, ad_node *blk) {
    int save = R->n;
    R->depth++;
    r_list(R, blk->list);
    R->depth--;
    R->n = save;
}

static void r_function(resolver *R, ad_node *fn, ad_nlist *params, ad_node *body) {
    for (int i = 0; params && i < params->n; i++) r_node(R, params->items[i]->a); /* defaults: outer scope */
    int save = R->n, save_depth = R->depth;
    R->level++;
    R->depth = 1;
    if (fn && fn->kind == N_FNDEF) {
        /* Inside its own body the function refers to itself as SELF. */
        fn->slot = -2;
        int before = R->n;
        r_declare(R, fn, fn->str);
        if (R->n > before) R->b[R->n - 1].level = R->level - 1; /* else out of memory: R->failed */
    }
    for (int i = 0; params && i < params->n; i++) r_declare(R, params->items[i], params->items[i]->str);
    r_list(R, body->list);
    if (fn && fn->kind == N_FNDEF) fn->slot = -1;
    R->level--;
    R->depth = save_depth;
    R->n = save;
}

static void r_node_inner(resolver *R, ad_node *n);

/* The tree can be as deep as the source nests; past the limit the compiler
 * reports an error (the code generator checks the same bound) instead of
 * overflowing the C stack. */
static void r_node(resolver *R, ad_node *n) {
    if (!n || R->nest > AD_MAX_SYNTAX_DEPTH) return;
    R->nest++;
    r_node_inner(R, n);
    R->nest--;
}

static void r_node_inner(resolver *R, ad_node *n) {
    switch (n->kind) {
    case N_NAME: r_use(R, n->str); break;
    case N_LET: r_node(R, n->a); r_declare(R, n, n->str); break;
    case N_IMPORT:
        r_declare(R, n->a, n->a->str);
        if (R->nimports == R->capimports) {
            int cap = R->capimports ? R->capimports * 2 : 8;
            const char **ni = ad_realloc(R->S, R->imports, (size_t)cap * sizeof *ni);
            if (!ni) { R->failed = true; break; }
            R->imports = ni; R->capimports = cap;
        }
        R->imports[R->nimports++] = n->a->str;
        break;
    case N_LETDESTR:
        r_node(R, n->a);
        for (int i = 0; n->list && i < n->list->n; i++) r_declare(R, n->list->items[i], n->list->items[i]->str);
        break;
    case N_FNDEF:
        r_declare(R, n, n->str);
        r_function(R, n, n->list, n->b);
        break;
    case N_LAMBDA: r_function(R, n, n->list, n->b); break;
    case N_OPDEF: {
        ad_opinfo *in = n->info;
        for (int i = 0; i < in->nparams; i++) r_node(R, in->params[i]->a);
        r_node(R, in->forward);
        for (int i = 0; i < in->nvjp; i++) r_node(R, in->vjp[i]);
        for (int i = 0; i < in->njvp; i++) r_node(R, in->jvp[i]);
        r_declare(R, n, n->str);
        break;
    }
    case N_ANOMALY: r_block(R, n->b); break;
    case N_BLOCK: r_block(R, n); break;
    case N_NOGRAD: r_block(R, n->b); break;
    case N_WHILE: r_node(R, n->a); r_block(R, n->b); break;
    case N_IF: r_node(R, n->a); r_block(R, n->b); if (n->c) { if (n->c->kind == N_BLOCK) r_block(R, n->c); else r_node(R, n->c); } break;
    case N_LISTCOMP: case N_DICTCOMP: {
        /* The loop variables live in the comprehension's own scope. */
        int save = R->n;
        R->depth++;
        for (int i = 0; i < n->list->n; i++) {
            ad_node *c = n->list->items[i];
            r_node(R, c->a);
            for (int j = 0; c->kind == N_COMPFOR && j < c->list->n; j++)
                r_declare(R, c->list->items[j], c->list->items[j]->str);
        }
        r_node(R, n->a);
        r_node(R, n->b);
        R->depth--;
        R->n = save;
        break;
    }
    case N_FOR: {
        r_node(R, n->a);
        int save = R->n;
        R->depth++;
        for (int i = 0; n->list && i < n->list->n; i++) r_declare(R, n->list->items[i], n->list->items[i]->str);
        r_block(R, n->b);
        R->depth--;
        R->n = save;
        break;
    }
    default:
        r_node(R, n->a); r_node(R, n->b); r_node(R, n->c); r_list(R, n->list);
        break;
    }
}

/* ---- code generation ---- */

typedef struct lvar {
    const char *name;
    int reg;
    bool cell;
} lvar;

typedef struct loopinfo {
    int *breaks; int nbreaks, capbreaks;
    int *conts; int nconts, capconts;
    int grad_depth; /* no_grad blocks open when the loop started */
    struct loopinfo *outer;
} loopinfo;

typedef struct upname { const char *name; int index; } upname;

typedef struct fstate {
    struct fstate *parent;
    struct cstate *C;
    ad_proto *p;
    int capcode, capk, capprotos, capupvals;
    lvar *vars; int nvars, capvars;
    upname *upnames;
    int freereg;
    int depth;            /* block depth; main's globals live at 0 */
    bool is_main;
    const char *selfname; /* a named function's own name (compiled as SELF) */
    loopinfo *loop;
    int grad_regs[64]; bool grad_is_anomaly[64]; int ngrad;
    int nest;             /* recursion depth of expr() and stmt() */
    int line, col;
} fstate;

/* A global a chunk reads; 'near' is the nearest local in scope there, kept
 * for "did you mean" when the name turns out undefined. */
typedef struct gref { int slot; int line, col; bool method; ad_suggest near; } gref;

typedef struct cstate {
    ad_state *S;
    ad_chunk *chunk;
    bool repl;
    bool library;         /* the embedded op library: no user shadows (vm/globals.c) */
    bool failed;
    int err_line, err_col;
    char err_msg[256];
    gref *grefs; int ngrefs, capgrefs;
    const char *modkey;   /* compiling a module: its key (real path) */
    ad_dict *modnames;    /* ... and its top-level names (-> slots once compiled) */
    const char **imports; int nimports; /* names bound by an import anywhere in the chunk */
} cstate;

static void cerror(fstate *fs, int line, int col, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void cerror(fstate *fs, int line, int col, const char *fmt, ...) {
    cstate *C = fs->C;
    if (C->failed) return;
    C->failed = true;
    C->err_line = line; C->err_col = col;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(C->err_msg, sizeof C->err_msg, fmt, ap);
    va_end(ap);
}

static void nomem(fstate *fs) { cerror(fs, fs->line, fs->col, "out of memory"); }

static bool grow(fstate *fs, void **arr, int *cap, int n, size_t elem) {
    if (n < *cap) return true;
    int nc = *cap ? *cap * 2 : 16;
    void *p = ad_realloc(fs->C->S, *arr, (size_t)nc * elem);
    if (!p) { nomem(fs); return false; }
    *arr = p; *cap = nc;
    return true;
}

static int emit(fstate *fs, ad_instr ins) {
    ad_proto *p = fs->p;
    int cap = fs->capcode;
    if (!grow(fs, (void **)&p->code, &cap, p->ncode, sizeof(ad_instr))) return -1;
    if (cap != fs->capcode) {
        int32_t *l = ad_realloc(fs->C->S, p->lines, (size_t)cap * sizeof *l);
        if (!l) { nomem(fs); return -1; }
        p->lines = l;
        fs->capcode = cap;
    }
    int col = fs->col > 4095 ? 4095 : fs->col;
    p->code[p->ncode] = ins;
    p->lines[p->ncode] = (fs->line << 12) | col;
    return p->ncode++;
}

static int emit_abc(fstate *fs, ad_opcode op, int a, int b, int c) { return emit(fs, AD_ABC(op, a, b, c)); }
static int emit_abx(fstate *fs, ad_opcode op, int a, int bx) { return emit(fs, AD_ABX(op, a, bx)); }

static int emit_jump(fstate *fs, ad_opcode op, int a) { return emit_abx(fs, op, a, 32767); }

static void patch_to(fstate *fs, int at, int target) {
    if (at < 0 || fs->C->failed) return;
    int off = target - (at + 1);
    if (off < -32767 || off > 32768) { cerror(fs, fs->line, fs->col, "function too long (jump out of range)"); return; }
    ad_instr i = fs->p->code[at];
    fs->p->code[at] = AD_ABX(AD_OP(i), AD_A(i), off + 32767);
}

static void patch_here(fstate *fs, int at) { patch_to(fs, at, fs->p->ncode); }

static int add_k(fstate *fs, ad_value v) {
    ad_proto *p = fs->p;
    for (int i = 0; i < p->nk; i++) {
        ad_value k = p->k[i];
        if (k.t == v.t && ((ad_is_number(v) && k.u.n == v.u.n && signbit(k.u.n) == signbit(v.u.n)) ||
                           (v.t == AD_TSTR && ad_values_equal(k, v)))) {
            ad_value_decref(fs->C->S, v);
            return i;
        }
    }
    if (p->nk >= AD_MAXBX) { ad_value_decref(fs->C->S, v); cerror(fs, fs->line, fs->col, "too many constants in one function"); return 0; }
    if (!grow(fs, (void **)&p->k, &fs->capk, p->nk, sizeof(ad_value))) { ad_value_decref(fs->C->S, v); return 0; }
    p->k[p->nk] = v;
    return p->nk++;
}

static int add_kstr(fstate *fs, const char *s, size_t len) {
    ad_value v;
    if (ad_string_value(fs->C->S, s, len, &v)) { nomem(fs); return 0; }
    return add_k(fs, v);
}

static int reserve(fstate *fs, int n) {
    int r = fs->freereg;
    fs->freereg += n;
    if (fs->freereg > AD_MAX_REGS) {
        cerror(fs, fs->line, fs->col, "function or expression too complex (more than %d registers)", AD_MAX_REGS);
        fs->freereg = r;
        return 0;
    }
    if (fs->freereg > fs->p->nregs) fs->p->nregs = fs->freereg;
    return r;
}

static void setpos(fstate *fs, const ad_node *n) {
    if (n && n->line) { fs->line = n->line; fs->col = n->col; }
}

/* Variables. */
static int find_local(fstate *fs, const char *name) {
    for (int i = fs->nvars - 1; i >= 0; i--)
        if (same_name(fs->vars[i].name, name)) return i;
    return -1;
}

static void add_local(fstate *fs, const char *name, int reg, bool cell) {
    if (!grow(fs, (void **)&fs->vars, &fs->capvars, fs->nvars, sizeof(lvar))) return;
    fs->vars[fs->nvars].name = name;
    fs->vars[fs->nvars].reg = reg;
    fs->vars[fs->nvars].cell = cell;
    fs->nvars++;
}

static int find_upval(fstate *fs, const char *name);

static int add_upval(fstate *fs, const char *name, bool instack, int index) {
    ad_proto *p = fs->p;
    for (int i = 0; i < p->nupvals; i++)
        if (same_name(fs->upnames[i].name, name)) return i;
    if (p->nupvals >= 255) { cerror(fs, fs->line, fs->col, "too many captured variables"); return 0; }
    int cap = fs->capupvals;
    if (!grow(fs, (void **)&p->upvals, &cap, p->nupvals, sizeof(ad_upvaldesc))) return 0;
    if (cap != fs->capupvals) {
        upname *u = ad_realloc(fs->C->S, fs->upnames, (size_t)cap * sizeof *u);
        if (!u) { nomem(fs); return 0; }
        fs->upnames = u;
        fs->capupvals = cap;
    }
    p->upvals[p->nupvals].instack = instack;
    p->upvals[p->nupvals].index = (uint8_t)index;
    fs->upnames[p->nupvals].name = name;
    fs->upnames[p->nupvals].index = index;
    return p->nupvals++;
}

/* Upvalue index of 'name' in fs, capturing it through enclosing functions; -1 if not found. */
static int find_upval(fstate *fs, const char *name) {
    fstate *up = fs->parent;
    if (!up) return -1;
    for (int i = 0; i < fs->p->nupvals; i++)
        if (same_name(fs->upnames[i].name, name)) return i;
    int li = find_local(up, name);
    if (li >= 0) {
        if (!up->vars[li].cell) return -1; /* resolver guarantees captured locals are cells */
        return add_upval(fs, name, true, up->vars[li].reg);
    }
    if (up->selfname && strcmp(up->selfname, name) == 0) return -1;
    int ui = find_upval(up, name);
    if (ui < 0) return -1;
    return add_upval(fs, name, false, ui);
}

/* V_LIBGLOBAL: user code naming a library slot that it has not bound itself
 * when compiled; read through the shadow the name may have by run time. */
typedef enum { V_LOCAL, V_CELL, V_UPVAL, V_SELF, V_GLOBAL, V_LIBGLOBAL } vkind;
typedef struct vref { vkind kind; int index; } vref;

static void near_locals(fstate *fs, const char *name, ad_suggest *s) {
    ad_suggest_init(s, name);
    for (fstate *f = fs; f; f = f->parent) {
        for (int i = f->nvars - 1; i >= 0; i--) ad_suggest_add(s, f->vars[i].name);
        if (f->selfname) ad_suggest_add(s, f->selfname);
    }
}

static void note_global(fstate *fs, int slot, bool method) {
    cstate *C = fs->C;
    if (C->ngrefs == C->capgrefs) {
        int cap = C->capgrefs ? C->capgrefs * 2 : 64;
        gref *g = ad_realloc(C->S, C->grefs, (size_t)cap * sizeof *g);
        if (!g) { nomem(fs); return; }
        C->grefs = g; C->capgrefs = cap;
    }
    C->grefs[C->ngrefs].slot = slot;
    C->grefs[C->ngrefs].line = fs->line;
    C->grefs[C->ngrefs].col = fs->col;
    C->grefs[C->ngrefs].method = method;
    ad_globals *G = C->S->globals;
    /* Only a name not bound yet may end undefined; the locals are gone by then. */
    if (!G->declared[slot] && !G->defined[slot]) near_locals(fs, G->names[slot], &C->grefs[C->ngrefs].near);
    else ad_suggest_init(&C->grefs[C->ngrefs].near, G->names[slot]);
    C->ngrefs++;
}

/* A module's own top-level name lives in a slot named NAME "\x01" KEY. */
enum { GNAME_MAX = 4608 };
static const char *global_name(fstate *fs, const char *name, char *buf) {
    cstate *C = fs->C;
    if (!C->modkey || !ad_dict_get_str(C->modnames, name)) return name;
    int n = snprintf(buf, GNAME_MAX, "%s\x01%s", name, C->modkey);
    if (n < 0 || n >= GNAME_MAX) cerror(fs, fs->line, fs->col, "module path too long");
    return buf;
}

static vref resolve(fstate *fs, const char *name, bool method) {
    vref r;
    int li = find_local(fs, name);
    if (li >= 0) { r.kind = fs->vars[li].cell ? V_CELL : V_LOCAL; r.index = fs->vars[li].reg; return r; }
    if (fs->selfname && strcmp(fs->selfname, name) == 0) { r.kind = V_SELF; r.index = 0; return r; }
    int ui = find_upval(fs, name);
    if (ui >= 0) { r.kind = V_UPVAL; r.index = ui; return r; }
    r.kind = V_GLOBAL;
    char gbuf[GNAME_MAX];
    const char *gname = global_name(fs, name, gbuf);
    r.index = fs->C->library ? ad_global_slot(fs->C->S, gname, true) : ad_global_user_slot(fs->C->S, gname, true, false);
    if (r.index < 0) { nomem(fs); r.index = 0; return r; }
    if (r.index > AD_MAXBX) { cerror(fs, fs->line, fs->col, "too many global names"); r.index = 0; return r; }
    if (!fs->C->library && fs->C->S->globals->lib[r.index]) r.kind = V_LIBGLOBAL;
    note_global(fs, r.index, method);
    return r;
}

static void load_var(fstate *fs, vref v, int dst) {
    switch (v.kind) {
    case V_LOCAL: if (v.index != dst) emit_abc(fs, OP_MOVE, dst, v.index, 0); break;
    case V_CELL: emit_abc(fs, OP_GETCELL, dst, v.index, 0); break;
    case V_UPVAL: emit_abc(fs, OP_GETUPVAL, dst, v.index, 0); break;
    case V_SELF: emit_abc(fs, OP_SELF, dst, 0, 0); break;
    case V_GLOBAL: emit_abx(fs, OP_GETGLOBAL, dst, v.index); break;
    case V_LIBGLOBAL: emit_abx(fs, OP_GETGLOBALS, dst, v.index); break;
    }
}

static void expr(fstate *fs, ad_node *n, int dst);
static void block(fstate *fs, ad_node *b);
static void stmt(fstate *fs, ad_node *n);

/* A register holding n's value: a plain local's own register, or a new temporary. */
static int expr_any(fstate *fs, ad_node *n) {
    if (n->kind == N_NAME) {
        int li = find_local(fs, n->str);
        if (li >= 0 && !fs->vars[li].cell) return fs->vars[li].reg;
    }
    int r = reserve(fs, 1);
    expr(fs, n, r);
    return r;
}

static void expr_list(fstate *fs, ad_nlist *l, int base) {
    for (int i = 0; l && i < l->n; i++) expr(fs, l->items[i], base + i);
}

static ad_opcode binop_code(int tk) {
    switch (tk) {
    case TK_PLUS: return OP_ADD; case TK_MINUS: return OP_SUB; case TK_STAR: return OP_MUL;
    case TK_SLASH: return OP_DIV; case TK_PERCENT: return OP_MOD; case TK_POW: return OP_POW;
    case TK_AT: return OP_MATMUL; case TK_EQ: return OP_EQ; case TK_NE: return OP_NE;
    case TK_LT: return OP_LT; case TK_LE: return OP_LE; case TK_GT: return OP_GT;
    case TK_IN: return OP_IN; case TK_DSLASH: return OP_IDIV;
    default: return OP_GE;
    }
}

static void compile_function(fstate *fs, ad_node *fn, const char *name, ad_nlist *params, ad_node *body, int dst);

/* Arguments of a call at base+1...; returns the CALL's B and C (positional+kw, kw). */
static void call_args(fstate *fs, ad_nlist *args, int base, int first, int *nargs, int *nkw, int *kwk) {
    int n = args ? args->n : 0;
    int total = first + n, kw = 0;
    bool seen_kw = false;
    reserve(fs, n);
    for (int i = 0; i < n; i++) {
        ad_node *a = args->items[i];
        if (a->kind == N_KWARG) { seen_kw = true; kw++; expr(fs, a->a, base + 1 + first + i); }
        else {
            if (seen_kw) { cerror(fs, a->line, a->col, "positional argument follows keyword argument"); return; }
            expr(fs, a, base + 1 + first + i);
        }
    }
    *kwk = -1;
    if (kw) {
        ad_list *names = ad_list_new(fs->C->S, AD_TTUPLE, kw);
        if (!names) { nomem(fs); return; }
        int j = 0;
        for (int i = 0; i < n; i++) {
            ad_node *a = args->items[i];
            if (a->kind != N_KWARG) continue;
            for (int q = 0; q < j; q++)
                if (strcmp(names->items[q].u.s->data, a->str) == 0) {
                    cerror(fs, a->line, a->col, "keyword argument '%s' repeated", a->str);
                    ad_value_decref(fs->C->S, ad_list_value(names, AD_TTUPLE));
                    return;
                }
            if (ad_string_value(fs->C->S, a->str, a->len, &names->items[j])) { nomem(fs); ad_value_decref(fs->C->S, ad_list_value(names, AD_TTUPLE)); return; }
            j++;
        }
        ad_value v = ad_list_value(names, AD_TTUPLE);
        ad_proto *p = fs->p;
        if (p->nk >= AD_MAXBX || !grow(fs, (void **)&p->k, &fs->capk, p->nk, sizeof(ad_value))) { ad_value_decref(fs->C->S, v); return; }
        p->k[p->nk] = v;
        *kwk = p->nk++;
    }
    if (total > 255) cerror(fs, fs->line, fs->col, "too many arguments in one call");
    *nargs = total; *nkw = kw;
}

static void emit_call(fstate *fs, int base, int nargs, int nkw, int kwk) {
    emit_abc(fs, OP_CALL, base, nargs, nkw);
    if (nkw) emit_abx(fs, OP_EXTRAARG, 0, kwk);
}

/* m.f(x) calls the module's f with (x) when m names a module: bound by an
 * import in this chunk, or (the REPL's next line) a global holding one now. */
static bool names_module(fstate *fs, const ad_node *recv) {
    if (recv->kind != N_NAME) return false;
    cstate *C = fs->C;
    for (int i = 0; i < C->nimports; i++)
        if (strcmp(C->imports[i], recv->str) == 0) return true;
    if (find_local(fs, recv->str) >= 0) return false;
    char gbuf[GNAME_MAX];
    int g = ad_global_user_slot(C->S, global_name(fs, recv->str, gbuf), false, false);
    ad_globals *G = C->S->globals;
    return g >= 0 && G->defined[g] && G->values[g].t == AD_TMODULE;
}

static void expr_call(fstate *fs, ad_node *n, int dst) {
    int save = fs->freereg;
    int base = reserve(fs, 1);
    int nargs = 0, nkw = 0, kwk = -1;
    if (n->kind == N_METHOD && names_module(fs, n->a)) {
        int k = add_kstr(fs, n->str, n->len);
        int m = expr_any(fs, n->a);
        setpos(fs, n);
        emit_abc(fs, OP_GETATTRK, base, m, 0);
        emit_abx(fs, OP_EXTRAARG, 0, k);
        fs->freereg = base + 1;
        call_args(fs, n->list, base, 0, &nargs, &nkw, &kwk);
    } else if (n->kind == N_METHOD) {
        setpos(fs, n);
        /* x.f() is f(x) with the f in scope; where that f is not callable (a
         * tensor named t, calling x.t()), it is the library's op f. */
        vref v = resolve(fs, n->str, true);
        load_var(fs, v, base);
        ad_globals *G = fs->C->S->globals;
        int g = ad_global_slot(fs->C->S, n->str, false);
        if (g >= 0 && G->lib[g] && !(v.kind == V_GLOBAL && v.index == g))
            emit_abx(fs, OP_METHODFB, base, g);
        reserve(fs, 1);
        expr(fs, n->a, base + 1);
        call_args(fs, n->list, base, 1, &nargs, &nkw, &kwk);
    } else {
        expr(fs, n->a, base);
        call_args(fs, n->list, base, 0, &nargs, &nkw, &kwk);
    }
    setpos(fs, n);
    emit_call(fs, base, nargs, nkw, kwk);
    if (dst != base) emit_abc(fs, OP_MOVE, dst, base, 0);
    fs->freereg = save;
}

static void expr_index_operands(fstate *fs, ad_node *n, int base) {
    expr(fs, n->a, base);
    reserve(fs, n->list->n);
    for (int i = 0; i < n->list->n; i++) {
        ad_node *ix = n->list->items[i];
        int r = base + 1 + i;
        if (ix->kind == N_SLICE) {
            int save = fs->freereg;
            int t = reserve(fs, 3);
            ad_node *parts[3] = {ix->a, ix->b, ix->c};
            for (int k = 0; k < 3; k++) {
                if (parts[k]) expr(fs, parts[k], t + k);
                else emit_abc(fs, OP_LOADNONE, t + k, 0, 0);
            }
            setpos(fs, ix);
            emit_abc(fs, OP_NEWSLICE, r, t, 0);
            fs->freereg = save;
        } else {
            expr(fs, ix, r);
        }
    }
}

static void expr_index(fstate *fs, ad_node *n, int dst) {
    int save = fs->freereg;
    int base = reserve(fs, 1);
    if (n->list->n > 254) { cerror(fs, n->line, n->col, "too many indices"); return; }
    expr_index_operands(fs, n, base);
    setpos(fs, n);
    emit_abc(fs, OP_INDEX, dst, base, n->list->n);
    fs->freereg = save;
}

static void expr_seq(fstate *fs, ad_node *n, int dst) {
    int save = fs->freereg;
    int cnt = n->list ? n->list->n : 0;
    if (cnt > 200) {
        /* Long literals: build in pieces to stay within the register window. */
        cerror(fs, n->line, n->col, "list literal too long (more than 200 items); build it with a loop");
        return;
    }
    int base = reserve(fs, cnt);
    expr_list(fs, n->list, base);
    setpos(fs, n);
    emit_abc(fs, n->kind == N_LIST ? OP_NEWLIST : OP_NEWTUPLE, dst, base, cnt);
    fs->freereg = save;
}

/* {k: v, ...}: pairs in consecutive registers, then one NEWDICT. */
static void expr_dict(fstate *fs, ad_node *n, int dst) {
    int save = fs->freereg;
    int cnt = n->list ? n->list->n : 0;
    if (cnt > 100) {
        cerror(fs, n->line, n->col, "dict literal too long (more than 100 entries); build it with assignments");
        return;
    }
    int base = reserve(fs, 2 * cnt);
    for (int i = 0; i < cnt; i++) {
        expr(fs, n->list->items[i]->a, base + 2 * i);
        expr(fs, n->list->items[i]->b, base + 2 * i + 1);
    }
    setpos(fs, n);
    emit_abc(fs, OP_NEWDICT, dst, base, cnt);
    fs->freereg = save;
}

static void enter_block(fstate *fs, int *nvars, int *freereg);
static void leave_block(fstate *fs, int nvars, int freereg);

/* Clause i of comprehension n and everything inside it; the innermost level
 * adds the element to the list or dict in register 'acc'. */
static void comp_clause(fstate *fs, ad_node *n, int i, int acc) {
    if (fs->C->failed) return;
    int save = fs->freereg;
    if (i == n->list->n) {
        if (n->kind == N_LISTCOMP) {
            int r = expr_any(fs, n->a);
            setpos(fs, n->a);
            emit_abc(fs, OP_APPEND, acc, r, 0);
        } else {
            int t = reserve(fs, 2);
            emit_abc(fs, OP_MOVE, t, acc, 0);
            expr(fs, n->a, t + 1);
            int v = expr_any(fs, n->b);
            setpos(fs, n->a);
            emit_abc(fs, OP_SETINDEX, t, 1, v);
        }
        fs->freereg = save;
        return;
    }
    ad_node *c = n->list->items[i];
    if (c->kind == N_COMPIF) {
        int r = expr_any(fs, c->a);
        fs->freereg = save;
        int skip = emit_jump(fs, OP_JMPIFNOT, r);
        comp_clause(fs, n, i + 1, acc);
        patch_here(fs, skip);
        return;
    }
    int nv, fr;
    int base = reserve(fs, 3);
    expr(fs, c->a, base);
    setpos(fs, c->a);
    emit_abc(fs, OP_ITERPREP, base, 0, 0);
    int top = fs->p->ncode;
    int next = emit_jump(fs, OP_ITERNEXT, base);
    enter_block(fs, &nv, &fr);
    int nvars = c->list->n;
    if (c->op == 1) {
        int vb = reserve(fs, nvars);
        emit_abc(fs, OP_UNPACK, vb, base + 2, nvars);
        for (int j = 0; j < nvars; j++) {
            ad_node *v = c->list->items[j];
            if (v->captured) emit_abc(fs, OP_NEWCELL, vb + j, vb + j, 0);
            add_local(fs, v->str, vb + j, v->captured);
        }
    } else {
        ad_node *v = c->list->items[0];
        int r = base + 2;
        if (v->captured) { r = reserve(fs, 1); emit_abc(fs, OP_NEWCELL, r, base + 2, 0); }
        add_local(fs, v->str, r, v->captured);
    }
    comp_clause(fs, n, i + 1, acc);
    leave_block(fs, nv, fr);
    int back = emit_jump(fs, OP_JMP, 0);
    patch_to(fs, back, top);
    patch_here(fs, next);
    fs->freereg = save;
}

static void expr_comp(fstate *fs, ad_node *n, int dst) {
    int save = fs->freereg;
    int acc = reserve(fs, 1);
    emit_abc(fs, n->kind == N_LISTCOMP ? OP_NEWLIST : OP_NEWDICT, acc, 0, 0);
    int nv, fr;
    enter_block(fs, &nv, &fr);
    comp_clause(fs, n, 0, acc);
    leave_block(fs, nv, fr);
    if (dst != acc) emit_abc(fs, OP_MOVE, dst, acc, 0);
    fs->freereg = save;
}

/* x.name for a name that is no tensor attribute: read by name at run time
 * (a dict's string key). */
static void expr_attr_named(fstate *fs, ad_node *n, int dst) {
    int save = fs->freereg;
    int a = expr_any(fs, n->a);
    int k = add_kstr(fs, n->str, n->len);
    setpos(fs, n);
    emit_abc(fs, OP_GETATTRK, dst, a, 0);
    emit_abx(fs, OP_EXTRAARG, 0, k);
    fs->freereg = save;
}

/* Whether 'name' is bound where fs compiles: a local of fs or of an
 * enclosing function, a function's own name, or a global some chunk declares. */
static bool name_bound(fstate *fs, const char *name) {
    for (fstate *f = fs; f; f = f->parent)
        if (find_local(f, name) >= 0 || (f->selfname && strcmp(f->selfname, name) == 0)) return true;
    int slot = ad_global_slot(fs->C->S, name, false);
    ad_globals *G = fs->C->S->globals;
    return slot >= 0 && (G->declared[slot] || G->defined[slot]);
}

/* 'math.pi', 'torch.sum' on an unbound 'math'/'torch': the habit of a module
 * prefix, reported at the prefix; true when reported. Other unknown
 * attributes are read by name at run time (dict keys, module names). */
static bool namespace_habit(fstate *fs, ad_node *n) {
    char msg[sizeof fs->C->err_msg];
    ad_node *obj = n->a;
    ad_chunk *ch = fs->C->chunk;
    if (obj && obj->kind == N_NAME && !name_bound(fs, obj->str) &&
        ad_hint_namespace(fs->C->S, ch->src, ch->len, obj->line, obj->col, obj->str, msg, sizeof msg)) {
        cerror(fs, obj->line, obj->col, "%s", msg);
        return true;
    }
    return false;
}

/* x.name = v for a name no value can be assigned (only tensor attributes can). */
static void attr_assign_error(fstate *fs, ad_node *n) {
    if (namespace_habit(fs, n)) return;
    char msg[sizeof fs->C->err_msg];
    ad_hint_attribute(fs->C->S, n->str, msg, sizeof msg);
    cerror(fs, n->line, n->col, "%s", msg);
}

/* Fewer than 'need' + AD_REG_PRESSURE registers left: an expression then
 * reuses its destination (always a temporary, never a local's home) for
 * partial results instead of taking a register per level, which changes the
 * bytecode only where the registers would run out. */
static bool under_pressure(const fstate *fs, int need) {
    return fs->freereg + need + AD_REG_PRESSURE > AD_MAX_REGS;
}

static bool is_plain_local(fstate *fs, const ad_node *n) {
    if (n->kind != N_NAME) return false;
    int li = find_local(fs, n->str);
    return li >= 0 && !fs->vars[li].cell;
}

/* A literal reads nothing, so when it is evaluated cannot be seen. */
static bool is_literal(const ad_node *n) {
    return n->kind == N_NUM || n->kind == N_STR || n->kind == N_TRUE || n->kind == N_FALSE || n->kind == N_NONE;
}

/* 'dst = a op b' for one node whose left operand is no binary operation
 * (the end of a left chain, or any node under register pressure). */
static void binop_one(fstate *fs, ad_node *n, int dst) {
    int save = fs->freereg;
    int a, b;
    if (!under_pressure(fs, 2)) {
        a = expr_any(fs, n->a);
        b = expr_any(fs, n->b);
    } else if (is_literal(n->a)) {
        /* b first, straight into dst: a right-nested chain such as
         * 1 + (1 + (1 + ...)) or 2 ** 2 ** ... holds no register per level */
        expr(fs, n->b, dst);
        b = dst;
        a = reserve(fs, 1);
        expr(fs, n->a, a);
    } else {
        a = expr_any(fs, n->a);
        if (is_plain_local(fs, n->b)) b = expr_any(fs, n->b);
        else { expr(fs, n->b, dst); b = dst; }
    }
    setpos(fs, n);
    emit_abc(fs, binop_code(n->op), dst, a, b);
    fs->freereg = save;
}

/* A binary operation whose left operand is one too: the left chain
 * ((a op b) op c) op ... is walked with a loop, not recursion, so its length
 * is bounded by neither the C stack nor AD_MAX_SYNTAX_DEPTH. When its
 * registers fit it gets the registers the recursive walk gave (level i's left
 * value in base + i), else every partial result goes to dst: O(1) registers. */
static void expr_binop(fstate *fs, ad_node *n, int dst) {
    int len = 1;
    for (ad_node *m = n->a; m->kind == N_BINOP; m = m->a) len++;
    if (len == 1) { binop_one(fs, n, dst); return; }
    ad_node *small[32], **spine = small;
    if (len > 32 && !(spine = ad_malloc(fs->C->S, (size_t)len * sizeof *spine))) { nomem(fs); return; }
    ad_node *m = n;
    for (int i = 0; i < len; i++, m = m->a) spine[i] = m;
    int save = fs->freereg;
    bool acc = under_pressure(fs, len + 1);
    /* spine[len-1] is the deepest node: its left operand starts the chain */
    int left;
    if (acc) {
        fs->freereg = save;
        if (is_plain_local(fs, spine[len - 1]->a)) left = expr_any(fs, spine[len - 1]->a);
        else { expr(fs, spine[len - 1]->a, dst); left = dst; }
    } else {
        fs->freereg = save + len - 1;
        if (fs->freereg > fs->p->nregs) fs->p->nregs = fs->freereg;
        left = expr_any(fs, spine[len - 1]->a);
    }
    for (int i = len - 1; i >= 0 && !fs->C->failed; i--) {
        int target = i == 0 || acc ? dst : save + i - 1;
        if (i < len - 1) fs->freereg = acc ? save : save + i + 1;
        int b = expr_any(fs, spine[i]->b);
        setpos(fs, spine[i]);
        emit_abc(fs, binop_code(spine[i]->op), target, left, b);
        left = target;
    }
    fs->freereg = save;
    if (spine != small) ad_free(fs->C->S, spine);
}

/* 'op dst, a, c' on the operand n->a, evaluated into a scratch register if it needs one. */
static void expr_unary(fstate *fs, ad_node *n, ad_opcode op, int c, int dst) {
    int save = fs->freereg;
    int a = under_pressure(fs, 1) && !is_plain_local(fs, n->a) ? (expr(fs, n->a, dst), dst) : expr_any(fs, n->a);
    setpos(fs, n);
    emit_abc(fs, op, dst, a, c);
    fs->freereg = save;
}

static void expr_inner(fstate *fs, ad_node *n, int dst);

static void expr(fstate *fs, ad_node *n, int dst) {
    if (fs->C->failed) return;
    if (++fs->nest > AD_MAX_SYNTAX_DEPTH) {
        cerror(fs, n->line, n->col, "expression nested too deeply (more than %d levels)", AD_MAX_SYNTAX_DEPTH);
        fs->nest--;
        return;
    }
    expr_inner(fs, n, dst);
    fs->nest--;
}

static void expr_inner(fstate *fs, ad_node *n, int dst) {
    int sl = fs->line, sc = fs->col;
    setpos(fs, n);
    switch (n->kind) {
    case N_NUM:
        if (n->is_int && n->num >= -32767 && n->num <= 32768 && n->num == floor(n->num))
            emit_abx(fs, OP_LOADINT, dst, (int)n->num + 32767);
        else
            emit_abx(fs, OP_LOADK, dst, add_k(fs, n->is_int ? ad_int(n->num) : ad_num(n->num)));
        break;
    case N_STR: emit_abx(fs, OP_LOADK, dst, add_kstr(fs, n->str, n->len)); break;
    case N_TRUE: emit_abc(fs, OP_LOADTRUE, dst, 0, 0); break;
    case N_FALSE: emit_abc(fs, OP_LOADFALSE, dst, 0, 0); break;
    case N_NONE: emit_abc(fs, OP_LOADNONE, dst, 0, 0); break;
    case N_ELLIPSIS: { ad_value e; e.t = AD_TELLIPSIS; e.u.n = 0; emit_abx(fs, OP_LOADK, dst, add_k(fs, e)); break; }
    case N_NAME: load_var(fs, resolve(fs, n->str, false), dst); break;
    case N_LIST: case N_TUPLE: expr_seq(fs, n, dst); break;
    case N_BINOP: expr_binop(fs, n, dst); break;
    case N_UNOP: {
        int save = fs->freereg;
        int a = under_pressure(fs, 1) && !is_plain_local(fs, n->a) ? (expr(fs, n->a, dst), dst) : expr_any(fs, n->a);
        setpos(fs, n);
        if (n->op == TK_MINUS) emit_abc(fs, OP_UNM, dst, a, 0);
        else if (a != dst) emit_abc(fs, OP_MOVE, dst, a, 0);
        fs->freereg = save;
        break;
    }
    case N_NOT: expr_unary(fs, n, OP_NOT, 0, dst); break;
    case N_AND: case N_OR: {
        expr(fs, n->a, dst);
        int j = emit_jump(fs, n->kind == N_AND ? OP_JMPIFNOT : OP_JMPIF, dst);
        expr(fs, n->b, dst);
        patch_here(fs, j);
        break;
    }
    case N_CALL: case N_METHOD: expr_call(fs, n, dst); break;
    case N_INDEX: expr_index(fs, n, dst); break;
    case N_DICT: expr_dict(fs, n, dst); break;
    case N_LISTCOMP: case N_DICTCOMP: expr_comp(fs, n, dst); break;
    case N_ATTR: {
        int attr = ad_attr_lookup(n->str);
        if (attr < 0) {
            if (!namespace_habit(fs, n)) expr_attr_named(fs, n, dst);
            break;
        }
        expr_unary(fs, n, OP_GETATTR, attr, dst);
        break;
    }
    case N_LAMBDA: compile_function(fs, NULL, "<lambda>", n->list, n->b, dst); break;
    case N_KWARG: cerror(fs, n->line, n->col, "keyword argument outside a call"); break;
    case N_SLICE: cerror(fs, n->line, n->col, "a slice is only allowed inside [ ]"); break;
    default: cerror(fs, n->line, n->col, "not an expression"); break;
    }
    fs->line = sl; fs->col = sc;
}

/* ---- statements ---- */

static bool at_global_scope(fstate *fs) { return fs->is_main && fs->depth == 0; }

static void declare_global(fstate *fs, const char *name, int *slot) {
    ad_state *S = fs->C->S;
    char gbuf[GNAME_MAX];
    name = global_name(fs, name, gbuf);
    *slot = fs->C->library ? ad_global_slot(S, name, true) : ad_global_user_slot(S, name, true, true);
    if (*slot < 0) { nomem(fs); *slot = 0; return; }
    if (*slot > AD_MAXBX) { cerror(fs, fs->line, fs->col, "too many global names"); *slot = 0; return; }
    fs->C->S->globals->declared[*slot] = true;
}

/* Binds 'name' to the value now in register 'reg' (which becomes the local's home). */
static void bind_new(fstate *fs, ad_node *decl, const char *name, int reg) {
    if (at_global_scope(fs)) {
        int slot;
        declare_global(fs, name, &slot);
        emit_abx(fs, OP_SETGLOBAL, reg, slot);
        return;
    }
    if (decl->captured) emit_abc(fs, OP_NEWCELL, reg, reg, 0);
    add_local(fs, name, reg, decl->captured);
}

static void store_var(fstate *fs, ad_node *target, int src) {
    /* An undefined target is reported at its name, not at the '='. */
    int sl = fs->line, sc = fs->col;
    setpos(fs, target);
    vref v = resolve(fs, target->str, false);
    fs->line = sl; fs->col = sc;
    switch (v.kind) {
    case V_LOCAL: if (v.index != src) emit_abc(fs, OP_MOVE, v.index, src, 0); break;
    case V_CELL: emit_abc(fs, OP_SETCELL, v.index, src, 0); break;
    case V_UPVAL: emit_abc(fs, OP_SETUPVAL, src, v.index, 0); break;
    case V_SELF: cerror(fs, target->line, target->col, "cannot assign to function '%s' inside its own body", target->str); break;
    case V_GLOBAL: emit_abx(fs, OP_SETGLOBAL, src, v.index); break;
    case V_LIBGLOBAL: {
        /* Assigning a library name binds the script's own (as a let would):
         * the library keeps its value. */
        int slot;
        declare_global(fs, target->str, &slot);
        emit_abx(fs, OP_SETGLOBAL, src, slot);
        break;
    }
    }
}

static void stmt_assign(fstate *fs, ad_node *n) {
    ad_node *t = n->a;
    int save = fs->freereg;
    if (t->kind == N_NAME) {
        int r = reserve(fs, 1);
        if (n->op) {
            expr(fs, t, r);
            int b = expr_any(fs, n->b);
            setpos(fs, n);
            emit_abc(fs, OP_INPLACE, r, b, binop_code(n->op));
        } else {
            expr(fs, n->b, r);
        }
        setpos(fs, n);
        store_var(fs, t, r);
    } else if (t->kind == N_INDEX) {
        int base = reserve(fs, 1);
        expr_index_operands(fs, t, base);
        int v = reserve(fs, 1);
        if (n->op) {
            setpos(fs, t);
            emit_abc(fs, OP_INDEX, v, base, t->list->n);
            int b = expr_any(fs, n->b);
            setpos(fs, n);
            emit_abc(fs, OP_INPLACE, v, b, binop_code(n->op));
        } else {
            expr(fs, n->b, v);
        }
        setpos(fs, n);
        emit_abc(fs, OP_SETINDEX, base, t->list->n, v);
    } else if (t->kind == N_ATTR) {
        int attr = ad_attr_lookup(t->str);
        if (attr < 0) { attr_assign_error(fs, t); return; }
        int obj = reserve(fs, 1);
        expr(fs, t->a, obj);
        int v = reserve(fs, 1);
        if (n->op) {
            emit_abc(fs, OP_GETATTR, v, obj, attr);
            int b = expr_any(fs, n->b);
            setpos(fs, n);
            emit_abc(fs, OP_INPLACE, v, b, binop_code(n->op));
        } else {
            expr(fs, n->b, v);
        }
        setpos(fs, n);
        emit_abc(fs, OP_SETATTR, obj, attr, v);
    } else {
        cerror(fs, t->line, t->col, "cannot assign to this expression");
    }
    fs->freereg = save;
}

/* a, b = EXPR (also t[i], x.grad as targets): the right side is evaluated
 * whole, then unpacked, then stored left to right, so a, b = b, a swaps. */
static void stmt_assign_many(fstate *fs, ad_node *n) {
    ad_nlist *ts = n->a->list;
    int save = fs->freereg;
    int src = reserve(fs, 1);
    expr(fs, n->b, src);
    int base = reserve(fs, ts->n);
    setpos(fs, n);
    emit_abc(fs, OP_UNPACK, base, src, ts->n);
    for (int i = 0; i < ts->n && !fs->C->failed; i++) {
        ad_node *t = ts->items[i];
        int s2 = fs->freereg;
        if (t->kind == N_NAME) {
            setpos(fs, t);
            store_var(fs, t, base + i);
        } else if (t->kind == N_INDEX) {
            int ib = reserve(fs, 1);
            expr_index_operands(fs, t, ib);
            setpos(fs, t);
            emit_abc(fs, OP_SETINDEX, ib, t->list->n, base + i);
        } else if (t->kind == N_ATTR && ad_attr_lookup(t->str) >= 0) {
            int obj = reserve(fs, 1);
            expr(fs, t->a, obj);
            setpos(fs, t);
            emit_abc(fs, OP_SETATTR, obj, ad_attr_lookup(t->str), base + i);
        } else {
            cerror(fs, t->line, t->col, "cannot assign to this expression");
        }
        fs->freereg = s2;
    }
    fs->freereg = save;
}

static void enter_block(fstate *fs, int *nvars, int *freereg) { *nvars = fs->nvars; *freereg = fs->freereg; fs->depth++; }
static void leave_block(fstate *fs, int nvars, int freereg) { fs->nvars = nvars; fs->freereg = freereg; fs->depth--; }

static void block(fstate *fs, ad_node *b) {
    int nv, fr;
    enter_block(fs, &nv, &fr);
    for (int i = 0; b->list && i < b->list->n && !fs->C->failed; i++) stmt(fs, b->list->items[i]);
    leave_block(fs, nv, fr);
}

static bool add_jump(fstate *fs, int **arr, int *n, int *cap, int at) {
    if (!grow(fs, (void **)arr, cap, *n, sizeof(int))) return false;
    (*arr)[(*n)++] = at;
    return true;
}

static void loop_begin(fstate *fs, loopinfo *L) {
    memset(L, 0, sizeof *L);
    L->outer = fs->loop;
    L->grad_depth = fs->ngrad;
    fs->loop = L;
}

static void loop_end(fstate *fs, loopinfo *L, int cont_target, int break_target) {
    for (int i = 0; i < L->nconts; i++) patch_to(fs, L->conts[i], cont_target);
    for (int i = 0; i < L->nbreaks; i++) patch_to(fs, L->breaks[i], break_target);
    ad_free(fs->C->S, L->conts);
    ad_free(fs->C->S, L->breaks);
    fs->loop = L->outer;
}

/* Leaving no_grad blocks early (break, continue, return) restores grad mode. */
static void restore_grad_to(fstate *fs, int depth) {
    for (int i = fs->ngrad - 1; i >= depth; i--)
        emit_abc(fs, fs->grad_is_anomaly[i] ? OP_ANOMALYRESTORE : OP_GRADRESTORE, fs->grad_regs[i], 0, 0);
}

static void stmt_for(fstate *fs, ad_node *n) {
    int nv, fr;
    enter_block(fs, &nv, &fr);
    loopinfo L;
    ad_node *it = n->a;
    bool is_range = false;
    if (it->kind == N_CALL && it->a->kind == N_NAME && strcmp(it->a->str, "range") == 0 &&
        it->list && it->list->n >= 1 && it->list->n <= 3 && n->list->n == 1 && n->op == 0) {
        is_range = find_local(fs, "range") < 0;
        for (int i = 0; i < it->list->n; i++) if (it->list->items[i]->kind == N_KWARG) is_range = false;
    }
    ad_node *var = n->list->items[0];
    if (is_range) {
        int base = reserve(fs, 4);
        ad_nlist *a = it->list;
        if (a->n == 1) { emit_abx(fs, OP_LOADINT, base, 32767); expr(fs, a->items[0], base + 1); }
        else { expr(fs, a->items[0], base); expr(fs, a->items[1], base + 1); }
        if (a->n == 3) expr(fs, a->items[2], base + 2);
        else emit_abx(fs, OP_LOADINT, base + 2, 32767 + 1);
        setpos(fs, it);
        int prep = emit_jump(fs, OP_FORPREP, base);
        int body = fs->p->ncode;
        loop_begin(fs, &L);
        int nv2, fr2;
        enter_block(fs, &nv2, &fr2);
        if (var->captured) { int c = reserve(fs, 1); emit_abc(fs, OP_NEWCELL, c, base + 3, 0); add_local(fs, var->str, c, true); }
        else add_local(fs, var->str, base + 3, false);
        block(fs, n->b);
        leave_block(fs, nv2, fr2);
        int cont = fs->p->ncode;
        setpos(fs, it);
        int back = emit_jump(fs, OP_FORLOOP, base);
        patch_to(fs, back, body);
        patch_here(fs, prep);
        loop_end(fs, &L, cont, fs->p->ncode);
    } else {
        int nvars = n->list->n;
        int base = reserve(fs, 3);
        expr(fs, it, base);
        setpos(fs, it);
        emit_abc(fs, OP_ITERPREP, base, 0, 0);
        int top = fs->p->ncode;
        int next = emit_jump(fs, OP_ITERNEXT, base);
        loop_begin(fs, &L);
        int nv2, fr2;
        enter_block(fs, &nv2, &fr2);
        if (n->op == 1) {
            int vb = reserve(fs, nvars);
            emit_abc(fs, OP_UNPACK, vb, base + 2, nvars);
            for (int i = 0; i < nvars; i++) {
                ad_node *v = n->list->items[i];
                if (v->captured) emit_abc(fs, OP_NEWCELL, vb + i, vb + i, 0);
                add_local(fs, v->str, vb + i, v->captured);
            }
        } else if (var->captured) {
            int c = reserve(fs, 1);
            emit_abc(fs, OP_NEWCELL, c, base + 2, 0);
            add_local(fs, var->str, c, true);
        } else {
            add_local(fs, var->str, base + 2, false);
        }
        block(fs, n->b);
        leave_block(fs, nv2, fr2);
        int back = emit_jump(fs, OP_JMP, 0);
        patch_to(fs, back, top);
        patch_here(fs, next);
        loop_end(fs, &L, top, fs->p->ncode);
        /* Normal exit and break both pass here: release the walked value now
         * (a progress() bar ends its line when its wrapper is freed). */
        emit_abc(fs, OP_LOADNONE, base, 0, 0);
    }
    leave_block(fs, nv, fr);
}

static char *cdup(fstate *fs, const char *s) {
    size_t n = strlen(s);
    char *d = ad_malloc(fs->C->S, n + 1);
    if (!d) { nomem(fs); return NULL; }
    memcpy(d, s, n + 1);
    return d;
}

/* The run-time description of an op definition, owned by the prototype. */
static int add_optemplate(fstate *fs, const ad_node *n) {
    const ad_opinfo *in = n->info;
    ad_state *S = fs->C->S;
    ad_optemplate *t = ad_calloc(S, 1, sizeof *t);
    if (!t) { nomem(fs); return -1; }
    t->name = cdup(fs, n->str);
    t->nparams = in->nparams;
    t->pnames = ad_calloc(S, (size_t)(in->nparams ? in->nparams : 1), sizeof(char *));
    bool ok = t->name && t->pnames;
    for (int i = 0; ok && i < in->nparams; i++) ok = (t->pnames[i] = cdup(fs, in->params[i]->str)) != NULL;
    t->ndefaults = in->ndefaults;
    t->sizes_param = in->sizes_param;
    memcpy(t->kind, in->kind, sizeof t->kind);
    for (int i = 0; ok && i < in->nparams; i++) if (in->notimpl[i]) ok = (t->notimpl[i] = cdup(fs, in->notimpl[i])) != NULL;
    t->nout = in->nout;
    if (ok && in->outnames) {
        t->outnames = ad_calloc(S, (size_t)in->nout, sizeof(char *));
        ok = t->outnames != NULL;
        for (int k = 0; ok && k < in->nout; k++) ok = (t->outnames[k] = cdup(fs, in->outnames[k])) != NULL;
    }
    memcpy(t->out_diff, in->out_diff, sizeof t->out_diff);
    t->has_formulas = in->has_formulas;
    memcpy(t->vjp_reads, in->vjp_reads, sizeof t->vjp_reads);
    t->vjp_reads_result = in->vjp_reads_result;
    t->nvjp = in->nvjp;
    memcpy(t->vjp_nnames, in->vjp_nnames, sizeof t->vjp_nnames);
    memcpy(t->vjp_params, in->vjp_params, sizeof t->vjp_params);
    t->jvp_kind = in->jvp_kind;
    t->njvp = in->njvp;
    ad_proto *p = fs->p;
    ad_optemplate **arr = ok ? ad_realloc(S, p->optemplates, (size_t)(p->noptemplates + 1) * sizeof *arr) : NULL;
    if (!arr) { nomem(fs); ad_optemplate_free(S, t); return -1; } /* a repeated report is ignored */
    p->optemplates = arr;
    p->optemplates[p->noptemplates] = t;
    return p->noptemplates++;
}

static void stmt_opdef(fstate *fs, ad_node *n) {
    const ad_opinfo *in = n->info;
    int save = fs->freereg;
    int nregs = 1 + 1 + in->nvjp + in->njvp + in->ndefaults;
    int base = reserve(fs, nregs);
    int r = base + 1;
    expr(fs, in->forward, r++);
    for (int i = 0; i < in->nvjp; i++) expr(fs, in->vjp[i], r++);
    for (int i = 0; i < in->njvp; i++) expr(fs, in->jvp[i], r++);
    for (int i = 0; i < in->nparams; i++) if (in->params[i]->a) expr(fs, in->params[i]->a, r++);
    if (fs->C->failed) return;
    int idx = add_optemplate(fs, n);
    if (idx < 0) return;
    setpos(fs, n);
    emit_abx(fs, OP_NEWOP, base, idx);
    if (at_global_scope(fs)) {
        int slot;
        declare_global(fs, n->str, &slot);
        emit_abx(fs, OP_SETGLOBAL, base, slot);
        fs->freereg = save;
    } else {
        fs->freereg = base + 1;
        bind_new(fs, n, n->str, base);
    }
}

static void stmt_inner(fstate *fs, ad_node *n);

static void stmt(fstate *fs, ad_node *n) {
    if (fs->C->failed) return;
    if (++fs->nest > AD_MAX_SYNTAX_DEPTH) {
        cerror(fs, n->line, n->col, "blocks nested too deeply (more than %d levels)", AD_MAX_SYNTAX_DEPTH);
        fs->nest--;
        return;
    }
    stmt_inner(fs, n);
    fs->nest--;
}

static void stmt_inner(fstate *fs, ad_node *n) {
    setpos(fs, n);
    int save = fs->freereg;
    switch (n->kind) {
    case N_LET: {
        int r = reserve(fs, 1);
        expr(fs, n->a, r);
        setpos(fs, n);
        bind_new(fs, n, n->str, r);
        if (at_global_scope(fs)) fs->freereg = save;
        return;
    }
    case N_LETDESTR: {
        int cnt = n->list->n;
        int src = reserve(fs, 1);
        expr(fs, n->a, src);
        int base = reserve(fs, cnt);
        setpos(fs, n);
        emit_abc(fs, OP_UNPACK, base, src, cnt);
        if (!at_global_scope(fs)) {
            /* Move the items down over the source temporary so locals stay packed. */
            for (int i = 0; i < cnt; i++) emit_abc(fs, OP_MOVE, src + i, base + i, 0);
            fs->freereg = src + cnt;
        }
        for (int i = 0; i < cnt; i++) {
            ad_node *v = n->list->items[i];
            bind_new(fs, v, v->str, at_global_scope(fs) ? base + i : src + i);
        }
        if (at_global_scope(fs)) fs->freereg = save;
        return;
    }
    case N_FNDEF: {
        if (at_global_scope(fs)) {
            int slot;
            declare_global(fs, n->str, &slot);
            int r = reserve(fs, 1);
            compile_function(fs, n, n->str, n->list, n->b, r);
            emit_abx(fs, OP_SETGLOBAL, r, slot);
            fs->freereg = save;
        } else {
            int r = reserve(fs, 1);
            compile_function(fs, n, n->str, n->list, n->b, r);
            bind_new(fs, n, n->str, r);
        }
        return;
    }
    case N_ASSIGN:
        if (n->a->kind == N_TUPLE && n->op == 0) stmt_assign_many(fs, n);
        else stmt_assign(fs, n);
        break;
    case N_EXPRSTMT: {
        int r = reserve(fs, 1);
        expr(fs, n->a, r);
        if (fs->C->repl && at_global_scope(fs)) emit_abc(fs, OP_ECHO, r, 0, 0);
        break;
    }
    case N_RETURN: {
        if (fs->is_main && fs->parent == NULL && false) break;
        int r = 0;
        if (n->a) { r = reserve(fs, 1); expr(fs, n->a, r); }
        setpos(fs, n);
        restore_grad_to(fs, 0);
        emit_abc(fs, OP_RETURN, r, n->a ? 1 : 0, 0);
        break;
    }
    case N_IF: {
        int save2 = fs->freereg;
        int c = expr_any(fs, n->a);
        fs->freereg = save2;
        int jf = emit_jump(fs, OP_JMPIFNOT, c);
        block(fs, n->b);
        if (n->c) {
            int je = emit_jump(fs, OP_JMP, 0);
            patch_here(fs, jf);
            if (n->c->kind == N_BLOCK) block(fs, n->c); else stmt(fs, n->c);
            patch_here(fs, je);
        } else {
            patch_here(fs, jf);
        }
        break;
    }
    case N_WHILE: {
        loopinfo L;
        int top = fs->p->ncode;
        int save2 = fs->freereg;
        int c = expr_any(fs, n->a);
        fs->freereg = save2;
        int jf = emit_jump(fs, OP_JMPIFNOT, c);
        loop_begin(fs, &L);
        block(fs, n->b);
        int back = emit_jump(fs, OP_JMP, 0);
        patch_to(fs, back, top);
        patch_here(fs, jf);
        loop_end(fs, &L, top, fs->p->ncode);
        break;
    }
    case N_FOR: stmt_for(fs, n); break;
    case N_BREAK: case N_CONTINUE: {
        loopinfo *L = fs->loop;
        if (!L) { cerror(fs, n->line, n->col, "'%s' outside a loop", n->kind == N_BREAK ? "break" : "continue"); break; }
        restore_grad_to(fs, L->grad_depth);
        int j = emit_jump(fs, OP_JMP, 0);
        if (n->kind == N_BREAK) add_jump(fs, &L->breaks, &L->nbreaks, &L->capbreaks, j);
        else add_jump(fs, &L->conts, &L->nconts, &L->capconts, j);
        break;
    }
    case N_NOGRAD: case N_ANOMALY: {
        bool anomaly = n->kind == N_ANOMALY;
        if (fs->ngrad >= 64) { cerror(fs, n->line, n->col, "no_grad/detect_anomaly blocks nested too deeply"); break; }
        int r = reserve(fs, 1);
        emit_abc(fs, anomaly ? OP_ANOMALYON : OP_GRADOFF, r, 0, 0);
        fs->grad_is_anomaly[fs->ngrad] = anomaly;
        fs->grad_regs[fs->ngrad++] = r;
        block(fs, n->b);
        fs->ngrad--;
        emit_abc(fs, anomaly ? OP_ANOMALYRESTORE : OP_GRADRESTORE, r, 0, 0);
        break;
    }
    case N_OPDEF: stmt_opdef(fs, n); return;
    case N_IMPORT: {
        int r = reserve(fs, 1);
        emit_abx(fs, OP_LOADK, r, add_kstr(fs, n->str, n->len));
        emit_abc(fs, OP_IMPORT, r, 0, 0);
        bind_new(fs, n->a, n->a->str, r);
        if (at_global_scope(fs)) fs->freereg = save;
        return;
    }
    case N_BLOCK: block(fs, n); break;
    default: cerror(fs, n->line, n->col, "not a statement"); break;
    }
    fs->freereg = save;
}

/* ---- functions ---- */

static ad_proto *proto_new(ad_state *S, ad_chunk *chunk, const char *name, int line) {
    ad_proto *p = ad_calloc(S, 1, sizeof *p);
    if (!p) return NULL;
    p->refcount = 1;
    size_t n = strlen(name);
    p->name = ad_malloc(S, n + 1);
    if (!p->name) { ad_free(S, p); return NULL; }
    memcpy(p->name, name, n + 1);
    p->chunk = chunk;
    chunk->refcount++;
    p->line = line;
    return p;
}

static void fs_free(fstate *fs) {
    ad_free(fs->C->S, fs->vars);
    ad_free(fs->C->S, fs->upnames);
}

static void compile_function(fstate *fs, ad_node *fn, const char *name, ad_nlist *params, ad_node *body, int dst) {
    cstate *C = fs->C;
    ad_state *S = C->S;
    int np = params ? params->n : 0;
    if (np > 200) { cerror(fs, fs->line, fs->col, "too many parameters"); return; }
    /* Defaults are evaluated where the function is defined, into R[base+1...]. */
    int save = fs->freereg;
    int base = reserve(fs, 1);
    int nd = 0;
    bool seen_default = false;
    for (int i = 0; i < np; i++) {
        ad_node *p = params->items[i];
        if (p->op == TK_STAR) { cerror(fs, p->line, p->col, "'*%s': only an op's parameter may take sizes as separate numbers", p->str); return; }
        if (p->a) { seen_default = true; int r = reserve(fs, 1); expr(fs, p->a, r); nd++; }
        else if (seen_default) { cerror(fs, p->line, p->col, "parameter '%s' without a default follows one with a default", p->str); return; }
        for (int j = 0; j < i; j++)
            if (strcmp(params->items[j]->str, p->str) == 0) { cerror(fs, p->line, p->col, "duplicate parameter '%s'", p->str); return; }
    }
    if (C->failed) return;
    fstate child;
    memset(&child, 0, sizeof child);
    child.parent = fs;
    child.C = C;
    child.line = fs->line; child.col = fs->col;
    child.depth = 1;
    child.selfname = (fn && fn->kind == N_FNDEF) ? fn->str : NULL;
    child.p = proto_new(S, C->chunk, name, fs->line);
    if (!child.p) { nomem(fs); return; }
    ad_proto *p = child.p;
    p->nparams = np;
    p->ndefaults = nd;
    p->pnames = ad_calloc(S, (size_t)(np ? np : 1), sizeof(char *));
    if (!p->pnames) { nomem(fs); ad_proto_decref(S, p); return; }
    for (int i = 0; i < np; i++) {
        size_t len = strlen(params->items[i]->str);
        p->pnames[i] = ad_malloc(S, len + 1);
        if (!p->pnames[i]) { nomem(fs); ad_proto_decref(S, p); return; }
        memcpy(p->pnames[i], params->items[i]->str, len + 1);
    }
    reserve(&child, np);
    for (int i = 0; i < np; i++) {
        ad_node *pn = params->items[i];
        if (pn->captured) emit_abc(&child, OP_NEWCELL, i, i, 0);
        add_local(&child, pn->str, i, pn->captured);
    }
    for (int i = 0; body->list && i < body->list->n && !C->failed; i++) stmt(&child, body->list->items[i]);
    emit_abc(&child, OP_RETURN, 0, 0, 0);
    fs_free(&child);
    if (C->failed) { ad_proto_decref(S, p); return; }
    /* Attach to the parent. */
    ad_proto *pp = fs->p;
    if (pp->nprotos >= AD_MAXBX) { cerror(fs, fs->line, fs->col, "too many functions"); ad_proto_decref(S, p); return; }
    if (!grow(fs, (void **)&pp->protos, &fs->capprotos, pp->nprotos, sizeof(ad_proto *))) { ad_proto_decref(S, p); return; }
    int idx = pp->nprotos;
    pp->protos[pp->nprotos++] = p;
    emit_abx(fs, OP_CLOSURE, base, idx);
    for (int i = 0; i < p->nupvals; i++)
        emit_abx(fs, OP_EXTRAARG, p->upvals[i].instack, p->upvals[i].index);
    if (dst != base) emit_abc(fs, OP_MOVE, dst, base, 0);
    fs->freereg = save;
}

/* ---- entry points ---- */

void ad_format_location(ad_buf *b, const char *name, const char *src, size_t len,
                        int line, int col, const char *msg) {
    ad_buf_printf(b, "%s:%d:%d: error: %s\n", name, line, col, msg);
    if (!src || line < 1) return;
    const char *p = src, *end = src + len;
    for (int l = 1; l < line && p < end; l++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) { p = end; break; }
        p = nl + 1;
    }
    if (p >= end && line > 1) return;
    const char *e = memchr(p, '\n', (size_t)(end - p));
    if (!e) e = end;
    if (e > p && e[-1] == '\r') e--;
    ad_buf_add(b, p, (size_t)(e - p));
    ad_buf_puts(b, "\n");
    for (int i = 1; i < col && p + i - 1 < e; i++) ad_buf_add(b, p[i - 1] == '\t' ? "\t" : " ", 1);
    ad_buf_puts(b, "^\n");
}

static void set_compile_error(ad_state *S, const char *name, const char *src, size_t len, int line, int col, const char *msg) {
    ad_buf b;
    ad_buf_init(&b, S);
    ad_format_location(&b, name, src, len, line, col, msg);
    if (b.failed) ad_nomem(S);
    else ad_vm_set_errmsg(S, ADDSL_ECOMPILE, b.data);
    ad_buf_free(&b);
}

static ad_chunk *chunk_new(ad_state *S, const char *src, size_t len, const char *name) {
    ad_chunk *c = ad_calloc(S, 1, sizeof *c);
    if (!c) return NULL;
    c->refcount = 1;
    size_t nl = strlen(name);
    c->name = ad_malloc(S, nl + 1);
    c->src = ad_malloc(S, len + 1);
    if (!c->name || !c->src) { ad_free(S, c->name); ad_free(S, c->src); ad_free(S, c); return NULL; }
    memcpy(c->name, name, nl + 1);
    memcpy(c->src, src, len);
    c->src[len] = '\0';
    c->len = len;
    return c;
}

/* Reports the first undefined name in source order ('torch' before the
 * method 'sum' of 'torch.sum(x)', which the compiler resolves first). */
static bool check_globals(cstate *C) {
    ad_globals *G = C->S->globals;
    gref *first = NULL;
    for (int i = 0; i < C->ngrefs; i++) {
        gref *g = &C->grefs[i];
        if (G->declared[g->slot] || G->defined[g->slot]) continue;
        if (!first || g->line < first->line || (g->line == first->line && g->col < first->col)) first = g;
    }
    if (!first) return true;
    C->failed = true;
    C->err_line = first->line; C->err_col = first->col;
    ad_hint_undefined(C->S, C->chunk->src, C->chunk->len, first->line, first->col, G->names[first->slot],
                      first->method, &first->near, C->err_msg, sizeof C->err_msg);
    return false;
}

/* A module's top-level names (let, fn, op, import), entered before any code
 * is compiled so uses ahead of the definition find the module's own slot. */
static bool collect_module_names(ad_state *S, ad_node *root, ad_dict *names) {
    for (int i = 0; root->list && i < root->list->n; i++) {
        ad_node *n = root->list->items[i];
        const char *one = NULL;
        switch (n->kind) {
        case N_LET: case N_FNDEF: case N_OPDEF: one = n->str; break;
        case N_IMPORT: one = n->a ? n->a->str : NULL; break;
        case N_LETDESTR:
            for (int j = 0; j < n->list->n; j++)
                if (ad_dict_set_str(S, names, n->list->items[j]->str, ad_int(-1))) return false;
            break;
        default: break;
        }
        if (one && ad_dict_set_str(S, names, one, ad_int(-1))) return false;
    }
    return true;
}

static void fill_module_slots(ad_state *S, const char *key, ad_dict *names) {
    int64_t it = 0;
    ad_value k, v;
    char buf[GNAME_MAX];
    while (ad_dict_next(names, &it, &k, &v)) {
        snprintf(buf, sizeof buf, "%s\x01%s", k.u.s->data, key);
        ad_value *slot = ad_dict_get_str(names, k.u.s->data);
        *slot = ad_int(ad_global_slot(S, buf, false));
    }
}

static ad_proto *compile_chunk(ad_state *S, const char *src, size_t len, const char *name, bool repl, bool library,
                               const char *modkey, ad_dict *modnames) {
    ad_arena arena;
    ad_arena_init(&arena, S);
    ad_parse P;
    memset(&P, 0, sizeof P);
    P.arena = &arena;
    if (!ad_parse_source(&P, src, len) || arena.failed) {
        if (arena.failed || strcmp(P.err_msg, "out of memory") == 0) ad_nomem(S);
        else set_compile_error(S, name, src, len, P.err_line, P.err_col, P.err_msg);
        ad_arena_free(&arena);
        return NULL;
    }
    ad_op_error operr;
    /* A failed arena hands out a dummy node, so desugaring can "succeed". */
    if (!ad_desugar_ops(&arena, P.root, &operr) || arena.failed) {
        if (arena.failed) ad_nomem(S);
        else set_compile_error(S, name, src, len, operr.line, operr.col, operr.msg);
        ad_arena_free(&arena);
        return NULL;
    }
    resolver R;
    memset(&R, 0, sizeof R);
    R.S = S;
    r_node(&R, P.root);
    ad_free(S, R.b);
    if (R.failed || (modkey && !collect_module_names(S, P.root, modnames))) {
        ad_free(S, R.imports); ad_arena_free(&arena); ad_nomem(S); return NULL;
    }

    ad_chunk *chunk = chunk_new(S, src, len, name);
    if (!chunk) { ad_free(S, R.imports); ad_arena_free(&arena); return NULL; }
    chunk->library = library;
    cstate C;
    memset(&C, 0, sizeof C);
    C.S = S; C.chunk = chunk; C.repl = repl; C.library = library;
    C.modkey = modkey; C.modnames = modnames;
    C.imports = R.imports; C.nimports = R.nimports;
    fstate fs;
    memset(&fs, 0, sizeof fs);
    fs.C = &C;
    fs.is_main = true;
    fs.line = 1; fs.col = 1;
    fs.p = proto_new(S, chunk, "<main>", 1);
    ad_chunk_decref(S, chunk);
    if (!fs.p) { ad_free(S, R.imports); ad_arena_free(&arena); return NULL; }
    /* The top-level block's statements run at global scope (depth 0). */
    for (int i = 0; P.root->list && i < P.root->list->n && !C.failed; i++) stmt(&fs, P.root->list->items[i]);
    emit_abc(&fs, OP_RETURN, 0, 0, 0);
    if (!C.failed) check_globals(&C);
    fs_free(&fs);
    ad_free(S, C.grefs);
    ad_free(S, R.imports);
    ad_arena_free(&arena);
    if (!C.failed && modkey) fill_module_slots(S, modkey, modnames);
    if (C.failed) {
        if (strcmp(C.err_msg, "out of memory") == 0) ad_nomem(S);
        else set_compile_error(S, name, src, len, C.err_line, C.err_col, C.err_msg);
        ad_proto_decref(S, fs.p);
        return NULL;
    }
    return fs.p;
}

/* A script's or module's text, its BOM dropped and its line endings made LF
 * first (vm/source.c): the lexer, the error lines and the hints then agree. */
static ad_proto *compile_text(ad_state *S, const char *src, size_t len, const char *name, bool repl,
                              const char *modkey, ad_dict *modnames) {
    char *owned;
    if (ad_source_normalize(S, &src, &len, &owned)) { ad_nomem(S); return NULL; }
    ad_proto *p = compile_chunk(S, src, len, name, repl, false, modkey, modnames);
    ad_free(S, owned);
    return p;
}

ad_proto *ad_compile(ad_state *S, const char *src, size_t len, const char *name, bool repl) {
    return compile_text(S, src, len, name, repl, NULL, NULL);
}

ad_proto *ad_compile_module(ad_state *S, const char *src, size_t len, const char *name,
                            const char *key, ad_dict *names) {
    return compile_text(S, src, len, name, false, key, names);
}

ad_proto *ad_compile_library(ad_state *S, const char *src, size_t len, const char *name) {
    return compile_chunk(S, src, len, name, false, true, NULL, NULL);
}

int ad_compile_incomplete(const char *src, size_t len) {
    ad_lexer lx;
    ad_lex_init(&lx, src, len);
    ad_token t;
    for (;;) {
        int type = ad_lex_next(&lx, &t);
        if (type < 0) return lx.error && strcmp(lx.error, "unterminated string") == 0 ? 0 : 0;
        if (type == 0) break;
    }
    return lx.depth > 0 && !lx.mismatched;
}
