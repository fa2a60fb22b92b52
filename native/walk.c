/* The fractal memory walk (MEMORY §4.1, Fig 4): a one-dimensional random walk over an array
 * whose jumps X have Pr[X > u] = u^-theta (u >= 1, 1 <= theta <= 2), each with a random sign.
 * theta = 1 gives the least locality, theta = 2 the most.  The generator is xorshift64*, so a
 * seed gives the same walk everywhere.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

static uint64_t next(uint64_t *state) {
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545F4914F6CDD1DULL;
}

/* A seed (any value) turned into a non-zero generator state (splitmix64). */
uint64_t tb_seed(uint64_t seed) {
    uint64_t z = seed + 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return z ? z : 1;
}

/* One signed jump: magnitude U^(-1/theta) for U uniform in (0, 1). */
double tb_jump(double theta, uint64_t *state) {
    uint64_t r = next(state);
    double u = ((double)(r >> 11) + 0.5) / 9007199254740992.0;
    double x = pow(u, -1.0 / theta);
    return (r & 1) ? -x : x;
}

void tb_jumps(double theta, uint64_t *state, double *out, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = tb_jump(theta, state);
}

/* Write one byte in every page of the array, so all of it is resident from the start. */
void tb_touch(unsigned char *mem, size_t bytes, size_t page) {
    for (size_t i = 0; i < bytes; i += page) mem[i] = 1;
}

/* Walk `accesses` steps over `cells` cells of `stride` bytes each, writing one byte per step.
 * `addr` carries the position from call to call; returns a checksum of the cells visited. */
uint64_t tb_walk(unsigned char *mem, size_t cells, size_t stride, double theta,
                 uint64_t *state, double *addr, size_t accesses) {
    double a = *addr;
    uint64_t sum = 0;
    for (size_t i = 0; i < accesses; i++) {
        a = fmod(a + tb_jump(theta, state), (double)cells);
        if (a < 0) a += (double)cells;
        size_t cell = (size_t)a;
        if (cell >= cells) cell = cells - 1;
        mem[cell * stride] = (unsigned char)(cell % 200);
        sum += cell;
    }
    *addr = a;
    return sum;
}
