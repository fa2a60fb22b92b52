/* testbed mpirun's compiled client: `testbed mpirun` and `testbed mpiexec` without starting
 * Python (the interpreter and the Python client's imports cost several times what the job
 * itself costs the service).
 *
 * Usage: testbed-mpirun FALLBACK NAME [ARGS...]
 *   NAME is mpirun or mpiexec and ARGS the words after it; FALLBACK is the Python testbed
 *   command, run as `FALLBACK NAME ARGS...` (exec, same process) whenever this client does not
 *   take the job itself, always before anything was sent to a service:
 *     - no service answers at the socket (the Python client then runs the job under a
 *       coordinator of its own),
 *     - an option word names --testbed-socket (the Python client reads it),
 *     - the socket path or the working directory cannot be used, the request would exceed
 *       the protocol's limits,
 *     - the source this program was built from has changed since (a stale build).
 *
 * The service reads the command line with the Python client's own code
 * (testbed.service.mpirun_args): this client sends it with its environment and working
 * directory as one `mpirun` request (testbed.service.protocol: 4-byte big-endian length, then
 * JSON), prints what the service says about it, copies the job's output byte for byte to its
 * stdout and stderr, asks the service to cancel the job on SIGINT or SIGTERM, and exits as
 * the Python client does (testbed/service/client.py, follow()): with the job's exit code,
 * 128 + the signal after a cancel, 2 for a refused request, 1 when the service goes away.
 * If this client dies, the service cancels its job when the connection drops.
 *
 * Built by testbed.service.native_client with TESTBED_SOURCE (this file's path) and
 * TESTBED_SOURCE_MTIME (its modification time in ns) defined.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#ifndef TESTBED_SOURCE
#error "build with -DTESTBED_SOURCE=\"path of this file\""
#endif
#ifndef TESTBED_SOURCE_MTIME
#error "build with -DTESTBED_SOURCE_MTIME=its modification time in ns"
#endif

#define MAX_MESSAGE (1u << 20)  /* protocol.MAX_MESSAGE */
#define MAX_ENV 4096            /* protocol.MAX_ENV */
#define MAX_ENV_NAME 1024       /* protocol.MAX_ENV_NAME */
#define EXIT_LOST 1             /* client.LOST */
#define EXIT_USAGE 2

extern char **environ;

/* --- growing byte buffers ------------------------------------------------------------------ */

typedef struct {
    char *p;
    size_t n, cap;
} buf;

static void put(buf *b, const void *data, size_t len) {
    if (b->n + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (b->n + len + 1 > cap)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            fputs("testbed mpirun: out of memory\n", stderr);
            exit(EXIT_LOST);
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, data, len);
    b->n += len;
    b->p[b->n] = '\0';
}

static void puts_(buf *b, const char *s) { put(b, s, strlen(s)); }

static void putf(buf *b, const char *format, ...) {
    char text[64];
    va_list args;
    va_start(args, format);
    int len = vsnprintf(text, sizeof text, format, args);
    va_end(args);
    put(b, text, (size_t)len < sizeof text ? (size_t)len : sizeof text - 1);
}

/* --- JSON out -------------------------------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at s (as Python's strict decoder accepts it: no overlong
 * forms, no surrogates, nothing above U+10FFFF), or 0; its code point in *cp. */
static size_t utf8_sequence(const unsigned char *s, size_t len, uint32_t *cp) {
    unsigned char c = s[0];
    size_t need;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
        need = 1;
        *cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        need = 2;
        *cp = c & 0x0F;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 3;
        *cp = c & 0x07;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else {
        return 0;
    }
    if (len < need + 1 || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 1; i <= need; i++) {
        if (i > 1 && (s[i] < 0x80 || s[i] > 0xBF))
            return 0;
        *cp = (*cp << 6) | (s[i] & 0x3F);
    }
    return need + 1;
}

/* A JSON string holding the same text Python's os.fsdecode gives for these bytes (UTF-8, each
 * byte that is not part of valid UTF-8 as the lone surrogate U+DC00+byte), written as ASCII
 * as json.dumps(ensure_ascii=True) writes it. */
