// fk_adolc.cpp: the ADOL-C baseline of bench/fk_chain.ad (issue 14): the same 7-joint cost,
// taped once with adouble, then gradient() replayed. Built and run by bench/fk_adolc.sh.
//
// Usage: fk_adolc [ROW CALLS]   no arguments: prints the cost and gradient (to compare with
// fk_chain.ad's) and "NAME SECONDS" lines (median per call over 7 batches); ROW b1 or b1000:
// runs that CALLS times only, for callgrind. Batch 1000 is a scalar loop: the batch-1 tape
// replayed once per row (the costs summed, as fk_chain.ad's cost is).
#include <adolc/adolc.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

namespace {

const int J = 7;
const double A[J] = {0.0, 0.0, 0.0825, -0.0825, 0.0, 0.088, 0.05};
const double D[J] = {0.333, 0.0, 0.316, 0.0, 0.384, 0.0, 0.107};
const double ALPHA[J] = {-M_PI / 2, M_PI / 2, M_PI / 2, -M_PI / 2, M_PI / 2, M_PI / 2, 0.0};
const double GOAL[3] = {0.3, 0.2, 0.5};
const short TAG = 1;

// The fixed transform after joint i: a rotation about x by ALPHA[i], a translation (A[i], 0, D[i]).
void offset(int i, double m[4][4]) {
    double ca = std::cos(ALPHA[i]), sa = std::sin(ALPHA[i]);
    double r[4][4] = {{1, 0, 0, A[i]}, {0, ca, -sa, 0}, {0, sa, ca, D[i]}, {0, 0, 0, 1}};
    std::memcpy(m, r, sizeof r);
}

// The cost of one configuration, in adouble: T = Rz(q0) O0 Rz(q1) O1 ... ; |T[0:3,3] - GOAL|^2.
// Written as an ADOL-C user would: the rotation mixes two columns, and the products with the
// constant offsets skip their zeros, so the tape holds no multiplications by constant 0.
adouble fk_cost(const adouble *q) {
    adouble T[4][4], TR[4][4];
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 4; c++) T[r][c] = (r == c) ? 1.0 : 0.0;
    for (int i = 0; i < J; i++) {
        adouble cq = cos(q[i]), sq = sin(q[i]);
        for (int r = 0; r < 4; r++) {
            TR[r][0] = T[r][0] * cq + T[r][1] * sq;
            TR[r][1] = T[r][1] * cq - T[r][0] * sq;
            TR[r][2] = T[r][2];
            TR[r][3] = T[r][3];
        }
        double O[4][4];
        offset(i, O);
        for (int r = 0; r < 4; r++)
            for (int c = 0; c < 4; c++) {
                T[r][c] = 0.0;
                for (int k = 0; k < 4; k++)
                    if (O[k][c] != 0.0) T[r][c] += TR[r][k] * O[k][c];
            }
    }
    adouble cost = 0.0;
    for (int r = 0; r < 3; r++) cost += (T[r][3] - GOAL[r]) * (T[r][3] - GOAL[r]);
    return cost;
}

double q_of(int b, int j) { return std::sin(1.0 + (double)(J * b + j)); }

void record(void) {
    double x[J], y;
    for (int j = 0; j < J; j++) x[j] = q_of(0, j);
    trace_on(TAG);
    adouble q[J];
    for (int j = 0; j < J; j++) q[j] <<= x[j];
    adouble c = fk_cost(q);
    c >>= y;
    trace_off();
}

// Batch n: the cost and gradient summed over rows, gradient() once per row.
// Batch n: gradient() once per row, into g[n * J].
void batch(int n, const std::vector<double> &qs, double *g) {
    for (int b = 0; b < n; b++) gradient(TAG, J, &qs[b * J], g + b * J);
}

double total_cost(int n, const std::vector<double> &qs) {
    double c = 0.0, y;
    for (int b = 0; b < n; b++) {
        function(TAG, 1, J, const_cast<double *>(&qs[b * J]), &y);
        c += y;
    }
    return c;
}

double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

double timed(int n, const std::vector<double> &qs, int reps) {
    std::vector<double> g(n * J);
    double ts[7];
    batch(n, qs, g.data());
    for (int r = 0; r < 7; r++) {
        double t0 = now();
        for (int i = 0; i < reps; i++) batch(n, qs, g.data());
        ts[r] = (now() - t0) / reps;
    }
    std::sort(ts, ts + 7);
    return ts[3];
}

void show(const char *name, int n, const std::vector<double> &qs) {
    std::vector<double> g(n * J);
    double c = total_cost(n, qs), gsum = 0.0;
    batch(n, qs, g.data());
    for (int i = 0; i < n * J; i++) gsum += g[i];
    std::printf("%s_cost_adolc %.17g\n", name, c);
    std::printf("%s_grad_adolc [", name);
    for (int j = 0; j < J; j++) std::printf("%s\"%.17g\"", j ? ", " : "", g[j]);
    std::printf("]\n%s_grad_sum_adolc %.17g\n", name, gsum);
}

}  // namespace

int main(int argc, char **argv) {
    const int nbig = 1000;
    std::vector<double> qs(nbig * J);
    for (int b = 0; b < nbig; b++)
        for (int j = 0; j < J; j++) qs[b * J + j] = q_of(b, j);
    record();
    if (argc > 2) {
        int n = std::strcmp(argv[1], "b1000") == 0 ? nbig : 1;
        long calls = std::atol(argv[2]);
        std::vector<double> g(n * J);
        batch(n, qs, g.data());
        for (long i = 0; i < calls; i++) batch(n, qs, g.data());
        return 0;
    }
    size_t counts[STAT_SIZE];
    tapestats(TAG, counts);
    std::printf("fk_adolc_tape_ops %zu\n", counts[NUM_OPERATIONS]);
    show("fk_b1", 1, qs);
    show("fk_b1000", nbig, qs);
    std::printf("fk_b1_adolc %.9g\n", timed(1, qs, 2000));
    std::printf("fk_b1000_adolc %.9g\n", timed(nbig, qs, 5));
    return 0;
}
