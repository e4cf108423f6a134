/* kernel.c: the per-state kernel registry: names to C functions, with one
 * libffi call interface interned per distinct signature string. */
#include "kernel_registry.h"
#include "kernel_ids.h"

#include <dlfcn.h>
#include <string.h>

#include <ffi.h>

#include "state.h"
#include "value.h"

/* A parsed signature. Heap-allocated one by one because the cif keeps a
 * pointer to 'atypes', so the array of signatures may move but these may not. */
typedef struct ad_ksig {
    char *text;
    ffi_cif cif;
    ffi_type *rtype;
    ffi_type *atypes[AD_KERNEL_MAX_ARGS];
    ad_ktype ret;
    ad_ktype args[AD_KERNEL_MAX_ARGS];
    int nargs;
} ad_ksig;

typedef struct ad_kentry {
    char *name;
    void (*fn)(void);
    ad_ksig *sig;
    ad_builtin *callable; /* script value made on first use (builtins/system/extern.c); owned */
} ad_kentry;

/* A library opened by 'extern', kept open until the state closes. */
typedef struct ad_dlib {
    char *name;
    void *handle;
} ad_dlib;

struct ad_kreg {
    ad_ksig **sigs;
    int nsigs, capsigs;
    ad_kentry *k;
    int n, cap;
    int *slots;    /* open-addressing hash of names: kernel id or -1 */
    int nslots;    /* a power of two, kept at least twice 'n' */
    ad_dlib *libs;
    int nlibs, caplibs;
};

#define AD_KREG_MIN_SLOTS 256

