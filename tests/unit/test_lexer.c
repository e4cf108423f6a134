/* test_lexer.c: TAP tests of the re2c scanner: token kinds, numbers,
 * positions, newline rules inside brackets, and lexical errors. */
#include <string.h>

#include "grammar.h"
#include "lexer.h"
#include "tap.h"

static int lex_all(const char *src, int *types, int max, ad_token *toks) {
    ad_lexer lx;
    ad_lex_init(&lx, src, strlen(src));
    int n = 0;
    for (;;) {
        ad_token t;
        int type = ad_lex_next(&lx, &t);
        if (n < max) { types[n] = type; if (toks) toks[n] = t; }
        n++;
        if (type <= 0) break;
    }
    return n;
}

int main(void) {
    plan(21);
    int ty[64];
    ad_token tk[64];

    int n = lex_all("let x = 3", ty, 64, tk);
    ok(n == 5 && ty[0] == TK_LET && ty[1] == TK_NAME && ty[2] == TK_ASSIGN && ty[3] == TK_NUMBER && ty[4] == 0, "let statement tokens");
    ok(tk[3].is_int && tk[3].num == 3.0, "3 is an integer literal");
    ok(tk[1].line == 1 && tk[1].col == 5 && tk[1].len == 1, "name at 1:5");

    lex_all("2.5 .5 1e-3 7", ty, 64, tk);
    ok(!tk[0].is_int && tk[0].num == 2.5, "2.5 is a float");
    ok(!tk[1].is_int && tk[1].num == 0.5, ".5 is a float");
    ok(!tk[2].is_int && tk[2].num == 1e-3, "1e-3 is a float");
    ok(tk[3].is_int && tk[3].num == 7, "7 is an integer");

    n = lex_all("f(1,\n 2)\nx", ty, 64, tk);
    ok(n == 9 && ty[6] == TK_NEWLINE && ty[7] == TK_NAME, "newline inside () is dropped, outside kept");
    ok(tk[7].line == 3 && tk[7].col == 1, "x on line 3, column 1");

    n = lex_all("[1,\n2]", ty, 64, NULL);
    ok(n == 6, "newline inside [] is dropped");

    n = lex_all("{\n}", ty, 64, NULL);
    ok(n == 4 && ty[1] == TK_NEWLINE, "newline inside {} is a separator");

    n = lex_all("a # comment\n\n\nb", ty, 64, NULL);
    ok(n == 4 && ty[1] == TK_NEWLINE && ty[2] == TK_NAME, "comments skipped, blank lines collapse");

    lex_all("\"a\\n\\\"b\"", ty, 64, tk);
    ok(ty[0] == TK_STRING && tk[0].len == 8, "string with escapes is one token");

    n = lex_all("x ** -1.5 <= 2 != 3 => @ ...", ty, 64, NULL);
    ok(ty[1] == TK_POW && ty[2] == TK_MINUS && ty[4] == TK_LE && ty[6] == TK_NE && ty[8] == TK_ARROW && ty[9] == TK_AT && ty[10] == TK_ELLIPSIS,
       "operators");

    n = lex_all("x += 1; y -= 2", ty, 64, NULL);
    ok(ty[1] == TK_ADDEQ && ty[3] == TK_SEMI && ty[5] == TK_SUBEQ, "compound assignment and ';'");

    n = lex_all("true false none and or not no_grad", ty, 64, NULL);
    ok(ty[0] == TK_TRUE && ty[1] == TK_FALSE && ty[2] == TK_NONE && ty[3] == TK_AND && ty[4] == TK_OR && ty[5] == TK_NOT && ty[6] == TK_NOGRAD,
       "keywords");
    n = lex_all("truex lets", ty, 64, NULL);
    ok(ty[0] == TK_NAME && ty[1] == TK_NAME, "keywords need a word boundary");

    ad_lexer lx;
    ad_token t;
    ad_lex_init(&lx, "x = \"abc", 8);
    ad_lex_next(&lx, &t); ad_lex_next(&lx, &t);
    ok(ad_lex_next(&lx, &t) < 0 && lx.error && strstr(lx.error, "unterminated"), "unterminated string is an error");
    ok(t.col == 5, "error column points at the quote");

    ad_lex_init(&lx, "a $ b", 5);
    ad_lex_next(&lx, &t);
    ok(ad_lex_next(&lx, &t) < 0 && t.col == 3, "unexpected character at 1:3");

    const char nul[] = {'a', '\0', 'b'};
    ad_lex_init(&lx, nul, 3);
    ad_lex_next(&lx, &t);
    ok(ad_lex_next(&lx, &t) < 0, "a NUL byte in the source is an error, not end of input");
    return done_testing();
}
