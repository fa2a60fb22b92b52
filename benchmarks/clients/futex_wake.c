/* A futex word shared by two processes (benchmarks.shim_cost's floor): the operating system's
 * own wake-up of a process blocked on a futex of a shared mapping, as the shim's doorbell
 * sleeps (FUTEX_WAIT and FUTEX_WAKE, not FUTEX_PRIVATE). */
#include <limits.h>
#include <linux/futex.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Block until *word differs from ``seen``, sleeping ``timeout_ns`` at most at a time (0: no
 * timeout), as the shim's safety net does; its new value. */
uint32_t futex_await(uint32_t *word, uint32_t seen, long timeout_ns) {
    struct timespec ts = {timeout_ns / 1000000000L, timeout_ns % 1000000000L};
    uint32_t now;
    while ((now = __atomic_load_n(word, __ATOMIC_ACQUIRE)) == seen)
        syscall(SYS_futex, word, FUTEX_WAIT, seen, timeout_ns > 0 ? &ts : NULL, NULL, 0);
    return now;
}

/* Add 1 to *word and wake every process blocked on it. */
void futex_ring(uint32_t *word) {
    __atomic_add_fetch(word, 1, __ATOMIC_SEQ_CST);
    syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}
