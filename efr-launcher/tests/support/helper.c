/* The escape battery's helper: each mode tries one thing and prints "ok" (exit 0) or "fail errno=N (text)"
 * (exit 1). Built by the tests with gcc into a temporary folder; see tests/support/mod.rs. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/io_uring.h>
#include <netinet/in.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static int fail(void) {
    int e = errno;
    printf("fail errno=%d (%s)\n", e, strerror(e));
    return 1;
}

static int ok(void) {
    printf("ok\n");
    return 0;
}

static int tcp(const char *host, int port) {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (s < 0) return fail();
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    inet_pton(AF_INET, host, &a.sin_addr);
    if (connect(s, (struct sockaddr *)&a, sizeof a) < 0) return fail();
    return ok();
}

/* A DNS query for example.com A to 127.0.0.1:port; ok when an answer with the same id comes back in 1 s. */
static int dns(int port) {
    unsigned char q[] = {0x12, 0x34, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 7, 'e', 'x', 'a', 'm', 'p', 'l', 'e',
                         3, 'c', 'o', 'm', 0, 0, 1, 0, 1};
    int s = socket(AF_INET, SOCK_DGRAM, 0);
    if (s < 0) return fail();
    struct timeval tv = {.tv_sec = 1};
    setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    if (sendto(s, q, sizeof q, 0, (struct sockaddr *)&a, sizeof a) < 0) return fail();
    unsigned char r[512];
    ssize_t n = recv(s, r, sizeof r, 0);
    if (n < 0) return fail();
    if (n < 2 || r[0] != 0x12 || r[1] != 0x34) { errno = EPROTO; return fail(); }
    return ok();
}

static int unix_connect(const char *path, int abstract) {
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    if (s < 0) return fail();
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    size_t len = strlen(path);
    if (len + 1 > sizeof a.sun_path) { errno = ENAMETOOLONG; return fail(); }
    memcpy(a.sun_path + (abstract ? 1 : 0), path, len);
    socklen_t alen = offsetof(struct sockaddr_un, sun_path) + len + (abstract ? 1 : 0);
    if (connect(s, (struct sockaddr *)&a, alen) < 0) return fail();
    return ok();
}

static int do_ptrace(void) {
    pid_t child = fork();
    if (child == 0) { pause(); _exit(0); }
    int rc = ptrace(PTRACE_ATTACH, child, 0, 0);
    int e = errno;
    kill(child, SIGKILL);
    waitpid(child, 0, 0);
    errno = e;
    return rc < 0 ? fail() : ok();
}

static int caps(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256], eff[64] = "?";
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "CapEff: %63s", eff) == 1) break;
    printf("euid=%d capeff=%s\n", (int)geteuid(), eff);
    return 0;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "tcp") && argc == 4) return tcp(argv[2], atoi(argv[3]));
    if (!strcmp(mode, "dns") && argc == 3) return dns(atoi(argv[2]));
    if (!strcmp(mode, "unix") && argc == 3) return unix_connect(argv[2], 0);
    if (!strcmp(mode, "abstract") && argc == 3) return unix_connect(argv[2], 1);
    if (!strcmp(mode, "ptrace")) return do_ptrace();
    if (!strcmp(mode, "caps")) return caps();
    if (!strcmp(mode, "iouring")) {
        struct io_uring_params p;
        memset(&p, 0, sizeof p);
        long fd = syscall(__NR_io_uring_setup, 4, &p);
        return fd < 0 ? fail() : ok();
    }
    if (!strcmp(mode, "x32")) {
        /* socket(AF_INET, SOCK_STREAM, 0) through the x32 entry: number 41 with bit 30 set. */
        long fd = syscall(0x40000000L | 41, AF_INET, SOCK_STREAM, 0);
        return fd < 0 ? fail() : ok();
    }
    if (!strcmp(mode, "inet")) return socket(AF_INET, SOCK_STREAM, 0) < 0 ? fail() : ok();
    if (!strcmp(mode, "netlink")) return socket(AF_NETLINK, SOCK_RAW, 0) < 0 ? fail() : ok();
    fprintf(stderr, "usage: helper tcp HOST PORT | dns PORT | unix PATH | abstract NAME | ptrace | caps | iouring | x32 | inet | netlink\n");
    return 2;
}
