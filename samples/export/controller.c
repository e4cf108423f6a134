/* controller.c: a reaching controller for a planar three-link arm: gradient
 * descent on the exported cost arm_cost() with its exported gradient
 * arm_cost_vjp() (generated from arm.ad by addsl --export-c). No allocation:
 * the work buffer is a local array sized by ARM_COST_WORK_BYTES. */
#include <stdio.h>

#include "arm_cost.h"

#define STEPS 200
#define RATE 0.1

int main(void)
{
    /* 'work' aligned as a double, one extra element when the size is 0 */
    double work[ARM_COST_WORK_BYTES / sizeof(double) + 1];
    double q[3] = {0.0, 0.0, 0.0};
    const double targets[2][2] = {{1.2, 1.2}, {-0.5, 1.6}};
    for (int k = 0; k < 2; k++) {
        const double tx = targets[k][0], ty = targets[k][1];
        const double one = 1.0;
        double cost = 0, gq[3], gtx, gty;
        for (int step = 0; step <= STEPS; step++) {
            arm_cost(q, &tx, &ty, &cost, work);
            if (step % 50 == 0)
                printf("target (%.1f, %.1f) step %3d: cost %.6f\n", tx, ty, step, cost);
            /* d cost / d (q, tx, ty), weighted by 1 */
            arm_cost_vjp(q, &tx, &ty, &one, gq, &gtx, &gty, work);
            for (int i = 0; i < 3; i++)
                q[i] -= RATE * gq[i];
        }
        printf("target (%.1f, %.1f) reached: %s\n", tx, ty, cost < 5e-3 ? "yes" : "no");
    }
    return 0;
}
