/* icae-walk: a case box seen from inside it, for engines whose layers this host cannot read.
 *
 * Built static on the host (sandbox/docker/inbox.py) and run from a read-only volume at
 * /dev/.icae, mode 0111: a case (root without capabilities) can run it but not read it, so the
 * kernel makes it non-dumpable from exec on, and nothing of the case can ptrace it or read its
 * memory. It never runs a program of the image.
 *
 *   icae-walk [-K] [-k PID]... [-t SEC.NSEC] [-r DIR]
 *
 *   -K        first kill (SIGKILL) every process but pid 1, itself and the -k pids, until none
 *             is left alive; the count alive when it started is reported
 *   -t T      the threshold: a regular file whose ctime is >= T is hashed (a case cannot set a
 *             ctime back: every change sets it to now); default now, reported
 *   -r DIR    after the walk, empty DIR (the box's tmpfs work directory)
 *   -e PATH   a delta lists PATH whatever its times (what was fresh in another box's baseline)
 *   -H        hash every regular file, fresh or not (a baseline: what a later look that finds
 *             a file rewritten with the same bytes compares against)
 *   -w        first wait (up to 5 s) until a process besides the init runs: a new box's
 *             keepalive
 *   -x DIR B64 [-- PROG ARGS]   fixtures (base64 of `inbox.pack_fixtures`) into DIR, then
 *             PROG exec'd by its PATH with the environment untouched; -X: the entries on stdin
 *   -d        a delta: only fresh paths, and everything in a fresh folder, are listed; the
 *             count and the summed hashes of all paths not fresh let the host check what it
 *             rebuilds from its baseline (a full walk)
 *
 * Output: NUL-separated fields. "ICAEWALK1", then key/value pairs, then "entries" and per path
 * nine fields (path kind mode uid gid size fresh digest target), then "end" and the count,
 * "unfresh" and "sum" (over the paths not fresh), "failed", then "reset" ok|failed when
 * asked, then "done". The walk never follows a link and skips
 * /proc, /sys and its own folder.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_KEEP 16
#define MAX_DEPTH 800 /* each level holds a descriptor; the box allows 1024 */
/* as the host's walk (sandbox/docker/hostview.py), so digests and cuts read the same */
#define HASH_CAP (16LL * 1024 * 1024)
#define WALK_HASH_BUDGET (1024LL * 1024 * 1024)
#define MAX_ENTRIES 200000ULL

static FILE *out;
static long long t_sec, t_nsec;
static unsigned long long n_entries;
#define FIELDS 9
static int failed, cut, delta, hash_all;
static unsigned long long n_walked, settled_count, settled_sum;
static long long budget = WALK_HASH_BUDGET;

static void field(const char *s) { fwrite(s, 1, strlen(s) + 1, out); }
static void fieldf(const char *fmt, long long v) {
    char buf[64];
    snprintf(buf, sizeof buf, fmt, v);
    field(buf);
}
static void pair(const char *key, long long v) { field(key); fieldf("%lld", v); }

/* --- sha256 (FIPS 180-4) ----------------------------------------------------------------- */

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