static void put_json_string(buf *b, const char *text, size_t len) {
    const unsigned char *s = (const unsigned char *)text;
    put(b, "\"", 1);
    for (size_t i = 0; i < len;) {
        unsigned char c = s[i];
        uint32_t cp;
        size_t n = 1;
        if (c < 0x80) {
            cp = c;
        } else if ((n = utf8_sequence(s + i, len - i, &cp)) == 0) {
            cp = 0xDC00 + c;
            n = 1;
        }
        i += n;
        if (cp == '"')
            puts_(b, "\\\"");
        else if (cp == '\\')
            puts_(b, "\\\\");
        else if (cp == '\n')
            puts_(b, "\\n");
        else if (cp == '\r')
            puts_(b, "\\r");
        else if (cp == '\t')
            puts_(b, "\\t");
        else if (cp == '\b')
            puts_(b, "\\b");
        else if (cp == '\f')
            puts_(b, "\\f");
        else if (cp >= 0x20 && cp < 0x7F)
            put(b, &c, 1);
        else if (cp < 0x10000)
            putf(b, "\\u%04x", cp);
        else
            putf(b, "\\u%04x\\u%04x", 0xD800 + ((cp - 0x10000) >> 10),
                 0xDC00 + ((cp - 0x10000) & 0x3FF));
    }
    put(b, "\"", 1);
}

/* --- JSON in: the fields of a reply ---------------------------------------------------------- */

typedef struct {
    const char *p, *end;
} cursor;

typedef struct {
    buf type, job, stream, data, status, reason, message, text;
    int has_code;
    long long code;
} reply;

static void space(cursor *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

static int hex4(const char *p, uint32_t *value) {
    *value = 0;
    for (int i = 0; i < 4; i++) {
        char h = p[i];
        int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10
              : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
        if (d < 0)
            return -1;
        *value = *value * 16 + (uint32_t)d;
    }
    return 0;
}

static void put_utf8(buf *out, uint32_t cp) {
    unsigned char u[4];
    size_t n;
    if (cp < 0x80) {
        u[0] = (unsigned char)cp;
        n = 1;
    } else if (cp < 0x800) {
        u[0] = 0xC0 | (cp >> 6);
        u[1] = 0x80 | (cp & 0x3F);
        n = 2;
    } else if (cp < 0x10000) {
        u[0] = 0xE0 | (cp >> 12);
        u[1] = 0x80 | ((cp >> 6) & 0x3F);
        u[2] = 0x80 | (cp & 0x3F);
        n = 3;
    } else {
        u[0] = 0xF0 | (cp >> 18);
        u[1] = 0x80 | ((cp >> 12) & 0x3F);
        u[2] = 0x80 | ((cp >> 6) & 0x3F);
        u[3] = 0x80 | (cp & 0x3F);
        n = 4;
    }
    put(out, u, n);
}

/* A JSON string at c (past its quotes after), decoded to UTF-8 into out (when not NULL); a
 * lone surrogate becomes the text \udXXX, as Python's stderr (backslashreplace) prints it. */
static int json_string(cursor *c, buf *out) {
    if (c->p >= c->end || *c->p != '"')
        return -1;
    c->p++;
    while (c->p < c->end && *c->p != '"') {
        if (*c->p != '\\') {
            const char *run = c->p;
            while (c->p < c->end && *c->p != '"' && *c->p != '\\')
                c->p++;
            if (out)
                put(out, run, (size_t)(c->p - run));
            continue;
        }
        if (c->end - c->p < 2)
            return -1;
        char e = c->p[1];
        c->p += 2;
        const char *simple = e == '"' ? "\"" : e == '\\' ? "\\" : e == '/' ? "/" : e == 'b' ? "\b"
                           : e == 'f' ? "\f" : e == 'n' ? "\n" : e == 'r' ? "\r" : e == 't' ? "\t"
                           : NULL;
        if (simple) {
            if (out)
                put(out, simple, 1);
            continue;
        }
        uint32_t cp, low;
        if (e != 'u' || c->end - c->p < 4 || hex4(c->p, &cp) < 0)
            return -1;
        c->p += 4;
        if (cp >= 0xD800 && cp < 0xDC00 && c->end - c->p >= 6 && c->p[0] == '\\'
            && c->p[1] == 'u' && hex4(c->p + 2, &low) == 0 && low >= 0xDC00 && low < 0xE000) {
            c->p += 6;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        }
        if (!out)
            continue;
        if (cp >= 0xD800 && cp < 0xE000)
            putf(out, "\\u%04x", cp);
        else
            put_utf8(out, cp);
    }
    if (c->p >= c->end)
        return -1;
    c->p++;
    return 0;
}

/* An integer at c: 1 and *value if it is one, 0 for another number, -1 if not a number. */
static int json_number(cursor *c, long long *value) {
    const char *start = c->p;
    int integral = 1;
    if (c->p < c->end && *c->p == '-')
        c->p++;
    const char *digits = c->p;
    while (c->p < c->end && ((*c->p >= '0' && *c->p <= '9') || *c->p == '.' || *c->p == 'e'
                             || *c->p == 'E' || *c->p == '+' || *c->p == '-')) {
        if (*c->p < '0' || *c->p > '9')
            integral = 0;
        c->p++;
    }
    if (c->p == digits)
        return -1;
    if (!integral || c->p - start > 18)
        return 0;
    *value = strtoll(start, NULL, 10);
    return 1;
}

static int skip_value(cursor *c, int depth);

static int skip_container(cursor *c, char close, int depth) {
    c->p++;
    space(c);
    if (c->p < c->end && *c->p == close) {
        c->p++;
        return 0;
    }
    for (;;) {
        if (close == '}') {
            space(c);
            if (json_string(c, NULL) < 0)
                return -1;
            space(c);
            if (c->p >= c->end || *c->p != ':')
                return -1;
            c->p++;
        }
        if (skip_value(c, depth + 1) < 0)
            return -1;
        space(c);
        if (c->p < c->end && *c->p == ',') {
            c->p++;
            continue;
        }
        if (c->p < c->end && *c->p == close) {
            c->p++;
            return 0;
        }
        return -1;
    }
}

static int literal(cursor *c, const char *word) {
    size_t len = strlen(word);
    if ((size_t)(c->end - c->p) < len || memcmp(c->p, word, len) != 0)
        return -1;
    c->p += len;
    return 0;
}

static int skip_value(cursor *c, int depth) {
    long long ignored;
    space(c);
    if (c->p >= c->end || depth > 64)
        return -1;
    switch (*c->p) {
    case '"':
        return json_string(c, NULL);
    case '{':
        return skip_container(c, '}', depth);
    case '[':
        return skip_container(c, ']', depth);
    case 't':
        return literal(c, "true");
    case 'f':
        return literal(c, "false");
    case 'n':
        return literal(c, "null");
    default:
        return json_number(c, &ignored) < 0 ? -1 : 0;
    }
}

static void clear_reply(reply *r) {
    buf *fields[] = {&r->type, &r->job, &r->stream, &r->data, &r->status, &r->reason,
                     &r->message, &r->text};
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) {
        fields[i]->n = 0;
        if (fields[i]->p)
            fields[i]->p[0] = '\0';
        else
            put(fields[i], "", 0);
    }
    r->has_code = 0;
}

