/* system/npy.h: reading and writing NumPy .npy files, for load()/save() and tests.
 * Errors name the file; nothing here trusts a size it read before checking it. */
#ifndef AD_NPY_H
#define AD_NPY_H

#include <stdio.h>

#include "../../vm/tensor/tensor.h"

/* Reads 'path' into a new tensor (*out, a new reference). An unopenable or
 * unreadable file fails with ADDSL_EIO; a malformed one with ADDSL_ERUNTIME. */
int ad_npy_load(ad_state *S, const char *path, ad_tensor **out);
/* Like ad_npy_load, on the 'size' bytes at 'data' (a whole .npy file held in
 * memory); 'name' labels errors. */
int ad_npy_parse(ad_state *S, const void *data, size_t size, const char *name, ad_tensor **out);
/* Writes 't' (borrowed, any layout) as a C-order .npy file laid out exactly
 * as numpy.save lays it out (version 1.0 unless the header needs 2.0). The
 * file is replaced atomically (builtins/system/fileio.h): a failed or killed save
 * leaves the old file as it was. */
int ad_npy_save(ad_state *S, const char *path, ad_tensor *t);
/* The .npy bytes of 't' written to f; ADDSL_EIO (errno set) when a write fails. */
int ad_npy_write(ad_state *S, FILE *f, ad_tensor *t);
/* The .npy header of the contiguous tensor 'c' (magic to the '\n' that ends
 * the padding) appended to 'out' (an ad_buf, vm/buf.h); c's raw data follows it. */
struct ad_buf;
int ad_npy_header(ad_state *S, const ad_tensor *c, struct ad_buf *out);
/* Reads one .npy from the stream f, which holds 'size' bytes from its current
 * position (-1: unknown, a regular file's size is then asked of fstat);
 * 'name' labels errors. */
int ad_npy_read(ad_state *S, FILE *f, int64_t size, const char *name, ad_tensor **out);

#endif
