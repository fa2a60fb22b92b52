/* What a rank is doing in MPI, kept in its record for the node manager (activity.c).
 *
 * Internal to the shim library (hidden: a preloaded library must not lend its names to the
 * program).
 */
#pragma GCC visibility push(hidden)

/* Keep this rank's activity in ``own``. */
void tb_activity_init(struct tb_record *own);

/* Say that a thread entered the MPI function ``name`` (``len`` bytes with its NUL), waiting on
 * world rank ``waits_on`` (-1: several, any or not known); returns 0, for TB_ENTER. */
int tb_enter(const char *name, size_t len, int waits_on);

/* Say that the thread left the call it entered (a cleanup function: its argument is unused). */
void tb_leave(int *entered);

/* Say that a thread is (begin) or is no longer (end) in a call that MPI completes by polling
 * its own progress; beginning rings every peer asleep, so that it sleeps briefly from then on
 * (doorbell.c). */
void tb_polling_begin(void);
void tb_polling_end(void);

#pragma GCC visibility pop

/* First statement of a wrapper: the rank is in this function, waiting on WAITS_ON, until it
 * returns by whatever path. */
#define TB_ENTER(WAITS_ON)                                                                  \
    __attribute__((cleanup(tb_leave))) int tb_entered_ =                                    \
        tb_enter(__func__, sizeof __func__, (WAITS_ON));                                    \
    (void)tb_entered_
