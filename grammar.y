/* grammar.y: the Lemon grammar of addsl; builds the syntax tree.
 * Every node lives in the parse arena, so no symbol needs a %destructor:
 * a syntax error abandons the stack and the arena frees everything at once. */

%name ad_parser
%token_prefix TK_
%token_type { ad_token }
%extra_context { ad_parse *P }
%stack_size 2000
/* 'op' starts an op definition only at the head of a statement; elsewhere it
 * is a plain name, so allreduce(t, op="max") reads as in PyTorch. */
%fallback NAME OP.

%include {
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include "vm/ast.h"
#include "vm/fstring.h"
#define A_ (P->arena)
static ad_node *mk(ad_parse *P, ad_nkind k, const ad_token *t) { return ad_node_new(P->arena, k, t); }
static ad_node *bin(ad_parse *P, ad_nkind k, const ad_token *op, ad_node *a, ad_node *b) {
    ad_node *n = mk(P, k, op); n->op = op->type; n->a = a; n->b = b; return n;
}
}

%code {
size_t ad_parser_size(void) { return sizeof(yyParser); }
}

%syntax_error {
    if (!P->error) {
        P->error = true;
        P->err_line = yyminor.line;
        P->err_col = yyminor.col;
        if (yymajor == 0) snprintf(P->err_msg, sizeof P->err_msg, "unexpected end of input");
        else if (yymajor == TK_NEWLINE) snprintf(P->err_msg, sizeof P->err_msg, "unexpected end of line");
        else snprintf(P->err_msg, sizeof P->err_msg, "unexpected '%.*s'", yyminor.len > 40 ? 40 : yyminor.len, yyminor.start);
    }
}
%stack_overflow {
    P->error = true;
    snprintf(P->err_msg, sizeof P->err_msg, "expression nested too deeply");
}
%parse_failure {
    P->error = true;
}

%right ARROW.
%left OR.
%left AND.
%right NOT.
%nonassoc EQ NE LT LE GT GE IN.
%left PLUS MINUS.
%left STAR SLASH DSLASH PERCENT AT.
%right UMINUS.
%right POW.
%left DOT.
%left LPAREN LBRACKET.

%type stmts { ad_node * }
%type block { ad_node * }
%type stmt { ad_node * }
%type if_stmt { ad_node * }
%type expr { ad_node * }
%type exprlist { ad_nlist * }
%type namelist { ad_nlist * }
%type params { ad_nlist * }
%type paramlist { ad_nlist * }
%type param { ad_node * }
%type args { ad_nlist * }
%type arglist { ad_nlist * }
%type arg { ad_node * }
%type idxlist { ad_nlist * }
%type idx { ad_node * }
%type eopt { ad_node * }
%type opouts { ad_nlist * }
%type namelist_opt { ad_nlist * }
%type opentries { ad_nlist * }
%type opentry { ad_node * }
%type dictentries { ad_nlist * }
%type compfor { ad_nlist * }
%type tuplerhs { ad_node * }
%type compclause { ad_node * }
%type dictentry { ad_node * }

program ::= stmts(A). { P->root = A; }

stmts(A) ::= . { A = mk(P, N_BLOCK, NULL); A->list = ad_nlist_new(A_); }
stmts(A) ::= stmts(B) sep. { A = B; }
stmts(A) ::= stmts(B) stmt(C) sep. { A = B; A->list = ad_nlist_add(A_, A->list, C); }

sep ::= NEWLINE.
sep ::= SEMI.

block(A) ::= LBRACE(T) stmts(B) RBRACE. { A = B; A->line = T.line; A->col = T.col; }
block(A) ::= LBRACE(T) stmts(B) stmt(C) RBRACE. { A = B; A->line = T.line; A->col = T.col; A->list = ad_nlist_add(A_, A->list, C); }

