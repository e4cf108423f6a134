/* autograd/gradfn.h: grad_fn values (t.grad_fn): a graph node, or the AccumulateGrad
 * of a leaf that requires grad, as a script sees them (vm/autograd/gradfn.c). */
#ifndef AD_GRADFN_H
#define AD_GRADFN_H

#include <stddef.h>

#include "value.h"

struct ad_node;
struct ad_buf;

/* Exactly one of node and leaf is set; each is an owned reference. */
typedef struct ad_gradfn {
    ad_obj hdr;
    struct ad_node *node;   /* a recorded op call */
    ad_tensor *leaf;        /* AccumulateGrad of this leaf */
} ad_gradfn;

/* t.grad_fn: none for a leaf, else the node that made t. */
int ad_gradfn_of(ad_state *S, const ad_tensor *t, ad_value *out);
/* g.next_functions, g.variable; another name is an error. */
int ad_gradfn_attr(ad_state *S, const ad_gradfn *g, const char *attr, ad_value *out);
/* PyTorch's class name ("MulBackward0", "AccumulateGrad") into buf; returns its length. */
size_t ad_gradfn_name(const ad_gradfn *g, char *buf, size_t size);
/* The same for a node (the suffix of a printed tensor's grad_fn=<...>). */
size_t ad_node_class_name(const struct ad_node *node, char *buf, size_t size);
/* Printed as PyTorch prints one, without the address: <MulBackward0>. */
int ad_gradfn_format(const ad_gradfn *g, struct ad_buf *b);
void ad_gradfn_free(ad_state *S, ad_gradfn *g);

#endif
