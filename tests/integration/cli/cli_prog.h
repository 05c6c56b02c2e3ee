/* cli_prog.h: what the cli tests' workload (cli_prog.c) allocates.
 *
 * The workload and the test driver (cli_test.c) share these numbers, so every
 * figure the driver checks comes from the program's own plan, not from an
 * earlier run. Each kind of allocation has its own noinline function, which is
 * frame 0 of its stack and names its call site.
 */
#ifndef CLI_PROG_H
#define CLI_PROG_H

#define STARTUP_SIZE (1 << 20) /* startup_block: once, at startup, never freed */
#define HELD_SIZE 4096         /* held_block: at startup, freed at the very end */
#define STEADY_N 100           /* loop iterations, STEADY_SLEEP_US apart */
#define STEADY_SLEEP_US 2000
#define STEADY_SIZE 64    /* leak_steady: one per iteration, never freed */
#define TEMP_SIZE 24      /* temp_churn: two per iteration, each freed at once */
#define BURST_N 10        /* peak_burst: at iteration STEADY_N / 2, freed in */
#define BURST_SIZE 100000 /*   reverse order (the last one is temporary) */
#define PAUSE_US 50000    /* sleep between the startup blocks and the loop */
#define EARLY_S "0.04"    /* a --to that ends before the loop starts */
#define HANDOFF_N 5       /* worker_handoff: made by the worker thread, */
#define HANDOFF_SIZE 300  /*   freed by the main thread */
#define WTMP_SIZE 200     /* worker_tmp: made and freed at once by the worker */
#define WLEAK_SIZE 77     /* worker_leak: made by the worker, never freed */

/* Derived figures. */
#define MAIN_BLOCKS (1 + 1 + STEADY_N + 2 * STEADY_N + BURST_N)
#define MAIN_BYTES                                                                                 \
    ((long long)STARTUP_SIZE + HELD_SIZE + STEADY_N * STEADY_SIZE + 2 * STEADY_N * TEMP_SIZE +     \
     (long long)BURST_N * BURST_SIZE)
#define WORKER_BLOCKS (HANDOFF_N + 2)
#define WORKER_BYTES (HANDOFF_N * HANDOFF_SIZE + WTMP_SIZE + WLEAK_SIZE)
#define LEAKED_BLOCKS (1 + STEADY_N + 1)
#define LEAKED_BYTES ((long long)STARTUP_SIZE + STEADY_N * STEADY_SIZE + WLEAK_SIZE)
/* Live at the peak: the startup blocks, half the steady leak, the burst. */
#define PEAK_BYTES                                                                                 \
    ((long long)STARTUP_SIZE + HELD_SIZE + (STEADY_N / 2) * STEADY_SIZE +                          \
     (long long)BURST_N * BURST_SIZE)
/* heaptrack's temporaries: the churn, the burst's last block, worker_tmp. */
#define TEMPORARY_BLOCKS (2 * STEADY_N + 1 + 1)

#endif
