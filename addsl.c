/* addsl.c: the addsl command.
 * Parses the command line, then runs a script, -e code, stdin or the libedit REPL through the public API. */

#include <addsl.h>

#include <errno.h>
#include <fcntl.h>
#include <histedit.h>
#include <locale.h>
#include <dirent.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <wchar.h>

#define EXIT_USAGE 2
#define HISTORY_SIZE 1000
#define HISTORY_FILE ".addsl_history"
#define READ_CHUNK 65536
#define UTF8_MAX_BYTES 4       /* bytes in one UTF-8 encoded character */
#define DEPTH_MAX 1000000000

/* The one global of the program: the state a SIGINT should stop. A lock-free
 * atomic is what C11 lets a signal handler read; NULL while no script runs. */
static _Atomic(addsl_state *) interrupt_target;

typedef enum { SRC_NONE, SRC_FILE, SRC_STRING, SRC_STDIN } source_kind;

typedef struct options {
    source_kind kind;
    const char *script;        /* file path */
    const char **codes;        /* the -e codes, in order (SRC_STRING) */
    int ncodes;
    int disasm;
    int interactive;           /* -i: the REPL follows the script */
    int unbuffered;            /* -u */
    const char *export_c;      /* --export-c OUT.c: the file the script's export_c call writes */
    int nargs;                 /* script arguments */
    const char *const *args;
    addsl_config cfg;
} options;

/* Where standard output stands: a failed write is remembered and stops the
 * script, and the command then exits 1 with the reason. */
typedef struct output {
    addsl_state *S;            /* the state to stop; NULL until it exists */
    int failed;
    int err;                   /* errno of the first failure */
    int closed;                /* descriptor 1 was closed at start: every write fails */
} output;

typedef struct strbuf {
    char *data;
    size_t len, cap;
} strbuf;

static const char usage_text[] =
    "usage: addsl [OPTIONS] [FILE.ad | -e CODE... | -] [ARGS...]\n"
    "       addsl --disasm FILE.ad\n"
    "\n"
    "With no script, addsl starts the REPL on a terminal and otherwise\n"
    "runs standard input. ARGS become the script's 'args' list.\n"
    "\n"
    "Options:\n"
    "  -e CODE              run CODE (named <string> in messages); repeat -e to\n"
    "                       run several in order in one state (after -e, only\n"
    "                       -e, -i and -u are options: other words are ARGS)\n"
    "  -i                   start the REPL after the script or -e, with its names\n"
    "  -u                   unbuffered standard output (it is line-buffered on a\n"
    "                       terminal and block-buffered otherwise)\n"
    "  -                    read the script from standard input (<stdin>)\n"
    "  --disasm             print the bytecode of the script instead of running it\n"
    "  --memory-limit BYTES limit tensors and other objects (suffix K, M or G; 0 = no limit)\n"
    "  --max-depth N        limit the script call depth to N\n"
    "  --export-c OUT.c     the script's export_c call writes OUT.c and OUT.h\n"
    "                       instead of the path it names (docs/export.md); a\n"
    "                       second export_c call, or none, is an error\n"
    "  --sandbox            close extern and file access (load, save, plot,\n"
    "                       makedirs, export_c) to the script; it imports only\n"
    "                       .ad files in its own directory or below it\n"
    "  -h, --help           print this help and exit\n"
    "  -v, --version        print the version and exit\n"
    "  --                   end of options: the next word is the script file\n"
    "\n"
    "In the REPL: help() for a tour, help(x) for one name, dir() for the names\n"
    "in scope, Tab to complete, quit() or Ctrl-D to leave.\n"
    "\n"
    "Environment: ADDSL_HISTORY (the REPL's history file; empty: none),\n"
    "ADDSL_CUDA_MODULE and ADDSL_MPI_MODULE (the CUDA and MPI modules to load),\n"
    "ADDSL_NO_HUGE_PAGES=1 (big tensors in 4 KB pages), COLUMNS (progress bar width).\n"
    "\n"
    "Exit status: 0 success, 1 compile or runtime error or a failed write to\n"
    "standard output, 2 bad usage, or the code given to exit(code).\n";