stmt(A) ::= LET NAME(N) ASSIGN expr(E). { A = mk(P, N_LET, &N); ad_node_set_name(A_, A, &N); A->a = E; }
stmt(A) ::= LET(T) LPAREN namelist(L) RPAREN ASSIGN expr(E). { A = mk(P, N_LETDESTR, &T); A->list = L; A->a = E; }
stmt(A) ::= LET(T) LPAREN namelist(L) COMMA RPAREN ASSIGN expr(E). { A = mk(P, N_LETDESTR, &T); A->list = L; A->a = E; }
stmt(A) ::= LET(T) NAME(N) COMMA namelist(L) ASSIGN expr(E). {
    A = mk(P, N_LETDESTR, &T);
    ad_node *n = mk(P, N_NAME, &N); ad_node_set_name(A_, n, &N);
    ad_nlist *l = ad_nlist_add(A_, NULL, n);
    for (int i = 0; L && i < L->n; i++) l = ad_nlist_add(A_, l, L->items[i]);
    A->list = l; A->a = E;
}
/* let (a, b) = 1, 2 and a, b = b, a: a bare tuple on the right, targets on the left. */
tuplerhs(A) ::= expr(E) COMMA(T) exprlist(L). {
    A = mk(P, N_TUPLE, &T); A->line = E->line; A->col = E->col;
    ad_nlist *l = ad_nlist_add(A_, NULL, E);
    for (int i = 0; L && i < L->n; i++) l = ad_nlist_add(A_, l, L->items[i]);
    A->list = l;
}
stmt(A) ::= LET(T) LPAREN namelist(L) RPAREN ASSIGN tuplerhs(E). { A = mk(P, N_LETDESTR, &T); A->list = L; A->a = E; }
stmt(A) ::= LET(T) NAME(N) COMMA namelist(L) ASSIGN tuplerhs(E). {
    A = mk(P, N_LETDESTR, &T);
    ad_node *n = mk(P, N_NAME, &N); ad_node_set_name(A_, n, &N);
    ad_nlist *l = ad_nlist_add(A_, NULL, n);
    for (int i = 0; L && i < L->n; i++) l = ad_nlist_add(A_, l, L->items[i]);
    A->list = l; A->a = E;
}
stmt(A) ::= tuplerhs(T) ASSIGN(O) expr(E). { A = mk(P, N_ASSIGN, &O); A->a = T; A->b = E; A->op = 0; }
stmt(A) ::= tuplerhs(T) ASSIGN(O) tuplerhs(E). { A = mk(P, N_ASSIGN, &O); A->a = T; A->b = E; A->op = 0; }
stmt(A) ::= expr(T) ASSIGN(O) expr(E). { A = mk(P, N_ASSIGN, &O); A->a = T; A->b = E; A->op = 0; }
stmt(A) ::= expr(T) ADDEQ(O) expr(E). { A = mk(P, N_ASSIGN, &O); A->a = T; A->b = E; A->op = TK_PLUS; }
stmt(A) ::= expr(T) SUBEQ(O) expr(E). { A = mk(P, N_ASSIGN, &O); A->a = T; A->b = E; A->op = TK_MINUS; }
stmt(A) ::= expr(T) MULEQ(O) expr(E). { A = mk(P, N_ASSIGN, &O); A->a = T; A->b = E; A->op = TK_STAR; }
stmt(A) ::= expr(T) DIVEQ(O) expr(E). { A = mk(P, N_ASSIGN, &O); A->a = T; A->b = E; A->op = TK_SLASH; }
stmt(A) ::= expr(T) DSLASHEQ(O) expr(E). { A = mk(P, N_ASSIGN, &O); A->a = T; A->b = E; A->op = TK_DSLASH; }
stmt(A) ::= expr(T) MODEQ(O) expr(E). { A = mk(P, N_ASSIGN, &O); A->a = T; A->b = E; A->op = TK_PERCENT; }
stmt(A) ::= expr(T) POWEQ(O) expr(E). { A = mk(P, N_ASSIGN, &O); A->a = T; A->b = E; A->op = TK_POW; }
stmt(A) ::= FN NAME(N) LPAREN params(L) RPAREN block(B). { A = mk(P, N_FNDEF, &N); ad_node_set_name(A_, A, &N); A->list = L; A->b = B; }
stmt(A) ::= RETURN(T). { A = mk(P, N_RETURN, &T); }
stmt(A) ::= RETURN(T) exprlist(L). {
    A = mk(P, N_RETURN, &T);
    if (L && L->n == 1) A->a = L->items[0];
    else { ad_node *t = mk(P, N_TUPLE, &T); t->list = L; A->a = t; }
}
stmt(A) ::= if_stmt(B). { A = B; }
stmt(A) ::= WHILE(T) expr(C) block(B). { A = mk(P, N_WHILE, &T); A->a = C; A->b = B; }
stmt(A) ::= FOR(T) NAME(N) IN expr(E) block(B). {
    A = mk(P, N_FOR, &T); A->a = E; A->b = B;
    ad_node *n = mk(P, N_NAME, &N); ad_node_set_name(A_, n, &N);
    A->list = ad_nlist_add(A_, NULL, n);
}
stmt(A) ::= FOR(T) LPAREN namelist(L) RPAREN IN expr(E) block(B). { A = mk(P, N_FOR, &T); A->a = E; A->b = B; A->list = L; A->op = 1; }
stmt(A) ::= FOR(T) NAME(N) COMMA namelist(L) IN expr(E) block(B). {
    A = mk(P, N_FOR, &T); A->a = E; A->b = B; A->op = 1;
    ad_node *n = mk(P, N_NAME, &N); ad_node_set_name(A_, n, &N);
    ad_nlist *l = ad_nlist_add(A_, NULL, n);
    for (int i = 0; L && i < L->n; i++) l = ad_nlist_add(A_, l, L->items[i]);
    A->list = l;
}
stmt(A) ::= BREAK(T). { A = mk(P, N_BREAK, &T); }
stmt(A) ::= CONTINUE(T). { A = mk(P, N_CONTINUE, &T); }
stmt(A) ::= NOGRAD(T) block(B). { A = mk(P, N_NOGRAD, &T); A->b = B; }
stmt(A) ::= ANOMALY(T) block(B). { A = mk(P, N_ANOMALY, &T); A->b = B; }
stmt(A) ::= OP NAME(N) LPAREN params(L) RPAREN opouts(O) LBRACE opentries(E) RBRACE. {
    A = mk(P, N_OPDEF, &N); ad_node_set_name(A_, A, &N); A->list = L; A->list2 = O; A->list3 = E;
}
stmt(A) ::= OP NAME(N) LPAREN params(L) RPAREN opouts(O) LBRACE opentries(E) opentry(F) RBRACE. {
    A = mk(P, N_OPDEF, &N); ad_node_set_name(A_, A, &N); A->list = L; A->list2 = O; A->list3 = ad_nlist_add(A_, E, F);
}
/* op ALIAS = NAME  is  let ALIAS = op_alias(NAME, "ALIAS"): the same op under
 * another name (PyTorch's concat for cat), with its id and its grad_fn name. */