/* The fields of one reply (a JSON object); -1 if the body is not one. */
static int parse_reply(const char *body, size_t len, reply *r) {
    static const char *names[] = {"type", "job", "stream", "data", "status", "reason", "message",
                                  "text"};
    buf *fields[] = {&r->type, &r->job, &r->stream, &r->data, &r->status, &r->reason,
                     &r->message, &r->text};
    buf key = {0};
    cursor c = {body, body + len};
    int result = -1;
    clear_reply(r);
    space(&c);
    if (c.p >= c.end || *c.p != '{')
        goto done;
    c.p++;
    space(&c);
    if (c.p < c.end && *c.p == '}') {
        c.p++;
        goto end;
    }
    for (;;) {
        space(&c);
        key.n = 0;
        if (json_string(&c, &key) < 0)
            goto done;
        put(&key, "", 0);
        space(&c);
        if (c.p >= c.end || *c.p != ':')
            goto done;
        c.p++;
        space(&c);
        buf *field = NULL;
        for (size_t i = 0; i < sizeof names / sizeof *names; i++)
            if (strcmp(key.p, names[i]) == 0)
                field = fields[i];
        if (field && c.p < c.end && *c.p == '"') {
            field->n = 0;
            if (json_string(&c, field) < 0)
                goto done;
        } else if (strcmp(key.p, "exit_code") == 0 && c.p < c.end
                   && (*c.p == '-' || (*c.p >= '0' && *c.p <= '9'))) {
            int kind = json_number(&c, &r->code);
            if (kind < 0)
                goto done;
            r->has_code = kind == 1;
        } else if (skip_value(&c, 0) < 0) {
            goto done;
        }
        space(&c);
        if (c.p < c.end && *c.p == ',') {
            c.p++;
            continue;
        }
        if (c.p < c.end && *c.p == '}') {
            c.p++;
            break;
        }
        goto done;
    }
end:
    space(&c);
    result = c.p == c.end ? 0 : -1;
done:
    free(key.p);
    return result;
}

