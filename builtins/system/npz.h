/* system/npz.h: NumPy .npz archives (a zip of .npy members, as numpy.savez writes
 * them) to and from dicts of tensors, through libzip. */
#ifndef AD_NPZ_H
#define AD_NPZ_H

#include "../../vm/dict.h"

/* Writes d (string keys, tensor values) as PATH, members "KEY.npy" stored
 * uncompressed in d's order; the file is replaced atomically. */
int ad_npz_save(ad_state *S, const char *path, const ad_dict *d);
/* Reads PATH into a new dict (*out), one tensor per member in archive order,
 * keyed by the member's name without ".npy"; deflated members are read too. */
int ad_npz_load(ad_state *S, const char *path, ad_dict **out);

#endif