typedef struct {
    uint32_t h[8];
    unsigned char block[64];
    size_t used;
    uint64_t bytes;
} sha256;

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void sha_block(sha256 *s, const unsigned char *p) {
    uint32_t w[64], a, b, c, d, e, f, g, h;
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    a = s->h[0], b = s->h[1], c = s->h[2], d = s->h[3], e = s->h[4], f = s->h[5], g = s->h[6], h = s->h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = h + (ROR(e, 6) ^ ROR(e, 11) ^ ROR(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
        uint32_t t2 = (ROR(a, 2) ^ ROR(a, 13) ^ ROR(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        h = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
    }
    s->h[0] += a, s->h[1] += b, s->h[2] += c, s->h[3] += d;
    s->h[4] += e, s->h[5] += f, s->h[6] += g, s->h[7] += h;
}

static void sha_init(sha256 *s) {
    static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(s->h, h0, sizeof h0);
    s->used = 0, s->bytes = 0;
}

static void sha_feed(sha256 *s, const unsigned char *p, size_t n) {
    s->bytes += n;
    while (n) {
        size_t take = 64 - s->used < n ? 64 - s->used : n;
        memcpy(s->block + s->used, p, take);
        s->used += take, p += take, n -= take;
        if (s->used == 64) sha_block(s, s->block), s->used = 0;
    }
}

static void sha_hex(sha256 *s, char *hex) {
    uint64_t bits = s->bytes * 8;
    unsigned char pad = 0x80, zero = 0, len[8];
    sha_feed(s, &pad, 1);
    while (s->used != 56) sha_feed(s, &zero, 1);
    for (int i = 0; i < 8; i++) len[i] = (unsigned char)(bits >> (56 - 8 * i));
    sha_feed(s, len, 8);
    for (int i = 0; i < 8; i++) sprintf(hex + 8 * i, "%08x", s->h[i]);
}

/* --- processes ----------------------------------------------------------------------------- */

static int keep[MAX_KEEP], n_keep;
#define MAX_LISTED 64
static const char *listed[MAX_LISTED]; /* -e: paths a delta lists whatever their times */
static int n_listed;

static int always_listed(const char *path) {
    for (int i = 0; i < n_listed; i++)
        if (!strcmp(listed[i], path)) return 1;
    return 0;
}

/* state and start time of a process, from /proc/PID/stat (its name may hold ')') */
static int proc_stat(int pid, char *state, unsigned long long *start, int *ppid) {
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return -1;
    buf[n] = 0;
    char *p = strrchr(buf, ')');
    if (!p || p[1] != ' ') return -1;
    *state = p[2];
    p += 3;
    *ppid = atoi(p + 1);
    for (int i = 1; i < 20 && p; i++) { /* starttime is the 19th field after the state */
        p = strchr(p, ' ');
        if (p) p++;
    }
    *start = p ? strtoull(p, NULL, 10) : 0;
    return 0;
}

static int is_kept(int pid) {
    if (pid == 1 || pid == getpid()) return 1;
    for (int i = 0; i < n_keep; i++)
        if (keep[i] == pid) return 1;
    return 0;
}

/* count (and with `kill_them`, SIGKILL) the live processes that are not kept; zombies counted
 * apart; with `list`, the first few as pid:start:state:ppid */
static int others(int kill_them, int *zombies, char *list, size_t list_size) {
    DIR *d = opendir("/proc");
    int alive = 0;
    *zombies = 0;
    if (!d) return -1;
    struct dirent *e;
    while ((e = readdir(d))) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (*end || pid <= 0 || is_kept((int)pid)) continue;
        char state;
        unsigned long long start;
        int ppid;
        if (proc_stat((int)pid, &state, &start, &ppid) != 0) continue;
        if (state == 'Z' || state == 'X') {
            (*zombies)++;
            continue;
        }
        alive++;
        if (list && alive <= 32)
            snprintf(list + strlen(list), list_size - strlen(list), "%s%ld:%llu:%c:%d", alive > 1 ? "," : "", pid, start, state, ppid);
        if (kill_them) kill((pid_t)pid, SIGKILL);
    }
    closedir(d);
    return alive;
}

static void pause_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void settle(int do_kill, int wait_keepalive) {
    char list[2048] = "";
    int zombies = 0, alive = others(0, &zombies, list, sizeof list);
    /* a new box: its init forks the keepalive a moment after it starts */
    for (int round = 0; wait_keepalive && alive == 0 && round < 5000; round++) {
        pause_ms(1);
        alive = others(0, &zombies, list, sizeof list);
    }
    pair("alive", alive);
    field("others");
    field(list);
    if (do_kill) {
        /* a fork bomb refills as we kill; its pids limit bounds it, and so do our rounds */
        for (int round = 0; round < 5000 && others(1, &zombies, NULL, 0) > 0; round++) pause_ms(1);
        for (int round = 0; round < 3000 && (others(0, &zombies, NULL, 0) > 0 || zombies); round++) pause_ms(1);
    }
    alive = others(0, &zombies, NULL, 0);
    pair("left", alive);
    pair("zombies", zombies);
    field("procs");
    char buf[4096] = "";
    int pids[MAX_KEEP + 1], n = 0;
    pids[n++] = 1;
    for (int i = 0; i < n_keep; i++) pids[n++] = keep[i];
    for (int i = 0; i < n; i++) {
        char state = '?';
        unsigned long long start = 0;
        int ppid = 0;
        if (proc_stat(pids[i], &state, &start, &ppid) != 0) state = '-';
        snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%d:%llu:%c", i ? "," : "", pids[i], start, state);
    }
    field(buf);
}

static long long count_lines(const char *path) {
    FILE *f = fopen(path, "re");
    if (!f) return -1;
    long long n = 0;
    int c;
    while ((c = getc(f)) != EOF) n += c == '\n';
    fclose(f);
    return n;
}

static long long cgroup_counter(const char *path, const char *key) {
    FILE *f = fopen(path, "re");
    if (!f) return -1;
    char name[64];
    long long v, found = -1;
    while (fscanf(f, "%63s %lld", name, &v) == 2)
        if (!strcmp(name, key)) found = v;
    fclose(f);
    return found;
}

/* --- the walk ------------------------------------------------------------------------------ */

static int skipped(const char *path) {
    return !strcmp(path, "/proc") || !strcmp(path, "/sys") || !strcmp(path, "/dev/.icae");
}

static void entry(int dirfd, const char *name, const char *path, int depth, int emit_all);

static void walk_dir(int fd, const char *path, int depth, int emit_all) {
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        failed = 1;
        return;
    }
    struct dirent *e;
    size_t plen = strlen(path);
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        size_t nlen = strlen(e->d_name);
        char *child = malloc(plen + nlen + 2);
        if (!child) {
            failed = 1;
            break;
        }
        size_t at = plen == 1 ? 0 : plen; /* under "/" no second slash */
        memcpy(child, path, at);
        child[at] = '/';
        memcpy(child + at + 1, e->d_name, nlen + 1);
        entry(dirfd(d), e->d_name, child, depth + 1, emit_all);
        free(child);
    }
    closedir(d);
}

