/* The escape battery's helper: each mode tries one thing and prints "ok" (exit 0) or "fail errno=N (text)"
 * (exit 1). Built by the tests with gcc into a temporary folder; see tests/support/mod.rs. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <linux/sched.h>
#include <pthread.h>
#include <sched.h>
#include <spawn.h>
#include <netinet/in.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/ptrace.h>
#include <sys/quota.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

extern char **environ;

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

/* One line per call: "name ok" or "name errno=N". The arguments are harmless where a call goes through (a query,
 * an empty range, a bad descriptor), and chosen so that the kernel's own answer outside the filter is not the one the
 * filter gives, where such arguments exist. */
static void report(const char *name, long rc) {
    if (rc < 0) printf("%s errno=%d\n", name, errno);
    else printf("%s ok\n", name);
    fflush(stdout);
}

/* A child that does nothing: for the clone calls that go through. */
static void reap(long pid) {
    if (pid > 0) waitpid((pid_t)pid, 0, 0);
}

static void *thread_body(void *arg) { return arg; }

/* TIOCSTI and TIOCLINUX on a pty of its own that is the controlling terminal of a new session (TIOCSTI on any other
 * terminal needs CAP_SYS_ADMIN, so the kernel alone would refuse it too). Each result from a child, so the session
 * changes nothing else. */
static void terminal_calls(void) {
    const struct { const char *name; unsigned long request; } cases[] = {
        {"ioctl_tiocsti", TIOCSTI},
        {"ioctl_tiocsti_high_bits", 0xdead000000000000UL | TIOCSTI},
        {"ioctl_tioclinux", TIOCLINUX},
        {"ioctl_tcgets", TCGETS},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pid_t child = fork();
        if (child == 0) {
            int master = posix_openpt(O_RDWR | O_NOCTTY);
            if (master < 0 || grantpt(master) < 0 || unlockpt(master) < 0 || setsid() < 0) {
                printf("%s setup-failed errno=%d\n", cases[i].name, errno);
                _exit(1);
            }
            int slave = open(ptsname(master), O_RDWR); /* the session's controlling terminal */
            if (slave < 0) { printf("%s setup-failed errno=%d\n", cases[i].name, errno); _exit(1); }
            char byte = ' ';
            struct termios t;
            void *arg = cases[i].request == TCGETS ? (void *)&t : (void *)&byte;
            if (cases[i].request == TIOCLINUX) byte = 6; /* TIOCL_GETSHIFTSTATE */
            report(cases[i].name, syscall(SYS_ioctl, slave, cases[i].request, arg));
            _exit(0);
        }
        waitpid(child, 0, 0);
    }
}

