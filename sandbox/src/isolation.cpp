#include "isolation.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/mount.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "posix_util.h"

// Landlock constants newer than the Debian 12 kernel headers (the running kernel decides
// which ABI is available; see LandlockAbi()).
#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_NET_BIND_TCP
#define LANDLOCK_ACCESS_NET_BIND_TCP (1ULL << 0)
#define LANDLOCK_ACCESS_NET_CONNECT_TCP (1ULL << 1)
#endif
#ifndef LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define LANDLOCK_SCOPE_SIGNAL (1ULL << 1)
#endif

namespace egca::sandbox::internal {
namespace {

// struct landlock_ruleset_attr as of ABI 6 (older kernels take a prefix of it).
struct LandlockRulesetAttr {
  uint64_t handled_access_fs;
  uint64_t handled_access_net;
  uint64_t scoped;
};

int LandlockAbi() {
  long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  return abi < 0 ? 0 : static_cast<int>(abi);
}

bool SeccompAvailable() { return prctl(PR_GET_SECCOMP, 0, 0, 0, 0) >= 0; }

bool WriteSmallFile(const char* path, const std::string& text) {
  UniqueFd fd(::open(path, O_WRONLY | O_CLOEXEC));
  return fd.valid() &&
         ::write(fd.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size());
}

// Read-only view of every mount, tmpfs over /tmp and over the scratch root. Runs in the
// server's fresh mount namespace; false when any step fails (the namespace then only
// keeps what succeeded, and Landlock still confines writes where available).
bool SetUpMounts(const ForkServerOptions& options) {
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return false;
  mount_attr attr{};
  attr.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID;
  if (::syscall(SYS_mount_setattr, AT_FDCWD, "/", AT_RECURSIVE, &attr, sizeof(attr)) != 0) {
    return false;
  }
  if (::mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=64m,mode=1777") != 0) {
    return false;
  }
  // An empty, read-only /dev/shm: the host's shared-memory files are not visible and
  // nothing can be stored there outside the memory limit. Best effort (no /dev/shm).
  ::mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY,
          "size=4k,nr_inodes=1,mode=0555");
  // scratch_root exists on the host already (made before unshare) unless it lies under
  // /tmp, which is now the fresh tmpfs.
  if (!MakeDirs(options.scratch_root, 0711)) return false;
  std::string data = fmt::format("size={},nr_inodes=65536,mode=0711", options.scratch_tmpfs_bytes);
  return ::mount("tmpfs", options.scratch_root.c_str(), "tmpfs", MS_NOSUID | MS_NODEV,
                 data.c_str()) == 0;
}

// Creates `path` beneath `root` as what `like` is on the host: a directory (made with its
// parents), an empty file to bind a file onto, or the same symbolic link.
bool MakeMountPoint(const std::string& root, const std::string& like, bool* is_link) {
  struct stat st {};
  if (::lstat(like.c_str(), &st) != 0) return false;
  const std::string target = root + like;
  const size_t slash = target.rfind('/');
  if (slash != std::string::npos && !MakeDirs(target.substr(0, slash), 0755)) return false;
  *is_link = S_ISLNK(st.st_mode);
  if (*is_link) {
    char buffer[4096];
    ssize_t n = ::readlink(like.c_str(), buffer, sizeof(buffer) - 1);
    if (n <= 0) return false;
    buffer[n] = '\0';
    return ::symlink(buffer, target.c_str()) == 0 || errno == EEXIST;
  }
  if (S_ISDIR(st.st_mode)) return MakeDirs(target, 0755);
  UniqueFd fd(::open(target.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
  return fd.valid() || errno == EEXIST;
}

// The root children see: a read-only tmpfs holding bind mounts of the readable paths (read
// only, as the whole tree already is), /dev/{null,zero,urandom,random}, /proc, a fresh
// /tmp and the scratch root, and nothing else; pivot_root makes it `/` for this server and
// every child it forks. Without Landlock this is what keeps data sets, tests and user
// files out of sight; with it, a second wall. false (nothing changed) when a step fails.
bool EnterFilesystemView(const ForkServerOptions& options) {
  const std::string root = "/tmp/.egca-view";
  if (!MakeDirs(root, 0755)) return false;
  if (::mount("tmpfs", root.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755") != 0) {
    return false;
  }
  auto fail = [&] {
    ::umount2(root.c_str(), MNT_DETACH);
    return false;
  };
  auto bind = [&](const std::string& path) {
    bool is_link = false;
    if (!MakeMountPoint(root, path, &is_link)) return false;
    return is_link ||
           ::mount(path.c_str(), (root + path).c_str(), nullptr, MS_BIND | MS_REC, nullptr) == 0;
  };
  // Shortest first, so that a path beneath one already bound is skipped (it is there).
  std::vector<std::string> paths = options.readable_paths;
  std::sort(paths.begin(), paths.end());
  std::vector<std::string> bound;
  for (const std::string& path : paths) {
    struct stat st {};
    if (path.empty() || path[0] != '/' || ::lstat(path.c_str(), &st) != 0) continue;  // absent
    bool covered = false;
    for (const std::string& b : bound) {
      covered = covered || (path.compare(0, b.size(), b) == 0 &&
                            (path.size() == b.size() || path[b.size()] == '/'));
    }
    if (covered) continue;
    if (!bind(path)) return fail();
    bound.push_back(path);
  }
  for (const char* dev : {"/dev/null", "/dev/zero", "/dev/urandom", "/dev/random"}) {
    if (!bind(dev)) return fail();
  }
  // As root, a procfs of its own that shows each uid only its own processes (children run
  // under a uid of their own: they see themselves alone, Landlock or not); unprivileged,
  // procfs cannot be mounted for the host's pid namespace, so the host's /proc is bound.
  if (!MakeDirs(root + "/proc", 0555)) return fail();
  const std::string proc = root + "/proc";
  if (!(geteuid() == 0 && ::mount("proc", proc.c_str(), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                                  "hidepid=invisible") == 0) &&
      ::mount("/proc", proc.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0) {
    return fail();
  }
  if (!MakeDirs(root + "/tmp", 01777) || ::mount("tmpfs", (root + "/tmp").c_str(), "tmpfs",
                                                 MS_NOSUID | MS_NODEV, "size=64m,mode=1777") != 0) {
    return fail();
  }
  if (!MakeDirs(root + options.scratch_root, 0711) ||
      ::mount(options.scratch_root.c_str(), (root + options.scratch_root).c_str(), nullptr,
              MS_BIND | MS_REC, nullptr) != 0) {
    return fail();
  }
  if (::mount(nullptr, root.c_str(), nullptr, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV,
              nullptr) != 0) {
    return fail();
  }
  // pivot_root(".", "."): the old root is stacked under the new one and detached at once.
  UniqueFd old_root(::open("/", O_DIRECTORY | O_RDONLY | O_CLOEXEC));
  if (!old_root.valid() || ::chdir(root.c_str()) != 0) return fail();
  if (::syscall(SYS_pivot_root, ".", ".") != 0) {
    if (::fchdir(old_root.get()) != 0) _exit(1);
    return fail();
  }
  if (::umount2(".", MNT_DETACH) != 0 || ::chdir("/") != 0) _exit(1);  // half a view: stop
  return true;
}

// Unprivileged: a user namespace owning new net and mount namespaces, our uid/gid mapped
// to themselves (files keep their owner; nothing else is mapped).
bool EnterUserNamespace() {
  uid_t uid = geteuid();
  gid_t gid = getegid();
  if (::unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC) != 0 &&
      ::unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET) != 0) {
    return false;
  }
  return WriteSmallFile("/proc/self/setgroups", "deny") &&
         WriteSmallFile("/proc/self/uid_map", fmt::format("{} {} 1\n", uid, uid)) &&
         WriteSmallFile("/proc/self/gid_map", fmt::format("{} {} 1\n", gid, gid));
}

void SetFixedEnvironment(const ForkServerOptions& options, const std::string& work_dir) {
  clearenv();
  setenv("PYTHONHASHSEED", "0", 1);
  setenv("HOME", work_dir.c_str(), 1);
  setenv("TMPDIR", work_dir.c_str(), 1);
  setenv("LANG", "C.UTF-8", 1);
  setenv("TZ", "UTC", 1);
  setenv("PATH", "/usr/bin:/bin", 1);
  for (const auto& [name, value] : options.extra_env) setenv(name.c_str(), value.c_str(), 1);
}

bool SetLimit(int resource, rlim_t value) {
  rlimit r{value, value};
  return setrlimit(resource, &r) == 0;
}

// ---- seccomp ---------------------------------------------------------------------------

ViolationRecord* g_violation = nullptr;
pid_t g_self = 0;

// SIGSYS from SECCOMP_RET_TRAP: record which call was stopped, then die uncatchably. The
// program cannot replace this handler (rt_sigaction(SIGSYS, act) is refused by the
// filter); if it blocks SIGSYS the kernel kills it with SIGSYS and the server still
// reports a violation, only without the name.
void OnSigsys(int, siginfo_t* info, void*) {
  if (g_violation != nullptr) {
    g_violation->syscall_nr = info->si_syscall;
    g_violation->magic = kViolationMagic;
  }
  ::syscall(SYS_kill, g_self, SIGKILL);
}

// The filter's rules that name the child's own pid are compiled with this placeholder; the
// child patches it to its pid (the filter is compiled once per server, ~0.3 ms saved per
// run). It matches no other constant in the program (syscall numbers, flags, ioctls).
constexpr uint32_t kPidPlaceholder = 0x5EC0FFEE;

std::string BuildSeccompFilterImpl(ViolationAction action, std::vector<sock_filter>* program) {
  const pid_t self = static_cast<pid_t>(kPidPlaceholder);
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (ctx == nullptr) return "seccomp_init failed";
  struct CtxGuard {
    scmp_filter_ctx ctx;
    ~CtxGuard() { seccomp_release(ctx); }
  } guard{ctx};
  // A foreign ABI (int 0x80 / x32) would bypass the native rules: kill outright.
  seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
  // Binary search over system call numbers instead of a linear chain of comparisons. The
  // kernel emulates a new filter once for every system call number when it is attached
  // (the seccomp action cache, with interrupts off): over the linear chain that was the
  // largest part of installing the filter in each child; it also shortens the filter's
  // path for every call the program makes. Same rules, same verdicts.
  // libseccomp < 2.5 refuses the attribute and keeps the (correct, slower) linear layout.
  seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);

  // "trap" is the violation action: SECCOMP_RET_USER_NOTIF (the server is told which call
  // and kills the child) or SECCOMP_RET_TRAP (SIGSYS to the child's reporter).
  const uint32_t trap = action == ViolationAction::kNotify ? SCMP_ACT_NOTIFY : SCMP_ACT_TRAP;
  // Process creation, program execution, networking, debugging other processes, and
  // everything that changes the system rather than the process.
  // clang-format off
  static const char* const kTrapped[] = {
      "fork", "vfork", "execve", "execveat", "connect", "bind", "listen",
      "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_open",
      "pidfd_getfd", "pidfd_send_signal", "setsid", "setpgid", "tkill", "mount", "umount2",
      "pivot_root", "chroot", "unshare", "setns", "reboot", "kexec_load", "kexec_file_load",
      "init_module", "finit_module", "delete_module", "swapon", "swapoff", "acct",
      "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "sethostname",
      "setdomainname", "bpf", "perf_event_open", "keyctl", "add_key", "request_key",
      "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register", "quotactl",
      "syslog", "iopl", "ioperm", "name_to_handle_at", "open_by_handle_at", "fanotify_init",
      "vhangup", "move_mount", "open_tree", "fsopen", "fsmount", "fspick", "mount_setattr",
      "process_madvise", "seccomp",
      // SysV IPC and POSIX message queues: objects that outlive the run, hold memory
      // outside RLIMIT_AS and carry data from one test (or one user) to the next.
      "shmget", "shmat", "shmctl", "semget", "semop", "semtimedop", "semctl", "msgget",
      "msgsnd", "msgrcv", "msgctl", "mq_open", "mq_unlink", "mq_timedsend",
      "mq_timedreceive", "mq_notify", "mq_getsetattr",
      // Anonymous files hold memory RLIMIT_AS does not count.
      "memfd_create", "memfd_secret",
      // Whole-file locks and directory watches reach files of the host (a lock on a
      // readable host file blocks host processes; a watch observes host directories).
      "flock", "inotify_init", "inotify_init1", "inotify_add_watch"};
  // clang-format on
  for (const char* name : kTrapped) {
    int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) continue;  // not on this architecture
    if (seccomp_rule_add(ctx, trap, nr, 0) != 0) return fmt::format("seccomp rule {}", name);
  }
  int rc = 0;
  // Networking is a violation. Local sockets fail quietly instead: glibc's NSS (pwd, grp)
  // probes nscd through one and falls back to /etc files; socketpair() stays allowed.
  rc |= seccomp_rule_add(ctx, trap, SCMP_SYS(socket), 1, SCMP_A0(SCMP_CMP_NE, AF_UNIX));
  rc |= seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(socket), 1,
                         SCMP_A0(SCMP_CMP_EQ, AF_UNIX));
  // Threads are fine; any other clone makes a process.
  rc |=
      seccomp_rule_add(ctx, trap, SCMP_SYS(clone), 1, SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0));
  // clone3 passes its flags in memory the filter cannot read: ENOSYS makes glibc fall
  // back to clone, which is checked above.
  rc |= seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
  // Signals only to itself (kill(0)/kill(-pgid)/kill(-1) included in "not itself").
  rc |= seccomp_rule_add(ctx, trap, SCMP_SYS(kill), 1,
                         SCMP_A0(SCMP_CMP_NE, static_cast<scmp_datum_t>(self)));
  rc |= seccomp_rule_add(ctx, trap, SCMP_SYS(tgkill), 1,
                         SCMP_A0(SCMP_CMP_NE, static_cast<scmp_datum_t>(self)));
  rc |= seccomp_rule_add(ctx, trap, SCMP_SYS(rt_sigqueueinfo), 1,
                         SCMP_A0(SCMP_CMP_NE, static_cast<scmp_datum_t>(self)));
  rc |= seccomp_rule_add(ctx, trap, SCMP_SYS(rt_tgsigqueueinfo), 1,
                         SCMP_A0(SCMP_CMP_NE, static_cast<scmp_datum_t>(self)));
  // Resource limits of other processes (glibc's setrlimit passes pid 0).
  rc |= seccomp_rule_add(ctx, trap, SCMP_SYS(prlimit64), 1, SCMP_A0(SCMP_CMP_NE, 0));
  // Keep the violation reporter in place. The signal number is an int: the kernel reads
  // the low 32 bits of the register, so only those are compared (a 64-bit comparison let
  // SIGSYS | 1 << 32 through).
  rc |= seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EINVAL), SCMP_SYS(rt_sigaction), 2,
                         SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffu, SIGSYS), SCMP_A1(SCMP_CMP_NE, 0));
  // The parent-death signal makes the child die with the server: it may not be changed
  // (prctl's option is an int, compared on its low 32 bits).
  rc |= seccomp_rule_add(ctx, trap, SCMP_SYS(prctl), 1,
                         SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffu, PR_SET_PDEATHSIG));
  // Record locks (fcntl F_SETLK...) on a readable host file block host processes as flock
  // does; F_GETLK and the other fcntl commands stay allowed.
  for (int cmd : {F_SETLK, F_SETLKW, F_OFD_SETLK, F_OFD_SETLKW}) {
    rc |=
        seccomp_rule_add(ctx, trap, SCMP_SYS(fcntl), 1,
                         SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, static_cast<scmp_datum_t>(cmd)));
  }
  // Typing into a terminal.
  rc |= seccomp_rule_add(ctx, trap, SCMP_SYS(ioctl), 1,
                         SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCSTI));
  if (rc != 0) return "seccomp: adding a conditional rule failed";
  // libseccomp 2.5 exports to a descriptor only.
  UniqueFd memfd(memfd_create("egca-seccomp", MFD_CLOEXEC));
  if (!memfd.valid() || seccomp_export_bpf(ctx, memfd.get()) != 0) {
    return "seccomp_export_bpf failed";
  }
  off_t size = lseek(memfd.get(), 0, SEEK_END);
  if (size <= 0 || size % static_cast<off_t>(sizeof(sock_filter)) != 0) {
    return "seccomp_export_bpf: bad program size";
  }
  program->resize(static_cast<size_t>(size) / sizeof(sock_filter));
  if (pread(memfd.get(), program->data(), static_cast<size_t>(size), 0) != size) {
    return "seccomp_export_bpf: short read";
  }
  return {};
}