/* --- base64 ---------------------------------------------------------------------------------- */

/* Decode standard base64 with padding (as Python's b64decode(validate=True) accepts it). */
static int base64_decode(const char *in, size_t len, buf *out) {
    static signed char value[256];
    static int ready;
    if (!ready) {
        const char *alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        memset(value, -1, sizeof value);
        for (int i = 0; i < 64; i++)
            value[(unsigned char)alphabet[i]] = (signed char)i;
        ready = 1;
    }
    if (len % 4 != 0)
        return -1;
    out->n = 0;
    for (size_t i = 0; i < len; i += 4) {
        int pad = (in[i + 2] == '=') + (in[i + 3] == '=');
        if ((pad && i + 4 != len) || (in[i + 3] != '=' && in[i + 2] == '='))
            return -1;
        int v[4];
        for (int k = 0; k < 4 - pad; k++)
            if ((v[k] = value[(unsigned char)in[i + k]]) < 0)
                return -1;
        unsigned char bytes[3] = {(unsigned char)(v[0] << 2 | v[1] >> 4), 0, 0};
        if (pad < 2)
            bytes[1] = (unsigned char)(v[1] << 4 | v[2] >> 2);
        if (pad < 1)
            bytes[2] = (unsigned char)(v[2] << 6 | v[3]);
        put(out, bytes, 3 - (size_t)pad);
    }
    return 0;
}

/* --- output ---------------------------------------------------------------------------------- */