static int usage_error(const char *fmt, const char *what)
{
    fputs("addsl: ", stderr);
    fprintf(stderr, fmt, what);
    fputs("\nTry 'addsl --help' for more information.\n", stderr);
    return EXIT_USAGE;
}

/* --- signals ------------------------------------------------------------ */

static void on_sigint(int sig)
{
    addsl_state *S = atomic_load(&interrupt_target);
    (void)sig;
    if (S)
        addsl_interrupt(S);
}

/* While a script runs, the first Ctrl-C asks the VM to stop at a safe point
 * and restores the default action, so a second one ends a stuck kernel. */
static void arm_interrupt(addsl_state *S)
{
    struct sigaction sa, old;
    /* A shell runs background jobs with SIGINT ignored; they must stay deaf to it. */
    if (sigaction(SIGINT, NULL, &old) == 0 && old.sa_handler == SIG_IGN)
        return;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART | SA_RESETHAND;
    atomic_store(&interrupt_target, S);
    sigaction(SIGINT, &sa, NULL);
}

/* At the prompt, Ctrl-C must interrupt read() (no SA_RESTART) so the line can be dropped. */
static void arm_prompt(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;
    atomic_store(&interrupt_target, NULL);
    sigaction(SIGINT, &sa, NULL);
}

static void disarm_interrupt(void)
{
    atomic_store(&interrupt_target, NULL);
}

/* --- results ------------------------------------------------------------ */

static const char *default_message(int rc)
{
    switch (rc) {
    case ADDSL_ENOMEM: return "out of memory";
    case ADDSL_EINTERRUPT: return "interrupted";
    case ADDSL_EIO: return "input/output error";
    default: return "error";
    }
}

/* Prints the library's message; stdout is flushed first so the two streams interleave in order. */
static void report(addsl_state *S, int rc)
{
    const char *msg = addsl_errmsg(S);
    size_t n;
    if (rc == ADDSL_OK || rc == ADDSL_EXIT)
        return;
    if (!msg || !*msg)
        msg = default_message(rc);
    n = strlen(msg);
    fflush(stdout);
    if (addsl_mpi_size(S) > 1) {
        /* Several ranks share the terminal: the message names its rank,
         * after "FILE:LINE:COL: error: " when it starts so. */
        const char *e = strstr(msg, "error: ");
        const char *nl = strchr(msg, '\n');
        size_t head = (e && (!nl || e < nl)) ? (size_t)(e - msg) + 7 : 0;
        /* One call, so the line reaches the terminal whole between other ranks' lines. */
        fprintf(stderr, "%.*srank %d of %d: %s%s", (int)head, msg, addsl_mpi_rank(S), addsl_mpi_size(S), msg + head,
                msg[n - 1] == '\n' ? "" : "\n");
        fflush(stderr);
        return;
    }
    fputs(msg, stderr);
    if (n == 0 || msg[n - 1] != '\n')
        fputc('\n', stderr);
    fflush(stderr);
}

static int exit_status(addsl_state *S, int rc)
{
    if (rc == ADDSL_OK)
        return 0;
    if (rc == ADDSL_EXIT)
        return addsl_exit_code(S);
    return 1;
}

/* --- output ------------------------------------------------------------- */

static void output_failed(output *out, int err)
{
    if (out->failed)
        return;
    out->failed = 1;
    out->err = err ? err : EIO;
    if (out->S)
        addsl_interrupt(out->S);
}

/* The library's output callback: every write to stdout is checked, and the
 * first failure stops the running script at its next safe point. */
static void cli_write(void *ud, const char *text, size_t len, int is_err)
{
    output *out = ud;
    if (is_err) {
        fwrite(text, 1, len, stderr);
        fflush(stderr);
        return;
    }
    if (out->failed)
        return;
    if (out->closed && len > 0) {
        output_failed(out, EBADF);
        return;
    }
    errno = 0;
    if (len > 0 && fwrite(text, 1, len, stdout) != len)
        output_failed(out, errno);
    else if (len == 0 && fflush(stdout) != 0)
        output_failed(out, errno);
}