// Landlock: writes only beneath the private directory (and /dev/null); with
// `readable` non-null, reads (and executing or mapping files executable) only beneath the
// private directory, the listed paths, a few devices and the child's own /proc/<pid>.
std::string ApplyLandlock(int abi, const std::string& work_dir,
                          const std::vector<std::string>* readable) {
  uint64_t fs_write = LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR |
                      LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_CHAR |
                      LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |
                      LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO |
                      LANDLOCK_ACCESS_FS_MAKE_BLOCK | LANDLOCK_ACCESS_FS_MAKE_SYM;
  if (abi >= 2) fs_write |= LANDLOCK_ACCESS_FS_REFER;
  if (abi >= 3) fs_write |= LANDLOCK_ACCESS_FS_TRUNCATE;
  const uint64_t fs_read =
      LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR | LANDLOCK_ACCESS_FS_EXECUTE;
  // Rights that apply to a regular file (a rule for a file may name only these).
  const uint64_t file_read = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_EXECUTE;
  LandlockRulesetAttr attr{};
  attr.handled_access_fs = fs_write | (readable != nullptr ? fs_read : 0);
  size_t attr_size = sizeof(uint64_t);
  if (abi >= 4) {
    // No TCP rules: every bind/connect is refused (seccomp already stops socket()).
    attr.handled_access_net = LANDLOCK_ACCESS_NET_BIND_TCP | LANDLOCK_ACCESS_NET_CONNECT_TCP;
    attr_size = 2 * sizeof(uint64_t);
  }
  if (abi >= 6) {
    attr.scoped = LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL;
    attr_size = sizeof(attr);
  }
  UniqueFd ruleset(static_cast<int>(::syscall(SYS_landlock_create_ruleset, &attr, attr_size, 0)));
  if (!ruleset.valid()) return fmt::format("landlock_create_ruleset: {}", std::strerror(errno));

  // `access` is cut to the rights Landlock accepts for what `path` is (a file or a
  // directory), and to those the ruleset handles.
  auto allow = [&](const char* path, uint64_t access) -> bool {
    UniqueFd fd(::open(path, O_PATH | O_CLOEXEC));
    if (!fd.valid()) return false;
    struct stat st {};
    if (fstat(fd.get(), &st) != 0) return false;
    access &= attr.handled_access_fs;
    if (!S_ISDIR(st.st_mode)) {
      access &= file_read | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_TRUNCATE;
    }
    if (access == 0) return true;
    landlock_path_beneath_attr rule{};
    rule.allowed_access = access;
    rule.parent_fd = fd.get();
    return ::syscall(SYS_landlock_add_rule, ruleset.get(), LANDLOCK_RULE_PATH_BENEATH, &rule, 0) ==
           0;
  };
  if (!allow(work_dir.c_str(), fs_write | fs_read)) {
    return fmt::format("landlock rule for {}: {}", work_dir, std::strerror(errno));
  }
  uint64_t device_write = LANDLOCK_ACCESS_FS_WRITE_FILE;
  if (abi >= 3) device_write |= LANDLOCK_ACCESS_FS_TRUNCATE;
  // Best effort: open("/dev/null", "w") keeps working.
  allow("/dev/null", device_write | LANDLOCK_ACCESS_FS_READ_FILE);
  if (readable != nullptr) {
    // Paths that do not exist on this host are skipped.
    for (const std::string& path : *readable) allow(path.c_str(), fs_read);
    for (const char* device : {"/dev/zero", "/dev/urandom", "/dev/random", "/dev/full"}) {
      allow(device, LANDLOCK_ACCESS_FS_READ_FILE);
    }
    // Its own /proc/<pid> (opened after the fork, so /proc/self is this child); every
    // other process's /proc entry, the caller's command line included, stays closed.
    allow("/proc/self", LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR);
  }
  if (::syscall(SYS_landlock_restrict_self, ruleset.get(), 0) != 0) {
    return fmt::format("landlock_restrict_self: {}", std::strerror(errno));
  }
  return {};
}

