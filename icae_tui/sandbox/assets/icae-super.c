/* icae-super: runs a case box's cases one after another, without an engine round trip each.
 *
 * Built static on the host (sandbox/docker/supervisor.py) and run from the read-only keepalive
 * folder at /dev/.icae, mode 0111: a case (root without capabilities) can run it but not read
 * it, so the kernel makes it non-dumpable from exec on; nothing of the case can ptrace it, read
 * or write its memory, or open its descriptors through /proc. It never runs a program of the
 * image itself: it forks, and the child execs the case's command line.
 *
 * Started once per box by one attached `docker exec`; its stdin and stdout are that exec's
 * streams (the channel), and no case ever holds them: each case gets its own pipes, and every
 * other descriptor is close-on-exec. Frames both ways are a type byte, a little-endian u32
 * length and the payload.
 *
 *   host -> super  'R'  u32 argc, u32 has_stdin, workdir NUL, argc args NUL each, stdin bytes
 *   super -> host  'H'  u32 its pid (in the box), once at start
 *                  'O'  a chunk of the case's stdout     'E'  a chunk of its stderr
 *                  'X'  u32 exit status as `docker exec` reports it (128 + signal if killed)
 *                  'F'  the case could not start (chdir, exec): text; nothing of it ran
 *                  'C'  we were stopped (SIGSTOP) and continued since the last report: what
 *                       we saw of this case is not to be trusted (empty; before its 'X')
 *
 * As `docker exec` does, the child leads its own session, starts with default signals, an
 * empty mask and /dev/null for stdin when none is given; output still open after the main
 * process ended is forwarded for LINGER_MS more, then its pipes are closed. End of the channel
 * kills the case's process group and ends the supervisor. The host trusts none of this blindly:
 * it checks the supervisor's pid, start time and binary from outside after every case, and
 * watches its state during one; a supervisor gone, changed, stopped or silent means the box is
 * discarded and the case run again on the engine's own exec.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_FRAME (256u << 20) /* a request (its stdin with it) larger than this is refused */
#define CHUNK 65536
#define LINGER_MS 2000

static int wake[2] = {-1, -1}; /* SIGCHLD, SIGCONT -> a byte: poll wakes */
/* SIGCONTs received: a case (root, like us) can SIGSTOP us, which nothing can catch, but
 * only a SIGCONT lets us run again, and its handler always runs then. */
static volatile sig_atomic_t conts;
static sig_atomic_t told; /* conts when the host was last told */

static void on_signal(int sig) {
    int saved = errno;
    if (sig == SIGCONT) conts++;
    if (write(wake[1], "c", 1) < 0) {
    }
    errno = saved;
}

static int read_all(int fd, void *buf, size_t n) {
    char *p = buf;
    while (n) {
        ssize_t r = read(fd, p, n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

static void write_all(int fd, const void *buf, size_t n) {
    const char *p = buf;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) _exit(3); /* the host is gone: nothing is left to report to */
        p += w;
        n -= (size_t)w;
    }
}

static void put_u32(unsigned char *p, uint32_t v) {
    p[0] = v & 0xff;
    p[1] = (v >> 8) & 0xff;
    p[2] = (v >> 16) & 0xff;
    p[3] = (v >> 24) & 0xff;
}

static uint32_t get_u32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void frame(char type, const void *data, uint32_t len) {
    unsigned char head[5];
    head[0] = (unsigned char)type;
    put_u32(head + 1, len);
    write_all(1, head, 5);
    if (len) write_all(1, data, len);
}

static void frame_u32(char type, uint32_t v) {
    unsigned char b[4];
    put_u32(b, v);
    frame(type, b, 4);
}

/* 'C' once for every run of stops not yet reported */
static void tell_continued(void) {
    if (conts != told) {
        told = conts;
        frame('C', NULL, 0);
    }
}

static long long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The child: the case's command line as `docker exec` would start it. A failure before exec
 * is told to the parent on `status` (close-on-exec: end of file there means exec worked). */
static void child(const char *workdir, char **argv, int in, int out, int err, int status) {
    setsid();
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    for (int s = 1; s < NSIG; s++) signal(s, SIG_DFL);
    if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0) goto fail;
    /* every descriptor but 0-2 closes at exec: the channel was 0-1 and is now replaced */
    if (syscall(SYS_close_range, 3, ~0u, 4 /* CLOSE_RANGE_CLOEXEC */) != 0) {
        for (int fd = 3; fd < 65536; fd++) fcntl(fd, F_SETFD, FD_CLOEXEC);
    }
    if (chdir(workdir) != 0) goto fail;
    execvp(argv[0], argv);
fail: {
    int e = errno;
    if (write(status, &e, sizeof e) < 0) {
    }
    _exit(127);
}
}