static int stdout_message(int err)
{
    fprintf(stderr, "addsl: cannot write to standard output: %s\n", strerror(err));
    return 1;
}

/* Flushes stdout and turns a failure into exit status 1 with a message. */
static int finish_stdout(int status)
{
    errno = 0;
    if (fflush(stdout) != 0 || ferror(stdout))
        return stdout_message(errno ? errno : EIO);
    return status;
}

/* --- input -------------------------------------------------------------- */

static int sb_append(strbuf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        char *p;
        while (cap < b->len + n + 1) {
            if (cap > SIZE_MAX / 2)
                return -1;
            cap *= 2;
        }
        p = realloc(b->data, cap);
        if (!p)
            return -1;
        b->data = p;
        b->cap = cap;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

/* Reads all of 'f'; NULL with errno set on failure. */
static char *read_all(FILE *f)
{
    strbuf b = {0};
    char chunk[READ_CHUNK];
    size_t n;
    if (sb_append(&b, "", 0) != 0)
        return NULL;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (sb_append(&b, chunk, n) != 0) {
            free(b.data);
            errno = ENOMEM;
            return NULL;
        }
    }
    if (ferror(f)) {
        free(b.data);
        if (errno == 0)
            errno = EIO;
        return NULL;
    }
    return b.data;
}

/* Opens a script for reading, refusing directories, which fopen accepts. */
static FILE *open_script(const char *path)
{
    struct stat st;
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        fclose(f);
        errno = EISDIR;
        return NULL;
    }
    return f;
}

static int cannot_open(const char *path)
{
    fprintf(stderr, "addsl: cannot open '%s': %s\n", path, strerror(errno));
    return EXIT_USAGE;
}

/* --- option parsing ----------------------------------------------------- */

static int parse_size(const char *s, size_t *out)
{
    char *end;
    unsigned long long v;
    unsigned shift = 0;
    if (*s < '0' || *s > '9')
        return -1;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno)
        return -1;
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    default: break;
    }
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end || (shift && v > (SIZE_MAX >> shift)) || v > SIZE_MAX)
        return -1;
    *out = (size_t)v << shift;
    return 0;
}

static int parse_depth(const char *s, int *out)
{
    char *end;
    long v;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < 1 || v > DEPTH_MAX)
        return -1;
    *out = (int)v;
    return 0;
}

/* Splits "--name=value" or takes the next word; NULL when there is none. */
static const char *option_value(const char *arg, size_t namelen, int argc, char **argv, int *i)
{
    if (arg[namelen] == '=')
        return arg + namelen + 1;
    if (*i + 1 >= argc)
        return NULL;
    return argv[++*i];
}

static int is_long(const char *arg, const char *name)
{
    size_t n = strlen(name);
    return strncmp(arg, name, n) == 0 && (arg[n] == '\0' || arg[n] == '=');
}

/* Handles one option taking a value; returns -1 (not this option), 0 or a usage-error status. */
static int parse_valued(options *o, int argc, char **argv, int *i)
{
    const char *arg = argv[*i], *v;
    if (is_long(arg, "--memory-limit")) {
        v = option_value(arg, strlen("--memory-limit"), argc, argv, i);
        if (!v)
            return usage_error("option '%s' needs a value", "--memory-limit");
        if (parse_size(v, &o->cfg.memory_limit) != 0)
            return usage_error("bad --memory-limit '%s' (BYTES, with an optional K, M or G)", v);
        return 0;
    }
    if (is_long(arg, "--export-c")) {
        v = option_value(arg, strlen("--export-c"), argc, argv, i);
        if (!v)
            return usage_error("option '%s' needs a value", "--export-c");
        o->export_c = v;
        return 0;
    }
    if (is_long(arg, "--max-depth")) {
        v = option_value(arg, strlen("--max-depth"), argc, argv, i);
        if (!v)
            return usage_error("option '%s' needs a value", "--max-depth");
        if (parse_depth(v, &o->cfg.max_depth) != 0)
            return usage_error("bad --max-depth '%s' (a positive integer)", v);
        return 0;
    }
    return -1;
}