stmt(A) ::= OP(T) NAME(N) ASSIGN NAME(C). {
    A = mk(P, N_LET, &N); ad_node_set_name(A_, A, &N);
    ad_node *call = mk(P, N_CALL, &T);
    ad_node *f = mk(P, N_NAME, &T); f->str = "op_alias"; f->len = 8;
    call->a = f;
    ad_node *target = mk(P, N_NAME, &C); ad_node_set_name(A_, target, &C);
    ad_node *nm = mk(P, N_STR, &N); ad_node_set_name(A_, nm, &N);
    call->list = ad_nlist_add(A_, NULL, target);
    call->list = ad_nlist_add(A_, call->list, nm);
    A->a = call;
}
/* extern "LIB" NAME(TYPES) -> RET  is  let NAME = extern_fn("LIB", "NAME", "RET(TYPES)") */
stmt(A) ::= EXTERN(T) STRING(L) NAME(N) LPAREN namelist_opt(TS) RPAREN RARROW NAME(R). {
    A = mk(P, N_LET, &N); ad_node_set_name(A_, A, &N);
    ad_node *call = mk(P, N_CALL, &T);
    ad_node *f = mk(P, N_NAME, &T); f->str = "extern_fn"; f->len = 9;
    call->a = f;
    ad_node *lib = mk(P, N_STR, &L); ad_node_set_string(A_, lib, &L);
    ad_node *nm = mk(P, N_STR, &N); ad_node_set_name(A_, nm, &N);
    size_t cap = 16 + (size_t)R.len;
    for (int i = 0; TS && i < TS->n; i++) cap += TS->items[i]->len + 1;
    char *sig = ad_arena_alloc(A_, cap);
    ad_node *sg = mk(P, N_STR, &R);
    if (sig) {
        size_t k = 0;
        memcpy(sig + k, R.start, (size_t)R.len); k += (size_t)R.len;
        sig[k++] = '(';
        for (int i = 0; TS && i < TS->n; i++) {
            if (i) sig[k++] = ',';
            memcpy(sig + k, TS->items[i]->str, TS->items[i]->len); k += TS->items[i]->len;
        }
        sig[k++] = ')'; sig[k] = '\0';
        sg->str = sig; sg->len = k;
    }
    call->list = ad_nlist_add(A_, NULL, lib);
    call->list = ad_nlist_add(A_, call->list, nm);
    call->list = ad_nlist_add(A_, call->list, sg);
    A->a = call;
}
/* import "path.ad" as m; 'as' stays a plain name (scripts use it as one). */
stmt(A) ::= IMPORT(T) STRING(F) NAME(K) NAME(N). {
    A = mk(P, N_IMPORT, &T); ad_node_set_string(A_, A, &F);
    ad_node *n = mk(P, N_NAME, &N); ad_node_set_name(A_, n, &N);
    A->a = n;
    if (K.len != 2 || memcmp(K.start, "as", 2) != 0) {
        P->error = true; P->err_line = K.line; P->err_col = K.col;
        snprintf(P->err_msg, sizeof P->err_msg, "expected 'as' after the file of an import: import \"model.ad\" as m");
    }
}
stmt(A) ::= IMPORT(T) STRING. {
    A = mk(P, N_IMPORT, &T);
    P->error = true; P->err_line = T.line; P->err_col = T.col;
    snprintf(P->err_msg, sizeof P->err_msg, "an import names its module: import \"model.ad\" as m");
}
stmt(A) ::= IMPORT(T) NAME(N). {
    A = mk(P, N_IMPORT, &T);
    P->error = true; P->err_line = N.line; P->err_col = N.col;
    snprintf(P->err_msg, sizeof P->err_msg, "import takes a file in quotes: import \"model.ad\" as m (there is no '%.*s' to import: PyTorch's functions are global, torch.X is X)", N.len > 40 ? 40 : N.len, N.start);
}
namelist_opt(A) ::= . { A = NULL; }
namelist_opt(A) ::= namelist(L). { A = L; }