std::string DropCapabilities() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (::syscall(SYS_capset, &header, data) != 0) {
    return fmt::format("capset: {}", std::strerror(errno));
  }
  return {};
}

// Replaces the pid placeholder in the child's copy-on-write copy of a compiled program.
std::string PatchPid(std::vector<sock_filter>* program, pid_t self) {
  int patched = 0;
  for (sock_filter& insn : *program) {
    if (BPF_CLASS(insn.code) == BPF_JMP && BPF_SRC(insn.code) == BPF_K &&
        insn.k == kPidPlaceholder) {
      insn.k = static_cast<uint32_t>(self);
      ++patched;
    }
  }
  // libseccomp shares identical comparison blocks between syscalls, so one patched
  // instruction may serve several rules; none at all would mean a changed compiler.
  if (patched == 0) return "seccomp: no pid comparison in the compiled filter";
  return {};
}

std::string SendFd(int sock, int fd) {
  if (!SendByteWithFd(sock, 'L', fd)) {
    return fmt::format("sending the seccomp listener: {}", std::strerror(errno));
  }
  return {};
}

}  // namespace

std::string BuildSeccompFilter(ViolationAction action, std::vector<sock_filter>* program) {
  return BuildSeccompFilterImpl(action, program);
}

uid_t RunUidForServer(pid_t server_pid, int slot) {
  // Far above any uid in /etc/passwd and below the overflow/invalid ids (pids are below
  // 2^22, so 2000000000 + 2 * pid + 1 < 2010000000).
  return static_cast<uid_t>(2000000000u + 2u * static_cast<uint32_t>(server_pid) +
                            static_cast<uint32_t>(slot & 1));
}