static uint32_t name_hash(const char *s) {
    uint32_t h = 2166136261u;  /* FNV-1a */
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

static char *dup_str(ad_state *S, const char *s) {
    size_t n = strlen(s) + 1;
    char *d = ad_malloc(S, n);
    if (d) memcpy(d, s, n);
    return d;
}

struct ad_kreg *ad_kreg_new(ad_state *S) {
    struct ad_kreg *r = ad_calloc(S, 1, sizeof *r);
    if (!r) return NULL;
    r->slots = ad_malloc(S, sizeof(int) * AD_KREG_MIN_SLOTS);
    if (!r->slots) { ad_free(S, r); return NULL; }
    r->nslots = AD_KREG_MIN_SLOTS;
    memset(r->slots, 0xff, sizeof(int) * AD_KREG_MIN_SLOTS);
    return r;
}

static void drop_callable(ad_state *S, ad_kentry *e) {
    if (!e->callable) return;
    ad_value v; v.t = AD_TBUILTIN; v.u.bi = e->callable;
    e->callable = NULL;
    ad_value_decref(S, v);
}

void ad_kreg_free(ad_state *S, struct ad_kreg *r) {
    if (!r) return;
    for (int i = 0; i < r->n; i++) { drop_callable(S, &r->k[i]); ad_free(S, r->k[i].name); }
    for (int i = 0; i < r->nlibs; i++) {
        dlclose(r->libs[i].handle);
        ad_free(S, r->libs[i].name);
    }
    ad_free(S, r->libs);
    for (int i = 0; i < r->nsigs; i++) {
        ad_free(S, r->sigs[i]->text);
        ad_free(S, r->sigs[i]);
    }
    ad_free(S, r->k);
    ad_free(S, r->sigs);
    ad_free(S, r->slots);
    ad_free(S, r);
}

/* ---- signature parsing ---- */

typedef struct ktype_name { const char *name; ad_ktype t; } ktype_name;
static const ktype_name ktype_names[] = {
    {"v", AD_KT_VOID}, {"i32", AD_KT_I32}, {"i64", AD_KT_I64},
    {"f32", AD_KT_F32}, {"f64", AD_KT_F64}, {"p", AD_KT_PTR},
};

static ffi_type *ffi_of(ad_ktype t) {
    switch (t) {
    case AD_KT_VOID: return &ffi_type_void;
    case AD_KT_I32: return &ffi_type_sint32;
    case AD_KT_I64: return &ffi_type_sint64;
    case AD_KT_F32: return &ffi_type_float;
    case AD_KT_F64: return &ffi_type_double;
    default: return &ffi_type_pointer;
    }
}

/* Reads one type name of length 'len' at 's'; false if it is none of them. */
static bool parse_type(const char *s, size_t len, ad_ktype *out) {
    for (size_t i = 0; i < sizeof ktype_names / sizeof ktype_names[0]; i++) {
        if (strlen(ktype_names[i].name) == len && memcmp(ktype_names[i].name, s, len) == 0) {
            *out = ktype_names[i].t;
            return true;
        }
    }
    return false;
}

static int sig_error(ad_state *S, const char *name, const char *sig, const char *why, const char *tok, int toklen) {
    if (tok)
        return ad_error(S, "bad kernel signature '%s' for %s: %s '%.*s' (expected v, i32, i64, f32, f64 or p)",
                        sig, name, why, toklen, tok);
    return ad_error(S, "bad kernel signature '%s' for %s: %s", sig, name, why);
}

/* Parses the argument list after '(' into sg; the text must end in ")". */
static int parse_args(ad_state *S, const char *name, const char *sig, const char *p, ad_ksig *sg) {
    if (*p == ')') return p[1] ? sig_error(S, name, sig, "unexpected text after ')'", NULL, 0) : AD_OK;
    for (;;) {
        size_t len = strcspn(p, ",)");
        if (p[len] == '\0') return sig_error(S, name, sig, "missing ')'", NULL, 0);
        if (len == 0) return sig_error(S, name, sig, "empty argument type", NULL, 0);
        ad_ktype t;
        if (!parse_type(p, len, &t)) return sig_error(S, name, sig, "unknown type", p, (int)len);
        if (t == AD_KT_VOID) return sig_error(S, name, sig, "'v' is only allowed as the return type", NULL, 0);
        if (sg->nargs == AD_KERNEL_MAX_ARGS) return sig_error(S, name, sig, "more than 16 arguments", NULL, 0);
        sg->args[sg->nargs++] = t;
        p += len;
        if (*p == ')') return p[1] ? sig_error(S, name, sig, "unexpected text after ')'", NULL, 0) : AD_OK;
        p++;
    }
}

static int parse_sig(ad_state *S, const char *name, const char *sig, ad_ksig *sg) {
    const char *open = strchr(sig, '(');
    if (!open) return sig_error(S, name, sig, "missing '('", NULL, 0);
    size_t rlen = (size_t)(open - sig);
    if (rlen == 0) return sig_error(S, name, sig, "missing return type", NULL, 0);
    if (!parse_type(sig, rlen, &sg->ret)) return sig_error(S, name, sig, "unknown return type", sig, (int)rlen);
    sg->nargs = 0;
    return parse_args(S, name, sig, open + 1, sg);
}

/* The interned signature for 'sig', parsing and preparing it on first use. */
static ad_ksig *intern_sig(ad_state *S, struct ad_kreg *r, const char *name, const char *sig) {
    for (int i = 0; i < r->nsigs; i++)
        if (strcmp(r->sigs[i]->text, sig) == 0) return r->sigs[i];
    ad_ksig tmp;
    if (parse_sig(S, name, sig, &tmp) != AD_OK) return NULL;
    if (r->nsigs == r->capsigs) {
        int cap = r->capsigs ? r->capsigs * 2 : 16;
        ad_ksig **ns = ad_realloc(S, r->sigs, sizeof *ns * (size_t)cap);
        if (!ns) return NULL;
        r->sigs = ns;
        r->capsigs = cap;
    }
    ad_ksig *sg = ad_malloc(S, sizeof *sg);
    if (!sg) return NULL;
    *sg = tmp;
    sg->text = dup_str(S, sig);
    if (!sg->text) { ad_free(S, sg); return NULL; }
    sg->rtype = ffi_of(sg->ret);
    for (int i = 0; i < sg->nargs; i++) sg->atypes[i] = ffi_of(sg->args[i]);
    if (ffi_prep_cif(&sg->cif, FFI_DEFAULT_ABI, (unsigned)sg->nargs, sg->rtype, sg->atypes) != FFI_OK) {
        ad_error(S, "bad kernel signature '%s' for %s: libffi cannot prepare it", sig, name);
        ad_free(S, sg->text);
        ad_free(S, sg);
        return NULL;
    }
    r->sigs[r->nsigs++] = sg;
    return sg;
}

/* ---- name table ---- */

static int find_slot(const struct ad_kreg *r, const char *name) {
    uint32_t mask = (uint32_t)r->nslots - 1;
    for (uint32_t i = name_hash(name) & mask;; i = (i + 1) & mask) {
        int id = r->slots[i];
        if (id < 0 || strcmp(r->k[id].name, name) == 0) return (int)i;
    }
}

static int grow_slots(ad_state *S, struct ad_kreg *r) {
    int n = r->nslots * 2;
    int *ns = ad_malloc(S, sizeof(int) * (size_t)n);
    if (!ns) return ADDSL_ENOMEM;
    ad_free(S, r->slots);
    r->slots = ns;
    r->nslots = n;
    memset(ns, 0xff, sizeof(int) * (size_t)n);
    for (int id = 0; id < r->n; id++) r->slots[find_slot(r, r->k[id].name)] = id;
    return AD_OK;
}

static int append_entry(ad_state *S, struct ad_kreg *r, const char *name) {
    if ((r->n + 1) * 2 > r->nslots && grow_slots(S, r) != AD_OK) return -1;
    if (r->n == r->cap) {
        int cap = r->cap ? r->cap * 2 : 64;
        ad_kentry *nk = ad_realloc(S, r->k, sizeof *nk * (size_t)cap);
        if (!nk) return -1;
        r->k = nk;
        r->cap = cap;
    }
    char *copy = dup_str(S, name);
    if (!copy) return -1;
    int id = r->n++;
    memset(&r->k[id], 0, sizeof r->k[id]);
    r->k[id].name = copy;
    r->slots[find_slot(r, name)] = id;
    return id;
}

/* The shipped table (kernels.def): its rows keep their ids. */
typedef struct kernel_row { const char *name; void (*fn)(void); const char *sig; } kernel_row;

static const kernel_row shipped[] = {
#define AD_KERNEL(id, fn, sig) {#id, (void (*)(void))fn, sig},
#include "kernels.def"
#undef AD_KERNEL
};

int ad_kreg_add(ad_state *S, const char *name, void (*fn)(void), const char *sig) {
    struct ad_kreg *r = S->kernels;
    if (!r) return -ad_error(S, "kernel registry is not initialized");
    if (!name || !*name) return -ad_error(S, "kernel name must not be empty");
    if (!fn) return -ad_error(S, "kernel %s: function pointer is NULL", name);
    if (!sig) return -ad_error(S, "bad kernel signature '' for %s: missing '('", name);
    int id = r->slots[find_slot(r, name)];
    /* Builtins call shipped kernels by id with their own argument layout. */
    if (id >= 0 && id < AD_K_COUNT && r->k[id].fn == shipped[id].fn)
        return -ad_error_code(S, ADDSL_EARG, "kernel %s: a shipped kernel cannot be replaced", name);
    ad_ksig *sg = intern_sig(S, r, name, sig);
    if (!sg) return -(S->errcode ? S->errcode : ADDSL_ERUNTIME);
    if (id < 0 && (id = append_entry(S, r, name)) < 0) return -ADDSL_ENOMEM;
    /* A script value of the kernel stays valid while its arity does. */
    if (r->k[id].sig && r->k[id].sig->nargs != sg->nargs) drop_callable(S, &r->k[id]);
    r->k[id].fn = fn;
    r->k[id].sig = sg;
    return id;
}

int ad_kreg_find(ad_state *S, const char *name) {
    struct ad_kreg *r = S->kernels;
    if (!r || !name) return -1;
    return r->slots[find_slot(r, name)];
}

static const ad_kentry *entry(ad_state *S, int id) {
    struct ad_kreg *r = S->kernels;
    return (r && id >= 0 && id < r->n) ? &r->k[id] : NULL;
}

int ad_kreg_nargs(ad_state *S, int id) {
    const ad_kentry *e = entry(S, id);
    return e ? e->sig->nargs : -1;
}

ad_ktype ad_kreg_argtype(ad_state *S, int id, int i) {
    const ad_kentry *e = entry(S, id);
    if (!e || i >= e->sig->nargs) return AD_KT_VOID;
    return i < 0 ? e->sig->ret : e->sig->args[i];
}

const char *ad_kreg_name(ad_state *S, int id) {
    const ad_kentry *e = entry(S, id);
    return e ? e->name : NULL;
}

const char *ad_kreg_sig(ad_state *S, int id) {
    const ad_kentry *e = entry(S, id);
    return e ? e->sig->text : NULL;
}

void (*ad_kreg_fn(ad_state *S, int id))(void) {
    const ad_kentry *e = entry(S, id);
    return e ? e->fn : NULL;
}

struct ad_builtin *ad_kreg_callable(ad_state *S, int id) {
    const ad_kentry *e = entry(S, id);
    return e ? e->callable : NULL;
}

void ad_kreg_set_callable(ad_state *S, int id, struct ad_builtin *b) {
    struct ad_kreg *r = S->kernels;
    if (r && id >= 0 && id < r->n) { drop_callable(S, &r->k[id]); r->k[id].callable = b; }
}

void *ad_kreg_dlopen(ad_state *S, const char *lib, const char *who) {
    struct ad_kreg *r = S->kernels;
    for (int i = 0; i < r->nlibs; i++)
        if (strcmp(r->libs[i].name, lib) == 0) return r->libs[i].handle;
    if (r->nlibs == r->caplibs) {
        int cap = r->caplibs ? r->caplibs * 2 : 8;
        ad_dlib *nl = ad_realloc(S, r->libs, sizeof *nl * (size_t)cap);
        if (!nl) return NULL;
        r->libs = nl;
        r->caplibs = cap;
    }
    char *copy = dup_str(S, lib);
    if (!copy) return NULL;
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        ad_free(S, copy);
        ad_error(S, "extern %s: cannot open library '%s': %s", who, lib, why ? why : "unknown error");
        return NULL;
    }
    r->libs[r->nlibs].name = copy;
    r->libs[r->nlibs].handle = h;
    r->nlibs++;
    return h;
}

