/* Preloaded into a job's launcher (mpiexec and hydra's proxies): every temporary file it makes
 * with mkstemp, mkostemp, mkstemps or mkostemps is noted, one absolute path a line, in the
 * file named by TESTBED_TMP_RECORD, so the node manager can remove it when the launch ends.
 * hydra writes its topology to /tmp/hydra_hwloc_xmlfile_XXXXXX whatever TMPDIR says, and
 * leaves it there when the launch is killed.  Other programs (the ranks) are left alone. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int is_launcher(void)
{
    const char *name = program_invocation_short_name;
    return strncmp(name, "mpiexec", 7) == 0 || strncmp(name, "hydra", 5) == 0
        || strcmp(name, "mpirun") == 0;
}

static void note(int fd, const char *path)
{
    const char *list = getenv("TESTBED_TMP_RECORD");
    if (fd < 0 || path[0] != '/' || list == NULL || list[0] == '\0' || !is_launcher())
        return;
    int saved = errno;
    size_t n = strlen(path);
    char line[4096];
    if (n + 1 < sizeof line) {
        int out = open(list, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
        if (out >= 0) {
            memcpy(line, path, n);
            line[n] = '\n';
            ssize_t written = write(out, line, n + 1);
            (void)written;
            close(out);
        }
    }
    errno = saved;
}

typedef int (*plain_fn)(char *);
typedef int (*one_fn)(char *, int);
typedef int (*two_fn)(char *, int, int);

int mkstemp(char *template)
{
    static plain_fn real;
    if (real == NULL)
        real = (plain_fn)dlsym(RTLD_NEXT, "mkstemp");
    int fd = real(template);
    note(fd, template);
    return fd;
}

int mkostemp(char *template, int flags)
{
    static one_fn real;
    if (real == NULL)
        real = (one_fn)dlsym(RTLD_NEXT, "mkostemp");
    int fd = real(template, flags);
    note(fd, template);
    return fd;
}

int mkstemps(char *template, int suffixlen)
{
    static one_fn real;
    if (real == NULL)
        real = (one_fn)dlsym(RTLD_NEXT, "mkstemps");
    int fd = real(template, suffixlen);
    note(fd, template);
    return fd;
}

int mkostemps(char *template, int suffixlen, int flags)
{
    static two_fn real;
    if (real == NULL)
        real = (two_fn)dlsym(RTLD_NEXT, "mkostemps");
    int fd = real(template, suffixlen, flags);
    note(fd, template);
    return fd;
}