opouts(A) ::= . { A = NULL; }
opouts(A) ::= RARROW LPAREN namelist(L) RPAREN. { A = L; }
opentries(A) ::= . { A = ad_nlist_new(A_); }
opentries(A) ::= opentries(B) sep. { A = B; }
opentries(A) ::= opentries(B) opentry(C) sep. { A = ad_nlist_add(A_, B, C); }
opentry(A) ::= namelist(L) COLON expr(E). {
    A = mk(P, N_OPENTRY, NULL);
    /* L is NULL or empty only after an allocation failed (the arena reports it). */
    if (L && L->n) { A->line = L->items[0]->line; A->col = L->items[0]->col; }
    A->list = L; A->a = E;
}
stmt(A) ::= block(B). { A = B; }
stmt(A) ::= expr(E). { A = mk(P, N_EXPRSTMT, NULL); A->line = E->line; A->col = E->col; A->a = E; }

if_stmt(A) ::= IF(T) expr(C) block(B). { A = mk(P, N_IF, &T); A->a = C; A->b = B; }
if_stmt(A) ::= IF(T) expr(C) block(B) ELSE block(E). { A = mk(P, N_IF, &T); A->a = C; A->b = B; A->c = E; }
if_stmt(A) ::= IF(T) expr(C) block(B) ELSE if_stmt(E). { A = mk(P, N_IF, &T); A->a = C; A->b = B; A->c = E; }