/* Takes the -e at argv[*i] and the -e, -i and -u after it; leaves *i on the
 * last word taken. Returns -1 to go on, or a usage-error status. */
static int parse_codes(options *o, int argc, char **argv, int *i)
{
    if (!o->codes) {
        o->codes = malloc((size_t)argc * sizeof *o->codes);
        if (!o->codes) {
            fputs("addsl: out of memory\n", stderr);
            return 1;
        }
    }
    o->kind = SRC_STRING;
    for (;;) {
        if (*i + 1 >= argc)
            return usage_error("option '%s' needs a value", "-e");
        o->codes[o->ncodes++] = argv[++*i];
        while (*i + 1 < argc && (strcmp(argv[*i + 1], "-i") == 0 || strcmp(argv[*i + 1], "-u") == 0)) {
            if (argv[++*i][1] == 'i')
                o->interactive = 1;
            else
                o->unbuffered = 1;
        }
        if (*i + 1 >= argc || strcmp(argv[*i + 1], "-e") != 0)
            return -1;
        ++*i;
    }
}

/* Returns -1 to go on, or the exit status for --help, --version and usage errors. */
static int parse_options(options *o, int argc, char **argv)
{
    int i;
    for (i = 1; i < argc; i++) {
        const char *arg = argv[i];
        int rc;
        if (strcmp(arg, "--") == 0) {
            if (i + 1 < argc) {
                o->kind = SRC_FILE;
                o->script = argv[++i];
            }
            break;
        }
        if (strcmp(arg, "-") == 0) {
            o->kind = SRC_STDIN;
            break;
        }
        if (strcmp(arg, "-e") == 0) {
            rc = parse_codes(o, argc, argv, &i);
            if (rc >= 0)
                return rc;
            break;
        }
        if (strcmp(arg, "-i") == 0) {
            o->interactive = 1;
            continue;
        }
        if (strcmp(arg, "-u") == 0) {
            o->unbuffered = 1;
            continue;
        }
        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            fputs(usage_text, stdout);
            return finish_stdout(0);
        }
        if (strcmp(arg, "-v") == 0 || strcmp(arg, "--version") == 0) {
            puts("addsl " ADDSL_VERSION);
            return finish_stdout(0);
        }
        if (strcmp(arg, "--disasm") == 0) {
            o->disasm = 1;
            continue;
        }
        if (strcmp(arg, "--sandbox") == 0) {
            o->cfg.deny |= ADDSL_DENY_EXTERN | ADDSL_DENY_FILES;
            continue;
        }
        rc = parse_valued(o, argc, argv, &i);
        if (rc > 0)
            return rc;
        if (rc == 0)
            continue;
        if (arg[0] == '-')
            return usage_error("unknown option '%s'", arg);
        o->kind = SRC_FILE;
        o->script = arg;
        break;
    }
    o->nargs = i < argc ? argc - i - 1 : 0;
    o->args = (const char *const *)argv + (i < argc ? i + 1 : argc);
    return -1;
}

/* --- scripts ------------------------------------------------------------ */

static int run_text(addsl_state *S, const options *o, const char *text, const char *name)
{
    int rc;
    if (o->disasm)
        return addsl_disasm(S, text, name);
    arm_interrupt(S);
    rc = addsl_dostring(S, text, name);
    disarm_interrupt();
    return rc;
}

static int run_file(addsl_state *S, const options *o)
{
    int rc;
    if (o->disasm) {
        FILE *f = open_script(o->script);
        char *text = f ? read_all(f) : NULL;
        if (f)
            fclose(f);
        if (!text) {
            fprintf(stderr, "addsl: cannot read '%s': %s\n", o->script, strerror(errno));
            return ADDSL_EIO;
        }
        rc = addsl_disasm(S, text, o->script);
        free(text);
        return rc;
    }
    arm_interrupt(S);
    rc = addsl_dofile(S, o->script);
    disarm_interrupt();
    return rc;
}