int ad_kreg_count(ad_state *S) { return S->kernels ? S->kernels->n : 0; }
int ad_kreg_nsigs(ad_state *S) { return S->kernels ? S->kernels->nsigs : 0; }

/* Void kernels whose arguments are all pointers and int64s (most shipped
 * kernels) are called directly: on the x86-64 and AArch64 C ABIs both kinds
 * travel in the same integer registers, so one function-pointer type per
 * argument count fits them all, and a small-tensor op skips libffi's
 * marshalling (a third of its time in profiles). Other shapes use ffi_call. */
static bool call_direct(const ad_kentry *e, const ad_karg *a) {
#if defined(__x86_64__) || defined(__aarch64__)
    const ad_ksig *g = e->sig;
    if (g->ret != AD_KT_VOID || g->nargs > 8) return false;
    int64_t v[8];
    for (int i = 0; i < g->nargs; i++) {
        if (g->args[i] == AD_KT_PTR) v[i] = (int64_t)(intptr_t)a[i].p;
        else if (g->args[i] == AD_KT_I64) v[i] = a[i].i64;
        else return false;
    }
    typedef int64_t I;
    switch (g->nargs) {
    case 0: ((void (*)(void))e->fn)(); return true;
    case 1: ((void (*)(I))e->fn)(v[0]); return true;
    case 2: ((void (*)(I, I))e->fn)(v[0], v[1]); return true;
    case 3: ((void (*)(I, I, I))e->fn)(v[0], v[1], v[2]); return true;
    case 4: ((void (*)(I, I, I, I))e->fn)(v[0], v[1], v[2], v[3]); return true;
    case 5: ((void (*)(I, I, I, I, I))e->fn)(v[0], v[1], v[2], v[3], v[4]); return true;
    case 6: ((void (*)(I, I, I, I, I, I))e->fn)(v[0], v[1], v[2], v[3], v[4], v[5]); return true;
    case 7: ((void (*)(I, I, I, I, I, I, I))e->fn)(v[0], v[1], v[2], v[3], v[4], v[5], v[6]); return true;
    default: ((void (*)(I, I, I, I, I, I, I, I))e->fn)(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]); return true;
    }
