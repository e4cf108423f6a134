/* kernels/par_for.h: PAR_FOR, a for statement run on the OpenMP team only when asked,
 * for the kernels (kernels/reduce.c, kernels/gemm_small.c). */
#ifndef AD_PAR_FOR_H
#define AD_PAR_FOR_H

/* Runs the for statement given as the argument on the OpenMP team only when
 * 'par': a parallel region, even one disabled by an if clause, costs a team
 * set-up and futex traffic on every call, which small tensors must not pay. */
#define PAR_FOR(par, ...)                                                          \
    do {                                                                           \
        if (par) {                                                                 \
            _Pragma("omp parallel for schedule(static)")                           \
            __VA_ARGS__                                                            \
        } else {                                                                   \
            __VA_ARGS__                                                            \
        }                                                                          \
    } while (0)

#endif