static void run_case(unsigned char *req, uint32_t len) {
    if (len < 8) _exit(4);
    uint32_t argc = get_u32(req), has_stdin = get_u32(req + 4);
    if (argc == 0 || argc > 65536) _exit(4);
    char **argv = calloc(argc + 1, sizeof *argv);
    if (!argv) _exit(5);
    char *p = (char *)req + 8, *end = (char *)req + len;
    char *workdir = p;
    for (uint32_t i = 0; i <= argc; i++) {
        char *nul = memchr(p, 0, (size_t)(end - p));
        if (!nul) _exit(4);
        if (i) argv[i - 1] = p;
        p = nul + 1;
    }
    const char *in_data = p;
    size_t in_left = has_stdin ? (size_t)(end - p) : 0;

    int in[2] = {-1, -1}, out[2], err[2], status[2];
    if (pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC) || pipe2(status, O_CLOEXEC)) _exit(5);
    if (has_stdin) {
        if (pipe2(in, O_CLOEXEC)) _exit(5);
    } else {
        in[0] = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (in[0] < 0) _exit(5);
    }
    pid_t pid = fork();
    if (pid < 0) {
        static const char msg[] = "fork failed";
        frame('F', msg, sizeof msg - 1);
        close(out[0]), close(out[1]), close(err[0]), close(err[1]);
        close(status[0]), close(status[1]), close(in[0]);
        if (in[1] >= 0) close(in[1]);
        free(argv);
        return;
    }
    if (pid == 0) child(workdir, argv, in[0], out[1], err[1], status[1]);
    close(in[0]), close(out[1]), close(err[1]), close(status[1]);
    int e = 0;
    ssize_t got;
    do got = read(status[0], &e, sizeof e);
    while (got < 0 && errno == EINTR);
    close(status[0]);
    free(argv);
    if (got == (ssize_t)sizeof e) { /* nothing of the case ran: the host runs it its own way */
        waitpid(pid, NULL, 0);
        const char *msg = strerror(e);
        frame('F', msg, (uint32_t)strlen(msg));
        close(out[0]), close(err[0]);
        if (in[1] >= 0) close(in[1]);
        return;
    }
    if (in[1] >= 0) {
        fcntl(in[1], F_SETFL, O_NONBLOCK);
        if (in_left == 0) close(in[1]), in[1] = -1;
    }

    int ofd[2] = {out[0], err[0]};
    char kind[2] = {'O', 'E'};
    static char buf[CHUNK];
    int exited = 0, wstatus = 0;
    long long deadline = 0;
    for (;;) {
        tell_continued(); /* at once: the host then judges the case its own way */
        if (exited && ofd[0] < 0 && ofd[1] < 0) break;
        int timeout = -1;
        if (exited) {
            long long left = deadline - now_ms();
            if (left <= 0) break;
            timeout = (int)left;
        }
        struct pollfd fds[5];
        int n = 0, at_out[2] = {-1, -1}, at_in = -1;
        fds[n++] = (struct pollfd){.fd = wake[0], .events = POLLIN};
        fds[n++] = (struct pollfd){.fd = 0, .events = POLLIN}; /* the host's end */
        for (int k = 0; k < 2; k++)
            if (ofd[k] >= 0) at_out[k] = n, fds[n++] = (struct pollfd){.fd = ofd[k], .events = POLLIN};
        if (in[1] >= 0) at_in = n, fds[n++] = (struct pollfd){.fd = in[1], .events = POLLOUT};
        if (poll(fds, (nfds_t)n, timeout) < 0) {
            if (errno == EINTR) continue;
            _exit(6);
        }
        if (fds[1].revents) { /* the host closed or spoke out of turn: end the case, and us */
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            _exit(0);
        }
        if (fds[0].revents & POLLIN) {
            char drain[64];
            while (read(wake[0], drain, sizeof drain) > 0) {
            }
            if (!exited && waitpid(pid, &wstatus, WNOHANG) == pid) {
                exited = 1;
                deadline = now_ms() + LINGER_MS;
                if (in[1] >= 0) close(in[1]), in[1] = -1;
            }
        }
        for (int k = 0; k < 2; k++) {
            if (at_out[k] < 0 || !fds[at_out[k]].revents) continue;
            ssize_t r = read(ofd[k], buf, sizeof buf);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) {
                close(ofd[k]);
                ofd[k] = -1;
            } else {
                frame(kind[k], buf, (uint32_t)r);
            }
        }
        if (at_in >= 0 && fds[at_in].revents) {
            ssize_t w = write(in[1], in_data, in_left > CHUNK ? CHUNK : in_left);
            if (w > 0) {
                in_data += w;
                in_left -= (size_t)w;
            }
            if ((w < 0 && errno != EAGAIN && errno != EINTR) || in_left == 0)
                close(in[1]), in[1] = -1;
        }
    }
    for (int k = 0; k < 2; k++)
        if (ofd[k] >= 0) close(ofd[k]); /* a holder past the window writes into a closed pipe */
    if (in[1] >= 0) close(in[1]);
    uint32_t code = WIFSIGNALED(wstatus) ? 128u + (uint32_t)WTERMSIG(wstatus)
                                         : (uint32_t)WEXITSTATUS(wstatus);
    tell_continued();
    frame_u32('X', code);
}

int main(void) {
    signal(SIGPIPE, SIG_IGN); /* a write to a dead host fails, and we end */
    if (pipe2(wake, O_CLOEXEC | O_NONBLOCK)) return 2;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    sigaction(SIGCHLD, &sa, NULL);
    sigaction(SIGCONT, &sa, NULL);
    for (int fd = 3; fd < 1024; fd++) /* nothing inherited reaches a case */
        if (fd != wake[0] && fd != wake[1]) fcntl(fd, F_SETFD, FD_CLOEXEC);
    frame_u32('H', (uint32_t)getpid());
    for (;;) {
        unsigned char head[5];
        if (read_all(0, head, 5) != 0) return 0; /* the host closed the channel */
        uint32_t len = get_u32(head + 1);
        if (head[0] != 'R' || len > MAX_FRAME) return 4;
        unsigned char *req = malloc(len ? len : 1);
        if (!req || read_all(0, req, len) != 0) return 5;
        run_case(req, len);
        free(req);
    }
}