#else
    (void)e; (void)a;
    return false;
#endif
}

void ad_kreg_call(ad_state *S, int id, ad_karg *args, ad_karg *ret) {
    const ad_kentry *e = entry(S, id);
    if (!e) return;
    if (call_direct(e, args)) return;
    void *avals[AD_KERNEL_MAX_ARGS];
    for (int i = 0; i < e->sig->nargs; i++) avals[i] = &args[i];
    /* libffi widens small integer returns to a full ffi_arg. */
    union { ffi_arg a; ad_karg k; } rv;
    memset(&rv, 0, sizeof rv);
    ffi_call((ffi_cif *)&e->sig->cif, e->fn, &rv, avals);
    if (!ret) return;
    switch (e->sig->ret) {
    case AD_KT_I32: ret->i32 = (int32_t)rv.a; break;
    case AD_KT_VOID: break;
    default: *ret = rv.k; break;
    }
}

/* ---- the shipped table ---- */


int ad_kernels_register_builtin(ad_state *S) {
    for (int i = 0; i < AD_K_COUNT; i++) {
        int id = ad_kreg_add(S, shipped[i].name, shipped[i].fn, shipped[i].sig);
        if (id < 0) return -id;
        if (id != i) return ad_error(S, "kernel %s registered twice in kernels.def", shipped[i].name);
    }
    return AD_OK;
}