static int run_stdin(addsl_state *S, const options *o)
{
    int rc;
    char *text = read_all(stdin);
    if (!text) {
        fprintf(stderr, "addsl: cannot read '<stdin>': %s\n", strerror(errno));
        return ADDSL_EIO;
    }
    rc = run_text(S, o, text, "<stdin>");
    free(text);
    return rc;
}

static int run_script(addsl_state *S, const options *o)
{
    int rc = addsl_set_args(S, o->nargs, o->args);
    if (rc == ADDSL_OK && o->export_c)
        rc = addsl_set_export_c(S, o->export_c);
    if (rc != ADDSL_OK)
        return rc;
    switch (o->kind) {
    case SRC_FILE: return run_file(S, o);
    case SRC_STRING:
        for (int k = 0; k < o->ncodes; k++) {
            rc = run_text(S, o, o->codes[k], "<string>");
            if (rc != ADDSL_OK)
                return rc;
        }
        return ADDSL_OK;
    default: return run_stdin(S, o);
    }
}

/* --- REPL --------------------------------------------------------------- */

typedef struct repl {
    addsl_state *S;
    EditLine *el;
    History *hist;
    char *histfile;            /* NULL: history is not kept on disk */
    strbuf pending;            /* lines of an input still incomplete */
} repl;

static char *prompt_fn(EditLine *el)
{
    void *ud = NULL;
    el_get(el, EL_CLIENTDATA, &ud);
    return (char *)(((repl *)ud)->pending.len ? "... " : "> ");
}

/* libedit's own reader retries a read that SIGINT interrupted; this one gives
 * up instead, so el_gets returns NULL with errno EINTR and the line is dropped. */
static int getc_fn(EditLine *el, wchar_t *wc)
{
    char buf[UTF8_MAX_BYTES];
    size_t n = 0;
    (void)el;
    for (;;) {
        mbstate_t mbs;
        size_t k;
        ssize_t r = read(STDIN_FILENO, buf + n, 1);
        if (r < 0)
            return -1;
        if (r == 0)
            return 0;
        n++;
        memset(&mbs, 0, sizeof mbs);
        k = mbrtowc(wc, buf, n, &mbs);
        if (k == (size_t)-2 && n < sizeof buf)
            continue;
        if (k == (size_t)-1 || k == (size_t)-2) {
            n = 0;             /* an invalid byte sequence is skipped */
            continue;
        }
        return 1;
    }
}

static char *history_path(void)
{
    const char *env = getenv("ADDSL_HISTORY"), *home;
    char *path;
    size_t n;
    if (env)
        return *env ? strdup(env) : NULL;
    home = getenv("HOME");
    if (!home || !*home)
        return NULL;
    n = strlen(home) + sizeof "/" HISTORY_FILE;
    path = malloc(n);
    if (path)
        snprintf(path, n, "%s/%s", home, HISTORY_FILE);
    return path;
}

static unsigned char complete_fn(EditLine *el, int ch);

static int repl_open(repl *r, addsl_state *S)
{
    HistEvent ev;
    memset(r, 0, sizeof *r);
    r->S = S;
    setlocale(LC_CTYPE, "");
    r->el = el_init("addsl", stdin, stdout, stderr);
    r->hist = history_init();
    if (!r->el || !r->hist)
        return -1;
    history(r->hist, &ev, H_SETSIZE, HISTORY_SIZE);
    history(r->hist, &ev, H_SETUNIQUE, 1);
    r->histfile = history_path();
    if (r->histfile)
        history(r->hist, &ev, H_LOAD, r->histfile);
    el_set(r->el, EL_CLIENTDATA, (void *)r);
    el_set(r->el, EL_EDITOR, "emacs");
    el_set(r->el, EL_PROMPT, prompt_fn);
    el_set(r->el, EL_HIST, history, r->hist);
    el_set(r->el, EL_GETCFN, getc_fn);
    el_set(r->el, EL_BIND, "^R", "em-inc-search-prev", NULL);
    el_set(r->el, EL_ADDFN, "addsl-complete", "complete a name, method, keyword or file", complete_fn);
    el_set(r->el, EL_BIND, "^I", "addsl-complete", NULL);
    el_source(r->el, NULL);
    return 0;
}