Capabilities SetUpServerIsolation(const ForkServerOptions& options) {
  Capabilities caps;
  caps.seccomp = options.install_seccomp && SeccompAvailable();
  caps.landlock_abi = options.use_landlock ? LandlockAbi() : 0;
  // Made before unshare so that a scratch root outside /tmp exists for the tmpfs mount.
  MakeDirs(options.scratch_root, 0711);
  bool root = geteuid() == 0;
  bool have_namespaces = false;
  if (!options.use_namespaces) {
    // Nothing to create.
  } else if (root) {
    // An IPC namespace too: SysV objects and POSIX queues of the host are out of reach
    // (their system calls are also violations; this holds where the filter is off).
    have_namespaces = ::unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC) == 0 ||
                      ::unshare(CLONE_NEWNS | CLONE_NEWNET) == 0;
  } else {
    have_namespaces = EnterUserNamespace();
    caps.user_namespace = have_namespaces;
  }
  if (have_namespaces) {
    caps.network_namespace = true;
    caps.mount_namespace = SetUpMounts(options);
    caps.filesystem_view =
        caps.mount_namespace && options.confine_reads && EnterFilesystemView(options);
  }
  caps.uid_drop = root;
  // Children are not forked as pid-namespace inits: fork is denied by seccomp, so there
  // are no descendants to contain, and a per-child namespace costs a clone flag plus a
  // changed getppid()/kill(0) meaning (see docs/sandbox.md).
  caps.pid_namespace = false;
  return caps;
}