namelist(A) ::= NAME(N). { ad_node *n = mk(P, N_NAME, &N); ad_node_set_name(A_, n, &N); A = ad_nlist_add(A_, NULL, n); }
namelist(A) ::= namelist(L) COMMA NAME(N). { ad_node *n = mk(P, N_NAME, &N); ad_node_set_name(A_, n, &N); A = ad_nlist_add(A_, L, n); }

params(A) ::= . { A = ad_nlist_new(A_); }
params(A) ::= paramlist(L). { A = L; }
params(A) ::= paramlist(L) COMMA. { A = L; }
paramlist(A) ::= param(B). { A = ad_nlist_add(A_, NULL, B); }
paramlist(A) ::= paramlist(L) COMMA param(B). { A = ad_nlist_add(A_, L, B); }
param(A) ::= NAME(N). { A = mk(P, N_PARAM, &N); ad_node_set_name(A_, A, &N); }
param(A) ::= NAME(N) ASSIGN expr(E). { A = mk(P, N_PARAM, &N); ad_node_set_name(A_, A, &N); A->a = E; }
param(A) ::= STAR NAME(N). { A = mk(P, N_PARAM, &N); ad_node_set_name(A_, A, &N); A->op = TK_STAR; }

exprlist(A) ::= expr(E). { A = ad_nlist_add(A_, NULL, E); }
exprlist(A) ::= exprlist(L) COMMA expr(E). { A = ad_nlist_add(A_, L, E); }

expr(A) ::= expr(B) OR(O) expr(C). { A = bin(P, N_OR, &O, B, C); }
expr(A) ::= expr(B) AND(O) expr(C). { A = bin(P, N_AND, &O, B, C); }
expr(A) ::= NOT(O) expr(B). { A = mk(P, N_NOT, &O); A->a = B; }
expr(A) ::= expr(B) EQ(O) expr(C). { A = bin(P, N_BINOP, &O, B, C); }
expr(A) ::= expr(B) NE(O) expr(C). { A = bin(P, N_BINOP, &O, B, C); }
expr(A) ::= expr(B) LT(O) expr(C). { A = bin(P, N_BINOP, &O, B, C); }
expr(A) ::= expr(B) LE(O) expr(C). { A = bin(P, N_BINOP, &O, B, C); }
expr(A) ::= expr(B) GT(O) expr(C). { A = bin(P, N_BINOP, &O, B, C); }
expr(A) ::= expr(B) GE(O) expr(C). { A = bin(P, N_BINOP, &O, B, C); }
expr(A) ::= expr(B) IN(O) expr(C). { A = bin(P, N_BINOP, &O, B, C); }
expr(A) ::= expr(B) NOT(O) IN expr(C). [IN] { A = mk(P, N_NOT, &O); A->a = bin(P, N_BINOP, &O, B, C); A->a->op = TK_IN; }
expr(A) ::= expr(B) PLUS(O) expr(C). { A = bin(P, N_BINOP, &O, B, C); }
expr(A) ::= expr(B) MINUS(O) expr(C). { A = bin(P, N_BINOP, &O, B, C); }
expr(A) ::= expr(B) STAR(O) expr(C). { A = bin(P, N_BINOP, &O, B, C); }
expr(A) ::= expr(B) SLASH(O) expr(C). { A = bin(P, N_BINOP, &O, B, C); }
expr(A) ::= expr(B) PERCENT(O) expr(C). { A = bin(P, N_BINOP, &O, B, C); }
expr(A) ::= expr(B) DSLASH(O) expr(C). { A = bin(P, N_BINOP, &O, B, C); }
expr(A) ::= expr(B) AT(O) expr(C). { A = bin(P, N_BINOP, &O, B, C); }
expr(A) ::= expr(B) POW(O) expr(C). { A = bin(P, N_BINOP, &O, B, C); }
expr(A) ::= MINUS(O) expr(B). [UMINUS] { A = mk(P, N_UNOP, &O); A->op = TK_MINUS; A->a = B; }
expr(A) ::= PLUS(O) expr(B). [UMINUS] { A = mk(P, N_UNOP, &O); A->op = TK_PLUS; A->a = B; }

