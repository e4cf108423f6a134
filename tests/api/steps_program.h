/* steps_program.h: the compiled program whose calls tests/api/test_compile_alloc.c
 * (allocations through the hook) and tests/unit/test_plan.c (tensor storage
 * from the heap) count: one program, so the two counts cover one call between them. */
#ifndef ADDSL_STEPS_PROGRAM_H
#define ADDSL_STEPS_PROGRAM_H

/* A printf format: %d is the number of steps. Sums end groups, so values
 * cross groups in arena buffers. Defines steps, cf = compile(steps) and x. */
#define STEPS_PROGRAM \
    "fn steps(x) {\n" \
    "    let y = x\n" \
    "    for i in range(%d) {\n" \
    "        let s = y.sum()\n" \
    "        y = exp(y * 0.5) - s * 0.01\n" \
    "    }\n" \
    "    return y.sum()\n" \
    "}\n" \
    "let cf = compile(steps)\n" \
    "let x = randn(300, dtype=float64)\n"

#endif