/* One record, its fields each ending in NUL; its hash (the first 8 bytes of the sha256 of its
 * fields, the digest left empty) is summed over every record not fresh, so the host can check
 * what it rebuilt from a delta. */
static void record(const char *f[FIELDS], int emit, int fresh) {
    if (emit) {
        for (int i = 0; i < FIELDS; i++) field(f[i]);
        n_entries++;
    }
    if (fresh) return;
    sha256 s;
    char hex[128];
    sha_init(&s);
    for (int i = 0; i < FIELDS; i++) /* a digest not fresh is left out: a delta may not have it */
        sha_feed(&s, (const unsigned char *)(i == 7 ? "" : f[i]), i == 7 ? 1 : strlen(f[i]) + 1);
    sha_hex(&s, hex);
    unsigned long long h = 0;
    for (int i = 0; i < 8; i++) { /* bytes 0..7 of the digest, read little-endian */
        unsigned int byte;
        sscanf(hex + 2 * i, "%2x", &byte);
        h |= (unsigned long long)byte << (8 * i);
    }
    settled_sum += h;
    settled_count++;
}

static void entry(int dirfd, const char *name, const char *path, int depth, int emit_all) {
    struct stat st;
    if (cut) return;
    if (n_walked >= MAX_ENTRIES) { /* stops here, in readdir's order; one marker says so */
        cut = 1;
        return;
    }
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno != ENOENT) failed = 1;
        return;
    }
    n_walked++;
    /* a file system keeping whole seconds (mqueue does) truncates a ctime: there a time in
     * T's second counts as fresh (a ctime with no nanoseconds is taken to be such a one) */
    int fresh = st.st_ctim.tv_sec > t_sec ||
                (st.st_ctim.tv_sec == t_sec && (st.st_ctim.tv_nsec >= t_nsec || st.st_ctim.tv_nsec == 0));
    const char *kind = "other";
    char digest[128] = "", target[4097] = "";
    long long size = 0;
    int emit = !delta || fresh || emit_all || (n_listed && always_listed(path));
    int hash = emit && (fresh || emit_all || hash_all); /* fresh, or new where it is */
    if (S_ISREG(st.st_mode)) {
        kind = "file";
        size = st.st_size;
        long long want = size < HASH_CAP ? size : HASH_CAP;
        if (hash && want > budget) {
            snprintf(digest, sizeof digest, "unhashed:%lld", size);
        } else if (hash) {
            int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
            struct stat fst;
            if (fd < 0 || fstat(fd, &fst) != 0 || fst.st_ino != st.st_ino || fst.st_dev != st.st_dev) {
                strcpy(digest, "unreadable");
            } else {
                sha256 s;
                static unsigned char buf[1 << 16];
                ssize_t n = 0;
                long long got = 0;
                sha_init(&s);
                while (got < want && (n = read(fd, buf, want - got < (long long)sizeof buf ? (size_t)(want - got) : sizeof buf)) > 0)
                    sha_feed(&s, buf, (size_t)n), got += n;
                budget -= got;
                if (n < 0) strcpy(digest, "unreadable");
                else sha_hex(&s, digest);
                if (n >= 0 && size > HASH_CAP)
                    snprintf(digest + 64, sizeof digest - 64, ":first%lldof%lld", HASH_CAP, size);
            }
            if (fd >= 0) close(fd);
        }
    } else if (S_ISDIR(st.st_mode)) {
        kind = "dir";
    } else if (S_ISLNK(st.st_mode)) {
        kind = "link";
        ssize_t n = readlinkat(dirfd, name, target, sizeof target - 1);
        target[n > 0 ? n : 0] = 0;
    }
    char mode[24], uid[24], gid[24], sz[24];
    snprintf(mode, sizeof mode, "%lld", (long long)(st.st_mode & 07777));
    snprintf(uid, sizeof uid, "%lld", (long long)st.st_uid);
    snprintf(gid, sizeof gid, "%lld", (long long)st.st_gid);
    snprintf(sz, sizeof sz, "%lld", size);
    const char *f[FIELDS] = {path, kind, mode, uid, gid, sz, fresh ? "1" : "0", digest, target};
    /* a delta shows what is fresh, and all of a fresh folder: what was added, removed or
     * renamed anywhere changed the ctime of the folder it was in */
    record(f, emit, fresh);
    if (S_ISDIR(st.st_mode) && !skipped(path)) {
        if (depth >= MAX_DEPTH) {
            failed = 1;
            return;
        }
        int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
            failed = 1;
            return;
        }
        walk_dir(fd, path, depth, emit_all || fresh);
    }
}