static int calls(void) {
    setvbuf(stdout, 0, _IOLBF, 0);
    report("perf_event_open", syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0));
    report("bpf", syscall(SYS_bpf, 0 /* BPF_MAP_CREATE */, NULL, 0));
    report("userfaultfd", syscall(SYS_userfaultfd, 1 /* UFFD_USER_MODE_ONLY */ | O_CLOEXEC));
    report("personality_query", syscall(SYS_personality, 0xffffffffUL));
    report("personality_linux", syscall(SYS_personality, PER_LINUX));
    report("personality_no_randomize", syscall(SYS_personality, PER_LINUX | ADDR_NO_RANDOMIZE));
    report("personality_uname26", syscall(SYS_personality, UNAME26));
    report("personality_read_implies_exec", syscall(SYS_personality, READ_IMPLIES_EXEC));
    report("personality_uname26_high_bits", syscall(SYS_personality, 0xdead00000000UL | UNAME26));
    syscall(SYS_personality, PER_LINUX);
    report("unshare_newuser", syscall(SYS_unshare, CLONE_NEWUSER));
    report("unshare_files", syscall(SYS_unshare, CLONE_FILES));
    long pid = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
    if (pid == 0) _exit(0);
    report("clone_newuser", pid);
    reap(pid);
    pid = syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
    if (pid == 0) _exit(0);
    report("clone_fork", pid);
    reap(pid);
    struct clone_args args;
    memset(&args, 0, sizeof args);
    args.exit_signal = SIGCHLD;
    pid = syscall(SYS_clone3, &args, sizeof args);
    if (pid == 0) _exit(0);
    report("clone3", pid);
    reap(pid);
    /* What glibc builds on clone3 falls back to clone. */
    pthread_t thread;
    int err = pthread_create(&thread, NULL, thread_body, NULL);
    if (err == 0) pthread_join(thread, NULL);
    errno = err;
    report("pthread_create", err ? -1 : 0);
    char *argv[] = {"true", NULL};
    pid_t pid_spawned;
    err = posix_spawnp(&pid_spawned, "true", NULL, NULL, argv, environ);
    errno = err;
    report("posix_spawn", err ? -1 : 0);
    if (!err) waitpid(pid_spawned, 0, 0);
    terminal_calls();
    report("kexec_load", syscall(SYS_kexec_load, 0, 0, NULL, 0xffff0000UL /* no such flags */));
    report("kexec_file_load", syscall(SYS_kexec_file_load, -1, -1, 0, "", 0));
    report("init_module", syscall(SYS_init_module, NULL, 0, ""));
    report("finit_module", syscall(SYS_finit_module, -1, "", 0));
    report("delete_module", syscall(SYS_delete_module, "efr_no_such_module", O_NONBLOCK));
    report("syslog", syscall(SYS_syslog, 10 /* SYSLOG_ACTION_SIZE_BUFFER */, NULL, 0));
    report("acct", syscall(SYS_acct, NULL));
    report("quotactl", syscall(SYS_quotactl, QCMD(Q_SYNC, USRQUOTA), NULL, 0, NULL));
    int root = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    report("quotactl_fd", syscall(SYS_quotactl_fd, root, QCMD(Q_SYNC, USRQUOTA), 0, NULL));
#ifdef __x86_64__
    char ldt[16];
    report("modify_ldt", syscall(SYS_modify_ldt, 0, ldt, sizeof ldt));
    report("uselib", syscall(SYS_uselib, NULL));
#endif
    report("mbind", syscall(SYS_mbind, NULL, 0, 0 /* MPOL_DEFAULT */, NULL, 0, 0));
    report("get_mempolicy", syscall(SYS_get_mempolicy, NULL, NULL, 0, NULL, 0));
    report("set_mempolicy", syscall(SYS_set_mempolicy, 0 /* MPOL_DEFAULT */, NULL, 0));
    report("set_mempolicy_home_node", syscall(SYS_set_mempolicy_home_node, 0, 0, 0, 0));
    report("migrate_pages", syscall(SYS_migrate_pages, 0, 0, NULL, NULL));
    report("move_pages", syscall(SYS_move_pages, 0, 0, NULL, NULL, NULL, 0));
    report("setns", syscall(SYS_setns, -1, 0));
    report("mount", syscall(SYS_mount, "none", "/efr-no-such-folder", "tmpfs", 0, NULL));
    report("umount2", syscall(SYS_umount2, "/efr-no-such-folder", 0));
    report("pivot_root", syscall(SYS_pivot_root, "/efr-no-such-folder", "/efr-no-such-folder"));
    report("chroot", syscall(SYS_chroot, "/"));
    report("open_tree", syscall(SYS_open_tree, AT_FDCWD, "/", O_CLOEXEC));
    report("move_mount", syscall(SYS_move_mount, -1, "", -1, "", 0));
    report("fsopen", syscall(SYS_fsopen, "tmpfs", 0));
    report("fsconfig", syscall(SYS_fsconfig, -1, 0, NULL, NULL, 0));
    report("fsmount", syscall(SYS_fsmount, -1, 0, 0));
    report("fspick", syscall(SYS_fspick, AT_FDCWD, "/", 0));
    report("mount_setattr", syscall(SYS_mount_setattr, -1, "", 0, NULL, 0));
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
    if (!strcmp(mode, "calls")) return calls();
    if (!strcmp(mode, "inet")) return socket(AF_INET, SOCK_STREAM, 0) < 0 ? fail() : ok();
    if (!strcmp(mode, "netlink")) return socket(AF_NETLINK, SOCK_RAW, 0) < 0 ? fail() : ok();
    fprintf(stderr, "usage: helper tcp HOST PORT | dns PORT | unix PATH | abstract NAME | ptrace | caps | iouring | x32 | calls | inet | netlink\n");
    return 2;
}
