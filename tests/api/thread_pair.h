/* thread_pair.h: one job function run on two jobs in two threads at once, for
 * the tests that check that two states share nothing. */
#ifndef ADDSL_THREAD_PAIR_H
#define ADDSL_THREAD_PAIR_H

#include <pthread.h>

/* 1 when both threads started; each one that started is joined, so a job
 * never outlives the call even when the other thread could not start. */
static inline int run_pair(void *(*fn)(void *), void *a, void *b) {
    pthread_t t[2];
    int started_a = pthread_create(&t[0], NULL, fn, a) == 0;
    int started_b = pthread_create(&t[1], NULL, fn, b) == 0;
    if (started_a) pthread_join(t[0], NULL);
    if (started_b) pthread_join(t[1], NULL);
    return started_a && started_b;
}

#endif