expr(A) ::= expr(F) LPAREN(O) args(L) RPAREN. { A = mk(P, N_CALL, &O); A->line = F->line; A->col = F->col; A->a = F; A->list = L; }
expr(A) ::= expr(B) LBRACKET(O) idxlist(L) RBRACKET. { A = mk(P, N_INDEX, &O); A->a = B; A->list = L; }
expr(A) ::= expr(B) DOT NAME(N). { A = mk(P, N_ATTR, &N); ad_node_set_name(A_, A, &N); A->a = B; }
expr(A) ::= expr(B) DOT NAME(N) LPAREN args(L) RPAREN. {
    A = mk(P, N_METHOD, &N); ad_node_set_name(A_, A, &N); A->a = B; A->list = L;
    /* s.format(...) is Python's str.format, not format(s, spec): a hidden builtin tells them apart. */
    if (A->str && strcmp(A->str, "format") == 0) { A->str = "$str_format"; A->len = 11; }
}

expr(A) ::= NUMBER(T). { A = mk(P, N_NUM, &T); A->num = T.num; A->is_int = T.is_int; }
expr(A) ::= STRING(T). { A = mk(P, N_STR, &T); ad_node_set_string(A_, A, &T); }
expr(A) ::= FSTRING(T). { A = ad_fstring_parse(P, &T); }
expr(A) ::= TRUE(T). { A = mk(P, N_TRUE, &T); }
expr(A) ::= FALSE(T). { A = mk(P, N_FALSE, &T); }
expr(A) ::= NONE(T). { A = mk(P, N_NONE, &T); }
expr(A) ::= ELLIPSIS(T). { A = mk(P, N_ELLIPSIS, &T); }
expr(A) ::= NAME(T). { A = mk(P, N_NAME, &T); ad_node_set_name(A_, A, &T); }
expr(A) ::= LPAREN expr(E) RPAREN. { A = E; }
expr(A) ::= LPAREN(T) RPAREN. { A = mk(P, N_TUPLE, &T); A->list = ad_nlist_new(A_); }
expr(A) ::= LPAREN(T) expr(E) COMMA RPAREN. { A = mk(P, N_TUPLE, &T); A->list = ad_nlist_add(A_, NULL, E); }
expr(A) ::= LPAREN(T) expr(E) COMMA exprlist(L) RPAREN. {
    A = mk(P, N_TUPLE, &T);
    ad_nlist *l = ad_nlist_add(A_, NULL, E);
    for (int i = 0; L && i < L->n; i++) l = ad_nlist_add(A_, l, L->items[i]);
    A->list = l;
}
expr(A) ::= LBRACKET(T) RBRACKET. { A = mk(P, N_LIST, &T); A->list = ad_nlist_new(A_); }
expr(A) ::= LBRACKET(T) exprlist(L) RBRACKET. { A = mk(P, N_LIST, &T); A->list = L; }
expr(A) ::= LBRACKET(T) exprlist(L) COMMA RBRACKET. { A = mk(P, N_LIST, &T); A->list = L; }
/* A dict: the lexer tells a dict's '{' (LDICT) from a block's by what precedes it. */
expr(A) ::= LDICT(T) RBRACE. { A = mk(P, N_DICT, &T); A->list = ad_nlist_new(A_); }
expr(A) ::= LDICT(T) dictentries(L) RBRACE. { A = mk(P, N_DICT, &T); A->list = L; }
expr(A) ::= LDICT(T) dictentries(L) COMMA RBRACE. { A = mk(P, N_DICT, &T); A->list = L; }
/* Comprehensions: [E for x in xs if c ...] and {K: V for ...}; each clause a node. */
expr(A) ::= LBRACKET(T) expr(E) compfor(F) RBRACKET. { A = mk(P, N_LISTCOMP, &T); A->a = E; A->list = F; }
expr(A) ::= LDICT(T) expr(K) COLON expr(V) compfor(F) RBRACE. { A = mk(P, N_DICTCOMP, &T); A->a = K; A->b = V; A->list = F; }
compfor(A) ::= compclause(C). { A = ad_nlist_add(A_, NULL, C); }
compfor(A) ::= compfor(L) compclause(C). { A = ad_nlist_add(A_, L, C); }
compclause(A) ::= FOR(T) NAME(N) IN expr(E). {
    A = mk(P, N_COMPFOR, &T); A->a = E;
    ad_node *n = mk(P, N_NAME, &N); ad_node_set_name(A_, n, &N);
    A->list = ad_nlist_add(A_, NULL, n);
}
compclause(A) ::= FOR(T) LPAREN namelist(L) RPAREN IN expr(E). { A = mk(P, N_COMPFOR, &T); A->a = E; A->list = L; A->op = 1; }
compclause(A) ::= FOR(T) NAME(N) COMMA namelist(L) IN expr(E). {
    A = mk(P, N_COMPFOR, &T); A->a = E; A->op = 1;
    ad_node *n = mk(P, N_NAME, &N); ad_node_set_name(A_, n, &N);
    ad_nlist *l = ad_nlist_add(A_, NULL, n);
    for (int i = 0; L && i < L->n; i++) l = ad_nlist_add(A_, l, L->items[i]);
    A->list = l;
}
compclause(A) ::= IF(T) expr(C). { A = mk(P, N_COMPIF, &T); A->a = C; }
dictentries(A) ::= dictentry(E). { A = ad_nlist_add(A_, NULL, E); }
dictentries(A) ::= dictentries(L) COMMA dictentry(E). { A = ad_nlist_add(A_, L, E); }
dictentry(A) ::= expr(K) COLON(T) expr(V). { A = mk(P, N_DICTENTRY, &T); A->line = K->line; A->col = K->col; A->a = K; A->b = V; }
expr(A) ::= FN(T) LPAREN params(L) RPAREN ARROW expr(E). [ARROW] {
    A = mk(P, N_LAMBDA, &T); A->list = L;
    ad_node *r = mk(P, N_RETURN, &T); r->line = E->line; r->col = E->col; r->a = E;
    ad_node *b = mk(P, N_BLOCK, &T); b->list = ad_nlist_add(A_, NULL, r);
    A->b = b;
}
expr(A) ::= FN(T) LPAREN params(L) RPAREN block(B). { A = mk(P, N_LAMBDA, &T); A->list = L; A->b = B; }