static void repl_close(repl *r)
{
    if (r->el)
        el_end(r->el);
    if (r->hist)
        history_end(r->hist);
    free(r->histfile);
    free(r->pending.data);
}

/* Keeps one whole entry (all the lines of a multi-line one, so the up arrow
 * brings back the block); failures to write the history file are deliberately silent. */
static void remember(repl *r, const char *entry)
{
    HistEvent ev;
    size_t n = strlen(entry);
    char *copy;
    while (n > 0 && (entry[n - 1] == '\n' || entry[n - 1] == '\r'))
        n--;
    if (strspn(entry, " \t\r\n") >= n)
        return;
    copy = malloc(n + 1);
    if (!copy)
        return;
    memcpy(copy, entry, n);
    copy[n] = '\0';
    history(r->hist, &ev, H_ENTER, copy);
    free(copy);
    if (r->histfile)
        history(r->hist, &ev, H_SAVE, r->histfile);
}

/* --- completion --------------------------------------------------------- */

typedef struct cands {
    char **v;
    size_t n, cap;
    int failed;
} cands;

static void cand_add(void *ud, const char *word)
{
    cands *c = ud;
    if (c->failed)
        return;
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 32;
        char **v = realloc(c->v, cap * sizeof *v);
        if (!v) {
            c->failed = 1;
            return;
        }
        c->v = v;
        c->cap = cap;
    }
    c->v[c->n] = strdup(word);
    if (!c->v[c->n]) {
        c->failed = 1;
        return;
    }
    c->n++;
}

static void cands_free(cands *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->v[i]);
    free(c->v);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* File names for the text 'word' after a string's opening quote: entries of
 * its directory that start with its last part, directories with a '/'. */
