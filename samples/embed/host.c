/* host.c: a host program embedding addsl: wraps its own buffers, registers a
 * kernel, runs a model script, reads the gradient back. Build it with
 *   cc host.c $(pkg-config --cflags --libs addsl) -o host */
#include <stdint.h>
#include <stdio.h>

#include <addsl.h>

/* The host's kernel: out[i] = x[i] * k (float32). */
static void scale_f32(float *out, const float *x, int64_t n, double k) {
    for (int64_t i = 0; i < n; i++) out[i] = (float)(x[i] * k);
}

/* The op's forward calls the host kernel; its VJP formula is written beside it. */
static const char *const model =
    "fn scale(x, k) { let out = zeros_like(x)\n call_kernel(\"host_scale_f32\", out, x.contiguous(), x.numel(), k)\n return out }\n"
    "op scaled(x, k=1.0) {\n"
    "    forward: scale(x, k)\n"
    "    x: grad * k\n"
    "    k: non_differentiable\n"
    "}\n"
    "fn loss(w, x, y) { return mean((scaled(x @ w, 2.0) - y) ** 2) }\n";

static int check(addsl_state *S, int rc, const char *what) {
    if (rc != ADDSL_OK) fprintf(stderr, "%s failed (%d): %s\n", what, rc, addsl_errmsg(S));
    return rc;
}

int main(void) {
    addsl_config cfg;
    addsl_config_init(&cfg);
    cfg.memory_limit = 64u << 20;   /* 64 MiB of tensor storage */
    addsl_state *S = addsl_open(&cfg);
    if (!S) { fputs("out of memory\n", stderr); return 1; }

    /* The host's own buffers, wrapped without a copy (borrowed). */
    float w_buf[2] = {0.5f, -1.0f};
    float x_buf[6] = {1, 2, 3, 4, 5, 6};
    float y_buf[3] = {1, 0, -1};
    int64_t wshape[2] = {2, 1}, xshape[2] = {3, 2}, yshape[2] = {3, 1};
    addsl_tensor *w = addsl_tensor_wrap(S, ADDSL_FLOAT32, 2, wshape, w_buf, NULL, NULL);
    addsl_tensor *x = addsl_tensor_wrap(S, ADDSL_FLOAT32, 2, xshape, x_buf, NULL, NULL);
    addsl_tensor *y = addsl_tensor_wrap(S, ADDSL_FLOAT32, 2, yshape, y_buf, NULL, NULL);
    int rc = (w && x && y) ? ADDSL_OK : ADDSL_ENOMEM;
    if (!rc) rc = check(S, addsl_tensor_set_requires_grad(S, w, 1), "requires_grad");
    if (!rc) rc = check(S, addsl_register_kernel(S, "host_scale_f32", (void (*)(void))scale_f32, "v(p,p,i64,f64)"), "register_kernel");
    if (!rc) rc = check(S, addsl_dostring(S, model, "model.ad"), "model");

    /* A few steps of gradient descent, updating the host's buffer in place. */
    for (int step = 0; !rc && step < 3; step++) {
        addsl_tensor *args[3] = {w, x, y}, *loss = NULL, *g = NULL;
        rc = check(S, addsl_call(S, "loss", 3, args, &loss), "loss");
        if (!rc) rc = check(S, addsl_backward(S, loss, NULL), "backward");
        if (!rc) rc = check(S, addsl_tensor_grad(S, w, &g), "grad");
        if (!rc) {
            const float *gp = addsl_tensor_data(g);
            double l = 0;
            addsl_tensor_item(S, loss, &l);
            printf("step %d: loss %.4f grad [%.4f, %.4f]\n", step, l, gp[0], gp[1]);
            for (int i = 0; i < 2; i++) w_buf[i] -= 0.002f * gp[i];
            addsl_tensor_zero_grad(S, w);
        }
        addsl_tensor_release(S, g);
        addsl_tensor_release(S, loss);
    }
    if (!rc) printf("w = [%.4f, %.4f]\n", w_buf[0], w_buf[1]);
    addsl_tensor_release(S, w);
    addsl_tensor_release(S, x);
    addsl_tensor_release(S, y);
    addsl_close(S);
    return rc ? 1 : 0;
}