args(A) ::= . { A = ad_nlist_new(A_); }
args(A) ::= arglist(L). { A = L; }
args(A) ::= arglist(L) COMMA. { A = L; }
arglist(A) ::= arg(B). { A = ad_nlist_add(A_, NULL, B); }
arglist(A) ::= arglist(L) COMMA arg(B). { A = ad_nlist_add(A_, L, B); }
arg(A) ::= expr(E). { A = E; }
arg(A) ::= NAME(N) ASSIGN expr(E). { A = mk(P, N_KWARG, &N); ad_node_set_name(A_, A, &N); A->a = E; }

idxlist(A) ::= idx(B). { A = ad_nlist_add(A_, NULL, B); }
idxlist(A) ::= idxlist(L) COMMA idx(B). { A = ad_nlist_add(A_, L, B); }
idx(A) ::= expr(E). { A = E; }
idx(A) ::= eopt(S) COLON(T) eopt(E). { A = mk(P, N_SLICE, &T); A->a = S; A->b = E; }
idx(A) ::= eopt(S) COLON(T) eopt(E) COLON eopt(K). { A = mk(P, N_SLICE, &T); A->a = S; A->b = E; A->c = K; }
eopt(A) ::= . { A = NULL; }
eopt(A) ::= expr(E). { A = E; }