std::string ApplyChildLimits(const Limits& l, bool drop_uid) {
  double cpu = std::max(1.0, std::ceil(l.cpu_seconds));
  rlimit cpu_limit{static_cast<rlim_t>(cpu), static_cast<rlim_t>(cpu) + 1};
  if (setrlimit(RLIMIT_CPU, &cpu_limit) != 0) return "setrlimit(RLIMIT_CPU)";
  if (!SetLimit(RLIMIT_AS, l.memory_bytes)) return "setrlimit(RLIMIT_AS)";
  if (!SetLimit(RLIMIT_FSIZE, l.file_bytes)) return "setrlimit(RLIMIT_FSIZE)";
  if (!SetLimit(RLIMIT_NOFILE, static_cast<rlim_t>(std::max(l.max_open_files, 8)))) {
    return "setrlimit(RLIMIT_NOFILE)";
  }
  if (!SetLimit(RLIMIT_CORE, 0)) return "setrlimit(RLIMIT_CORE)";
  if (!SetLimit(RLIMIT_MSGQUEUE, 0)) return "setrlimit(RLIMIT_MSGQUEUE)";
  // Counted per uid, and this uid belongs to this child alone (RunUidForServer).
  if (drop_uid && !SetLimit(RLIMIT_NPROC, static_cast<rlim_t>(std::max(l.max_threads, 1)))) {
    return "setrlimit(RLIMIT_NPROC)";
  }
  return {};
}