/* --- emptying the work directory ----------------------------------------------------------- */

static int empty_dir(int fd) {
    struct stat st;
    if (fstat(fd, &st) != 0) return -1;
    /* a case may have made it unwritable (we own it): opened up while emptied, then its
     * mode is put back, so the walk after the next case compares it as it was */
    int reopened = (st.st_mode & 0700) != 0700 && fchmod(fd, (st.st_mode & 07777) | 0700) == 0;
    DIR *d = fdopendir(fd);
    if (!d) return -1;
    int bad = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        if (unlinkat(dirfd(d), e->d_name, 0) == 0) continue;
        int sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub < 0 || empty_dir(sub) != 0 || unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR) != 0) bad = 1;
    }
    if (reopened && fchmod(dirfd(d), st.st_mode & 07777) != 0) bad = 1;
    closedir(d);
    return bad ? -1 : 0;
}

/* --- fixtures: unpacked, then the case exec'd -------------------------------------------- */

static int b64(int c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
}

static size_t unbase64(const char *in, unsigned char *out) {
    size_t n = 0;
    unsigned int acc = 0;
    int bits = 0;
    for (; *in && *in != '='; in++) {
        int v = b64((unsigned char)*in);
        if (v < 0) continue;
        acc = acc << 6 | (unsigned int)v, bits += 6;
        if (bits >= 8) bits -= 8, out[n++] = (unsigned char)(acc >> bits);
    }
    return n;
}