static int write_all(int fd, const char *data, size_t len) {
    while (len > 0) {
        ssize_t n = write(fd, data, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

/* One line on stderr: the parts concatenated, then a newline. */
static void say(const char *first, ...) {
    buf line = {0};
    va_list parts;
    va_start(parts, first);
    for (const char *part = first; part; part = va_arg(parts, const char *))
        puts_(&line, part);
    va_end(parts);
    put(&line, "\n", 1);
    write_all(2, line.p, line.n);
    free(line.p);
}

/* --- the fallback ---------------------------------------------------------------------------- */

static int fallback(char **argv) {
    execv(argv[1], argv + 1);
    say("testbed mpirun: cannot run ", argv[1], ": ", strerror(errno), NULL);
    return EXIT_LOST;
}

/* --- the request ----------------------------------------------------------------------------- */

static int valid_env_name(const char *name, size_t len) {
    if (len == 0 || len > MAX_ENV_NAME || (name[0] >= '0' && name[0] <= '9'))
        return 0;
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        if (!(c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
              || (c >= '0' && c <= '9')))
            return 0;
    }
    return 1;
}

/* The request for ARGS; -1 if it cannot be made within the protocol's limits. */
static int build_request(buf *b, const char *name, int argc, char **args, const char *cwd) {
    put(b, "\0\0\0\0", 4);
    puts_(b, "{\"type\":\"mpirun\",\"name\":");
    put_json_string(b, name, strlen(name));
    puts_(b, ",\"argv\":[");
    for (int i = 0; i < argc; i++) {
        if (i)
            put(b, ",", 1);
        put_json_string(b, args[i], strlen(args[i]));
    }
    puts_(b, "],\"environ\":{");
    size_t count = 0;
    for (char **e = environ; *e; e++) {
        const char *equals = strchr(*e, '=');
        size_t len = equals ? (size_t)(equals - *e) : 0;
        if (!equals || !valid_env_name(*e, len))
            continue;
        int seen = 0;   /* the first of several wins, as in Python's os.environ */
        for (char **before = environ; before < e && !seen; before++)
            seen = strncmp(*before, *e, len + 1) == 0;
        if (seen)
            continue;
        if (++count > MAX_ENV)
            return -1;
        if (count > 1)
            put(b, ",", 1);
        put_json_string(b, *e, len);
        put(b, ":", 1);
        put_json_string(b, equals + 1, strlen(equals + 1));
    }
    puts_(b, "},\"cwd\":");
    put_json_string(b, cwd, strlen(cwd));
    put(b, "}", 1);
    size_t body = b->n - 4;
    if (body > MAX_MESSAGE)
        return -1;
    unsigned char header[4] = {body >> 24, body >> 16, body >> 8, body};
    memcpy(b->p, header, 4);
    return 0;
}

/* The socket path as testbed.service.client.socket_path gives it (a pathlib.Path: repeated
 * slashes and "." components dropped), into out. */
static void socket_path(buf *out) {
    buf raw = {0};
    const char *given = getenv("TESTBED_SOCKET"), *runtime = getenv("XDG_RUNTIME_DIR");
    if (given && *given) {
        puts_(&raw, given);
    } else if (runtime && *runtime) {
        puts_(&raw, runtime);
        puts_(&raw, "/testbed/coordinator.sock");
    } else {
        putf(&raw, "/tmp/testbed-%u/coordinator.sock", (unsigned)getuid());
    }
    const char *p = raw.p;
    if (p[0] == '/') {
        put(out, "/", 1);
        if (p[1] == '/' && p[2] != '/')
            put(out, "/", 1);
    }
    int parts = 0;
    while (*p) {
        while (*p == '/')
            p++;
        const char *start = p;
        while (*p && *p != '/')
            p++;
        size_t len = (size_t)(p - start);
        if (len == 0 || (len == 1 && start[0] == '.'))
            continue;
        if (parts++)
            put(out, "/", 1);
        put(out, start, len);
    }
    if (out->n == 0)
        put(out, ".", 1);
    free(raw.p);
}

/* --- following the job ----------------------------------------------------------------------- */

static volatile sig_atomic_t first_signal, signals;

static void on_signal(int signum) {
    if (signals++ == 0)
        first_signal = signum;
}

static int send_all(int fd, const char *data, size_t len) {
    while (len > 0) {
        ssize_t n = send(fd, data, len, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

static void send_cancel(int fd, const buf *job) {
    buf message = {0};
    put(&message, "\0\0\0\0", 4);
    puts_(&message, "{\"type\":\"cancel\",\"job\":");
    put_json_string(&message, job->p, job->n);
    put(&message, "}", 1);
    size_t body = message.n - 4;
    unsigned char header[4] = {body >> 24, body >> 16, body >> 8, body};
    memcpy(message.p, header, 4);
    send_all(fd, message.p, message.n);  /* a failure shows as the service going away */
    free(message.p);
}

/* The exit code of a job that ended (protocol.exit_code_of), saying why when it is not the
 * program's own. */
static int ended(const reply *r, const buf *job) {
    if (signals)
        return 128 + first_signal;
    const char *status = r->status.p;
    int code = strcmp(status, "done") == 0 || (r->has_code && r->code > 0)
                   ? (r->has_code ? (int)r->code : 0) : 1;
    if (!r->has_code || code != r->code || strcmp(status, "killed") == 0
        || strcmp(status, "timeout") == 0) {
        say("testbed mpirun: job ", job->n ? job->p : "None", " ended ", status, ": ",
            r->reason.n ? r->reason.p : status, NULL);
    }
    return code;
}

static int lost(const char *why) {
    say("testbed mpirun: lost the service: ", why, NULL);
    return EXIT_LOST;
}

static int follow(int fd, const char *name, const char *path) {
    buf in = {0}, job = {0}, bytes = {0};
    reply r = {0};
    int cancelled = 0;
    sigset_t blocked, open;
    sigemptyset(&blocked);
    sigaddset(&blocked, SIGINT);
    sigaddset(&blocked, SIGTERM);
    sigprocmask(SIG_BLOCK, &blocked, &open);
    sigdelset(&open, SIGINT);
    sigdelset(&open, SIGTERM);
    for (;;) {
        if (signals && job.n && !cancelled) {
            send_cancel(fd, &job);
            cancelled = 1;
        }
        if (in.n >= 4) {
            const unsigned char *h = (const unsigned char *)in.p;
            size_t length = (size_t)h[0] << 24 | (size_t)h[1] << 16 | (size_t)h[2] << 8 | h[3];
            if (length > MAX_MESSAGE) {
                char why[96];
                snprintf(why, sizeof why, "message length %zu exceeds the %u-byte limit",
                         length, MAX_MESSAGE);
                return lost(why);
            }
            if (in.n >= 4 + length) {
                if (parse_reply(in.p + 4, length, &r) < 0)
                    return lost("message is not valid JSON");
                memmove(in.p, in.p + 4 + length, in.n - 4 - length);
                in.n -= 4 + length;
                const char *type = r.type.p;
                if (strcmp(type, "accepted") == 0) {
                    job.n = 0;
                    put(&job, r.job.p, r.job.n);
                } else if (strcmp(type, "output") == 0) {
                    if (base64_decode(r.data.p, r.data.n, &bytes) < 0)
                        return lost("output: field 'data': not base64");
                    if (write_all(strcmp(r.stream.p, "out") == 0 ? 1 : 2, bytes.p, bytes.n) < 0) {
                        say("testbed mpirun: cannot write the job's output: ", strerror(errno),
                            NULL);
                        return EXIT_LOST;
                    }
                } else if (strcmp(type, "exited") == 0) {
                    return ended(&r, &job);
                } else if (strcmp(type, "note") == 0) {
                    say("testbed ", name, ": ", r.text.p, NULL);
                } else if (strcmp(type, "usage") == 0) {
                    say("testbed ", name, ": ", r.message.p, NULL);
                    return EXIT_USAGE;
                } else if (strcmp(type, "error") == 0) {
                    say("testbed mpirun: ", r.message.p, NULL);
                    if (!job.n)
                        return EXIT_USAGE;
                }
                continue;
            }
        }
        struct pollfd ready = {fd, POLLIN, 0};
        if (ppoll(&ready, 1, NULL, &open) < 0) {
            if (errno == EINTR)
                continue;
            return lost(strerror(errno));
        }
        char chunk[65536];
        ssize_t n = read(fd, chunk, sizeof chunk);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            char why[128];
            snprintf(why, sizeof why, "[Errno %d] %s", errno, strerror(errno));
            return lost(why);
        }
        if (n == 0) {
            if (in.n) {
                char why[128];
                size_t want = in.n < 4 ? 4 : 4 + ((size_t)(unsigned char)in.p[0] << 24
                                                  | (size_t)(unsigned char)in.p[1] << 16
                                                  | (size_t)(unsigned char)in.p[2] << 8
                                                  | (unsigned char)in.p[3]);
                size_t got = in.n < 4 ? in.n : in.n - 4;
                snprintf(why, sizeof why, "connection closed in the middle of a message "
                         "(%zu of %zu bytes)", got, in.n < 4 ? want : want - 4);
                return lost(why);
            }
            say("testbed mpirun: the testbed service at ", path, " went away",
                job.n ? " while job " : "", job.n ? job.p : "", job.n ? " ran" : "", NULL);
            return EXIT_LOST;
        }
        put(&in, chunk, (size_t)n);
    }
}

int main(int argc, char **argv) {
    if (argc < 3 || (strcmp(argv[2], "mpirun") != 0 && strcmp(argv[2], "mpiexec") != 0)) {
        fputs("usage: testbed-mpirun FALLBACK mpirun|mpiexec [ARGS...]\n", stderr);
        return EXIT_USAGE;
    }
    struct stat source;
    if (stat(TESTBED_SOURCE, &source) < 0
        || (long long)source.st_mtim.tv_sec * 1000000000LL + source.st_mtim.tv_nsec
               != (long long)TESTBED_SOURCE_MTIME)
        return fallback(argv);
    for (int i = 3; i < argc; i++)
        if (argv[i][0] == '-' && strstr(argv[i], "testbed-socket"))
            return fallback(argv);
    buf path = {0}, request = {0};
    socket_path(&path);
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    if (path.n >= sizeof address.sun_path)
        return fallback(argv);
    memcpy(address.sun_path, path.p, path.n);
    char *cwd = getcwd(NULL, 0);
    if (!cwd || cwd[0] != '/' || build_request(&request, argv[2], argc - 3, argv + 3, cwd) < 0)
        return fallback(argv);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&address, sizeof address) < 0) {
        if (fd >= 0)
            close(fd);
        return fallback(argv);
    }
    struct sigaction action = {.sa_handler = on_signal};
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, NULL);
    sigaction(SIGTERM, &action, NULL);
    signal(SIGPIPE, SIG_IGN);
    if (send_all(fd, request.p, request.n) < 0) {
        char why[128];
        snprintf(why, sizeof why, "[Errno %d] %s", errno, strerror(errno));
        return lost(why);
    }
    return follow(fd, argv[2], path.p);
}