std::string IsolateChild(const ChildPlan& plan) {
  if (plan.drop_uid) {
    if (setgroups(0, nullptr) != 0) return "setgroups";
    if (setresgid(plan.run_uid, plan.run_uid, plan.run_uid) != 0) return "setresgid";
    if (setresuid(plan.run_uid, plan.run_uid, plan.run_uid) != 0) return "setresuid";
    // A credential change clears the parent-death signal: set it again, and make sure the
    // server did not die in between.
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) return "PR_SET_PDEATHSIG";
    if (getppid() != plan.server_pid) return "the server died during setup";
  } else if (plan.drop_capabilities) {
    std::string error = DropCapabilities();
    if (!error.empty()) return error;
  }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return "PR_SET_NO_NEW_PRIVS";
  if (plan.landlock_abi > 0) {
    std::string error = ApplyLandlock(plan.landlock_abi, plan.work_dir, plan.readable_paths);
    if (!error.empty()) return error;
  }
  if (plan.seccomp) {
    g_violation = plan.violation;
    g_self = getpid();
    struct sigaction sa {};
    sa.sa_sigaction = OnSigsys;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSYS, &sa, nullptr) != 0) return "sigaction(SIGSYS)";
    // Preferred: violations reported to the server through a notification listener, which
    // the program cannot block or fake. Falls back to SIGSYS when the kernel refuses a
    // listener (before 5.0, or an outer sandbox already holds one).
    if (plan.notify_program != nullptr && plan.notify_sock >= 0) {
      std::string error = PatchPid(plan.notify_program, g_self);
      if (!error.empty()) return error;
      sock_fprog fprog{static_cast<unsigned short>(plan.notify_program->size()),
                       plan.notify_program->data()};
      long listener =
          ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &fprog);
      if (listener >= 0) {
        error = SendFd(plan.notify_sock, static_cast<int>(listener));
        ::close(static_cast<int>(listener));
        ::close(plan.notify_sock);
        return error;
      }
      if (errno != EINVAL && errno != EBUSY && errno != ENOSYS) {
        return fmt::format("seccomp(NEW_LISTENER): {}", std::strerror(errno));
      }
    }
    if (plan.notify_sock >= 0) ::close(plan.notify_sock);
    std::string error = PatchPid(plan.seccomp_program, g_self);
    if (!error.empty()) return error;
    sock_fprog fprog{static_cast<unsigned short>(plan.seccomp_program->size()),
                     plan.seccomp_program->data()};
    if (::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog) != 0) {
      return fmt::format("seccomp(SET_MODE_FILTER): {}", std::strerror(errno));
    }
  }
  return {};
}

std::string SyscallName(int nr) {
  char* name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
  if (name == nullptr) return fmt::format("syscall {}", nr);
  std::string out = name;
  std::free(name);
  return out;
}

void ApplyServerEnvironment(const ForkServerOptions& options, const std::string& work_dir) {
  SetFixedEnvironment(options, work_dir);
}

}  // namespace egca::sandbox::internal