/* open (O_NOFOLLOW all the way) the folder holding `rel`, under `top`; with `make`, its
 * folders are made first. Returns the folder's descriptor and sets *leaf. */
static int parent_of(int top, char *rel, char **leaf) {
    int fd = dup(top);
    char *part = rel, *slash;
    while (fd >= 0 && (slash = strchr(part, '/'))) {
        *slash = 0;
        int sub = openat(fd, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        close(fd);
        *slash = '/';
        fd = sub;
        part = slash + 1;
    }
    *leaf = part;
    return fd;
}

static int bad_path(const char *rel) {
    if (!*rel || rel[0] == '/') return 1;
    for (const char *p = rel; p; p = strchr(p, '/') ? strchr(p, '/') + 1 : NULL)
        if (!strncmp(p, "..", 2) && (p[2] == '/' || !p[2])) return 1;
    return 0;
}

/* Entries, as `inbox.pack_fixtures` writes them: 'D' path NUL, or 'F' path NUL size NUL bytes.
 * Folders 0755, files 0644, made new (never through a link), as the host's path makes them. */
static int unpack(const char *dir, unsigned char *data, size_t n) {
    int top = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (top < 0) return -1;
    size_t i = 0;
    int bad = 0;
    while (!bad && i < n) {
        char type = (char)data[i++];
        char *path = (char *)data + i;
        size_t plen = strnlen(path, n - i);
        if (plen == n - i || bad_path(path)) {
            bad = 1;
            break;
        }
        i += plen + 1;
        char *leaf;
        int fd = parent_of(top, path, &leaf);
        if (fd < 0) {
            bad = 1;
            break;
        }
        if (type == 'D') {
            if (mkdirat(fd, leaf, 0755) != 0 && errno != EEXIST) bad = 1;
            else if (fchmodat(fd, leaf, 0755, AT_SYMLINK_NOFOLLOW) != 0 && errno != ENOTSUP) bad = 1;
        } else if (type == 'F') {
            char *size_text = (char *)data + i;
            size_t slen = strnlen(size_text, n - i);
            unsigned long long size = strtoull(size_text, NULL, 10);
            i += slen + 1;
            if (slen == 0 || i > n || size > n - i) {
                bad = 1;
            } else {
                int f = openat(fd, leaf, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
                if (f < 0 || write(f, data + i, size) != (ssize_t)size || fchmod(f, 0644) != 0) bad = 1;
                if (f >= 0) close(f);
                i += size;
            }
        } else {
            bad = 1;
        }
        close(fd);
    }
    close(top);
    return bad ? -1 : 0;
}

/* icae-walk -x DIR BASE64 [-- PROG ARGS] | -X DIR [-- PROG ARGS] (the entries on stdin) */
static int fixtures_then(int argc, char **argv) {
    if (argc < 3) return 2;
    int from_stdin = !strcmp(argv[1], "-X");
    int rest = from_stdin ? 3 : 4;
    unsigned char *data;
    size_t n = 0;
    if (from_stdin) {
        size_t cap = 1 << 20;
        data = malloc(cap);
        ssize_t got;
        while (data && (got = read(0, data + n, cap - n)) > 0)
            if ((n += (size_t)got) == cap) data = realloc(data, cap *= 2);
    } else {
        if (argc < 4) return 2;
        data = malloc(strlen(argv[3]) + 1);
        if (data) n = unbase64(argv[3], data);
    }
    if (!data || unpack(argv[2], data, n) != 0) {
        fprintf(stderr, "icae: the fixtures could not be unpacked\n");
        return 125;
    }
    free(data);
    if (rest < argc && !strcmp(argv[rest], "--") && rest + 1 < argc) {
        execvp(argv[rest + 1], argv + rest + 1); /* the image's own, by its PATH, as docker would */
        fprintf(stderr, "icae: cannot run %s: %s\n", argv[rest + 1], strerror(errno));
        return 127;
    }
    return 0;
}

int main(int argc, char **argv) {
    prctl(PR_SET_DUMPABLE, 0); /* already so by its mode; kept if the mode ever changes */
    if (argc > 1 && (!strcmp(argv[1], "-x") || !strcmp(argv[1], "-X"))) return fixtures_then(argc, argv);
    static char outbuf[1 << 16];
    out = stdout;
    setvbuf(out, outbuf, _IOFBF, sizeof outbuf);
    int do_kill = 0, wait_keepalive = 0;
    const char *reset = NULL;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME_COARSE, &now); /* ctimes come from the coarse clock */
    t_sec = now.tv_sec, t_nsec = now.tv_nsec;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-K")) do_kill = 1;
        else if (!strcmp(argv[i], "-d")) delta = 1;
        else if (!strcmp(argv[i], "-w")) wait_keepalive = 1;
        else if (!strcmp(argv[i], "-H")) hash_all = 1;
        else if (!strcmp(argv[i], "-e") && i + 1 < argc && n_listed < MAX_LISTED) listed[n_listed++] = argv[++i];
        else if (!strcmp(argv[i], "-k") && i + 1 < argc && n_keep < MAX_KEEP) keep[n_keep++] = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-t") && i + 1 < argc) {
            char *dot;
            t_sec = strtoll(argv[++i], &dot, 10);
            t_nsec = *dot == '.' ? strtoll(dot + 1, NULL, 10) : 0;
        } else if (!strcmp(argv[i], "-r") && i + 1 < argc) reset = argv[++i];
        else {
            fprintf(stderr, "icae-walk: bad argument %s\n", argv[i]);
            return 2;
        }
    }
    field("ICAEWALK1");
    settle(do_kill, wait_keepalive);
    field("t");
    char tbuf[64];
    snprintf(tbuf, sizeof tbuf, "%lld.%09lld", t_sec, t_nsec);
    field(tbuf);
    pair("sysv", count_lines("/proc/sysvipc/shm") + count_lines("/proc/sysvipc/sem") +
                     count_lines("/proc/sysvipc/msg") - 3);
    long long oom = cgroup_counter("/sys/fs/cgroup/memory.events", "oom_kill"); /* cgroup v2 */
    if (oom < 0) oom = cgroup_counter("/sys/fs/cgroup/memory/memory.oom_control", "oom_kill");
    long long pids_max = cgroup_counter("/sys/fs/cgroup/pids.events", "max");
    if (pids_max < 0) pids_max = cgroup_counter("/sys/fs/cgroup/pids/pids.events", "max");
    pair("oom", oom);
    pair("pidsmax", pids_max);
    field("entries");
    entry(AT_FDCWD, "/", "/", 0, 0);
    if (cut) {
        char why[64];
        snprintf(why, sizeof why, "walk cut at %llu entries", n_entries);
        char marker[80];
        snprintf(marker, sizeof marker, "/<%s>", why);
        const char *f[] = {marker, "other", "0", "0", "0", "0", "1", why, ""};
        for (int i = 0; i < 9; i++) field(f[i]);
        n_entries++;
    }
    field("end");
    fieldf("%lld", (long long)n_entries);
    pair("unfresh", (long long)settled_count);
    char sum[32];
    snprintf(sum, sizeof sum, "%llu", settled_sum);
    field("sum");
    field(sum);
    pair("failed", failed);
    if (reset) {
        field("reset");
        int fd = open(reset, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        field(fd >= 0 && empty_dir(fd) == 0 ? "ok" : "failed");
    }
    field("done");
    return fflush(out) == 0 ? 0 : 4;
}
