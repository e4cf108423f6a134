/* system/textload.h: numbers in a text file (.csv, .txt) as a 2-D tensor, the way
 * numpy.loadtxt(ndmin=2) reads them. */
#ifndef AD_TEXTLOAD_H
#define AD_TEXTLOAD_H

#include "../../vm/tensor/tensor.h"

/* delim: the separator character, or 0 for runs of whitespace; skip: lines
 * skipped first (numpy's skiprows); '#' starts a comment, blank lines are
 * skipped; every row must have as many columns as the first. */
int ad_text_load(ad_state *S, const char *path, char delim, int64_t skip, ad_dtype dt, ad_tensor **out);

#endif
