/* What a rank is doing in MPI: which wrapped call it is in, on whom that call waits, and how
 * many wrapped calls have returned, in the rank's record (shim_record.h).  The node manager
 * reads them to tell a hang (every rank in a call, none returning) from a job that works, and
 * to say in what each rank was waiting.  Each call costs two relaxed atomic additions and a
 * copy of its name.
 */
#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "shim_record.h"
#include "activity.h"
#include "doorbell.h"

static struct tb_record *own;

void tb_activity_init(struct tb_record *record) {
    own = record;
    own->waits_on = -1;
}

int tb_enter(const char *name, size_t len, int waits_on) {
    __atomic_add_fetch(&own->in_calls, 1, __ATOMIC_RELAXED);
    own->waits_on = waits_on;
    if (len > sizeof own->call) len = sizeof own->call;
    memcpy(own->call, name, len);
    own->call[sizeof own->call - 1] = '\0';
    return 0;
}

void tb_leave(int *entered) {
    (void)entered;
    __atomic_add_fetch(&own->calls_done, 1, __ATOMIC_RELAXED);
    __atomic_sub_fetch(&own->in_calls, 1, __ATOMIC_RELAXED);
}

void tb_polling_begin(void) {
    __atomic_add_fetch(&own->polling, 1, __ATOMIC_SEQ_CST);
    tb_ring_world();
}

void tb_polling_end(void) { __atomic_sub_fetch(&own->polling, 1, __ATOMIC_SEQ_CST); }