static void complete_path(const char *word, cands *c)
{
    const char *slash = strrchr(word, '/');
    const char *base = slash ? slash + 1 : word;
    size_t dlen = slash ? (size_t)(slash - word) + 1 : 0, blen = strlen(base);
    char *dir = malloc(dlen + 2);
    DIR *d;
    struct dirent *e;
    if (!dir)
        return;
    if (dlen)
        memcpy(dir, word, dlen);
    else
        dir[dlen++] = '.';
    dir[dlen] = '\0';
    d = opendir(dir);
    if (d) {
        while ((e = readdir(d)) != NULL) {
            struct stat st;
            size_t n = strlen(e->d_name);
            char *full, *path;
            if (strncmp(e->d_name, base, blen) != 0 || strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            if (e->d_name[0] == '.' && base[0] != '.')
                continue;
            full = malloc(dlen + n + 3);
            path = malloc((size_t)(base - word) + n + 2);
            if (!full || !path) {
                free(full);
                free(path);
                break;
            }
            snprintf(full, dlen + n + 3, "%s/%s", dir, e->d_name);
            memcpy(path, word, (size_t)(base - word));
            strcpy(path + (base - word), e->d_name);
            if (stat(full, &st) == 0 && S_ISDIR(st.st_mode))
                strcat(path, "/");
            cand_add(c, path);
            free(full);
            free(path);
        }
        closedir(d);
    }
    free(dir);
    if (c->n > 1)
        qsort(c->v, c->n, sizeof *c->v, cmp_str);
}

/* Lists the candidates under the line, in columns, as a shell does. */
static void show_cands(const cands *c)
{
    size_t width = 0, cols, i;
    for (i = 0; i < c->n; i++)
        if (strlen(c->v[i]) > width)
            width = strlen(c->v[i]);
    width += 2;
    cols = width < 80 ? 80 / width : 1;
    fputc('\n', stdout);
    for (i = 0; i < c->n; i++)
        printf("%-*s%s", (int)width, c->v[i], (i + 1) % cols == 0 || i + 1 == c->n ? "\n" : "");
    fflush(stdout);
}

/* Tab: completes the word before the cursor, or, when several candidates
 * share no longer prefix, lists them. The text is the pending lines of a
 * multi-line entry plus the current line up to the cursor. */
static unsigned char complete_fn(EditLine *el, int ch)
{
    void *ud = NULL;
    repl *r;
    const LineInfo *li = el_line(el);
    size_t cur = (size_t)(li->cursor - li->buffer), start = 0, plen, common, i;
    strbuf text = {0};
    cands c = {0};
    int in_string = 0;
    unsigned char result = CC_ERROR;
    (void)ch;
    el_get(el, EL_CLIENTDATA, &ud);
    r = ud;
    if (sb_append(&text, r->pending.data ? r->pending.data : "", r->pending.len) != 0 ||
        sb_append(&text, li->buffer, cur) != 0) {
        free(text.data);
        return CC_ERROR;
    }
    if (addsl_complete(r->S, text.data, &start, &in_string, cand_add, &c) == ADDSL_OK && in_string) {
        const char *q = text.data + text.len;
        while (q > text.data && q[-1] != '"' && q[-1] != '\'')
            q--;
        start = (size_t)(q - text.data);
        complete_path(q, &c);
    }
    if (c.failed || c.n == 0 || start < r->pending.len)
        goto done;
    plen = text.len - start;
    common = strlen(c.v[0]);
    for (i = 1; i < c.n; i++) {
        size_t k = 0;
        while (k < common && c.v[i][k] == c.v[0][k])
            k++;
        common = k;
    }
    if (common > plen) {
        char save = c.v[0][common];
        c.v[0][common] = '\0';
        el_insertstr(el, c.v[0] + plen);
        c.v[0][common] = save;
        result = CC_REFRESH;
    } else if (c.n > 1) {
        show_cands(&c);
        result = CC_REDISPLAY;
    } else {
        result = CC_NORM;
    }
done:
    cands_free(&c);
    free(text.data);
    return result;
}

static int is_blank(const char *s)
{
    return s[strspn(s, " \t\r\n")] == '\0';
}

/* Runs the pending input once it is complete; returns the addsl status. */
static int repl_run(repl *r)
{
    int rc;
    if (addsl_incomplete(r->S, r->pending.data))
        return ADDSL_OK;
    remember(r, r->pending.data);
    if (!is_blank(r->pending.data)) {
        arm_interrupt(r->S);
        rc = addsl_dorepl(r->S, r->pending.data, "<stdin>");
        disarm_interrupt();
        fflush(stdout);
        report(r->S, rc);
    } else {
        rc = ADDSL_OK;
    }
    r->pending.len = 0;
    r->pending.data[0] = '\0';
    return rc;
}

static void repl_drop_pending(repl *r)
{
    r->pending.len = 0;
    if (r->pending.data)
        r->pending.data[0] = '\0';
}

/* The REPL keeps the state across inputs, errors included; Ctrl-D or exit() ends it. */
static int repl_loop(addsl_state *S, output *out)
{
    repl r;
    int status = 0;
    if (repl_open(&r, S) != 0) {
        repl_close(&r);
        fputs("addsl: cannot start the line editor\n", stderr);
        return 1;
    }
    printf("addsl %s (Ctrl-D to exit; help() for a tour)\n", ADDSL_VERSION);
    for (;;) {
        int n = 0, rc;
        const char *line;
        arm_prompt();
        line = el_gets(r.el, &n);
        if (!line) {
            fputc('\n', stdout);
            if (n < 0 && errno == EINTR) {
                repl_drop_pending(&r);
                continue;
            }
            break;
        }
        if (sb_append(&r.pending, line, strlen(line)) != 0) {
            fputs("addsl: cannot create the interpreter (out of memory)\n", stderr);
            repl_drop_pending(&r);
            continue;
        }
        rc = repl_run(&r);
        if (rc == ADDSL_EXIT) {
            status = addsl_exit_code(S);
            break;
        }
        if (out->failed) {
            status = 1;
            break;
        }
    }
    disarm_interrupt();
    signal(SIGINT, SIG_DFL);
    repl_close(&r);
    return status;
}

/* --- main --------------------------------------------------------------- */

/* Line-buffered on a terminal so each line shows as it is printed, unbuffered
 * with -u (a pipe to tee sees output at once), block-buffered otherwise. A
 * closed stdout gets /dev/null on its descriptor, so a file the script opens
 * cannot take descriptor 1 and receive the output; writes still fail. */
static void setup_stdout(const options *o, output *out)
{
    if (fcntl(STDOUT_FILENO, F_GETFD) < 0 && errno == EBADF) {
        int fd = open("/dev/null", O_WRONLY);
        if (fd >= 0 && fd != STDOUT_FILENO)
            close(fd);
        out->closed = 1;
    }
    if (o->unbuffered)
        setvbuf(stdout, NULL, _IONBF, 0);
    else if (isatty(STDOUT_FILENO))
        setvbuf(stdout, NULL, _IOLBF, 0);
}

/* A rank that fails while others wait in a collective would leave them
 * hanging: the command (not the library, which never exits) aborts the job,
 * and mpirun then stops every rank with a message. */
static void stop_other_ranks(addsl_state *S, int status)
{
    if (status == 0 || addsl_mpi_size(S) < 2)
        return;
    fflush(stdout);
    fprintf(stderr, "addsl: rank %d of %d failed (exit status %d): stopping the other ranks\n",
            addsl_mpi_rank(S), addsl_mpi_size(S), status);
    fflush(stderr);
    addsl_mpi_abort(S, status);
}

static int run_main(addsl_state *S, const options *o, output *out)
{
    int rc, status;
    if (o->kind == SRC_NONE)
        return repl_loop(S, out);
    rc = run_script(S, o);
    if (out->failed)
        return 1;
    report(S, rc);
    status = exit_status(S, rc);
    if (rc == ADDSL_OK && o->export_c && addsl_export_c_calls(S) == 0) {
        fprintf(stderr, "addsl: --export-c %s: the script made no export_c call\n", o->export_c);
        status = 1;
    }
    stop_other_ranks(S, status);
    if (o->interactive && rc != ADDSL_EXIT && !o->disasm)
        status = repl_loop(S, out);
    return status;
}

int main(int argc, char **argv)
{
    options o;
    output out;
    addsl_state *S;
    int rc, status;
    memset(&o, 0, sizeof o);
    memset(&out, 0, sizeof out);
    addsl_config_init(&o.cfg);
    o.cfg.write = cli_write;
    o.cfg.write_ud = &out;
    rc = parse_options(&o, argc, argv);
    if (rc >= 0) {
        free(o.codes);
        return rc;
    }
    if (o.kind == SRC_NONE && !isatty(STDIN_FILENO) && !o.interactive)
        o.kind = SRC_STDIN;
    if (o.kind == SRC_NONE && o.disasm) {
        free(o.codes);
        return usage_error("option '%s' needs a script", "--disasm");
    }
    if (o.kind == SRC_FILE) {
        FILE *f = open_script(o.script);
        if (!f) {
            free(o.codes);
            return cannot_open(o.script);
        }
        fclose(f);
    }
    setup_stdout(&o, &out);
    S = addsl_open(&o.cfg);
    if (!S) {
        free(o.codes);
        fputs("addsl: cannot create the interpreter (out of memory)\n", stderr);
        return 1;
    }
    out.S = S;
    status = run_main(S, &o, &out);
    addsl_close(S);
    free(o.codes);
    if (out.failed)
        return stdout_message(out.err);
    return finish_stdout(status);
}
