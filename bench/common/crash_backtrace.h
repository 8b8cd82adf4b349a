// InstallCrashBacktrace(): on SIGSEGV / SIGBUS / SIGABRT / SIGFPE, writes to stderr the
// signal, the thread, the faulting instruction and the return address on top of the stack
// (each with its library and symbol: dladdr), then the call stack (glibc's backtrace; link
// with -rdynamic for egca's own names), then dies of the same signal. For benchmarks that
// run on machines without a debugger (the lent GPU machines have no gdb). The return address
// names the caller when the fault is a call through a bad pointer, where backtrace stops.
#pragma once

#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

namespace egca::bench {

inline void CrashDescribeAddress(const char* what, void* addr) {
  Dl_info info{};
  char line[512];
  if (addr && dladdr(addr, &info) && info.dli_fname) {
    snprintf(line, sizeof line, "  %s %p = %s(%s+%#lx)\n", what, addr, info.dli_fname,
             info.dli_sname ? info.dli_sname : "?",
             static_cast<unsigned long>(
                 static_cast<char*>(addr) -
                 static_cast<char*>(info.dli_sname ? info.dli_saddr : info.dli_fbase)));
  } else {
    snprintf(line, sizeof line, "  %s %p (no library)\n", what, addr);
  }
  (void)!write(2, line, strlen(line));
}

inline void CrashBacktraceHandler(int sig, siginfo_t* si, void* uc_void) {
  char line[256];
  snprintf(line, sizeof line,
           "\n*** fatal signal: %s (fault address %p) in thread %ld of process %d\n",
           strsignal(sig), si ? si->si_addr : nullptr, static_cast<long>(syscall(SYS_gettid)),
           static_cast<int>(getpid()));
  (void)!write(2, line, strlen(line));
#if defined(__x86_64__)
  if (auto* uc = static_cast<ucontext_t*>(uc_void)) {
    void* rip = reinterpret_cast<void*>(uc->uc_mcontext.gregs[REG_RIP]);
    void** rsp = reinterpret_cast<void**>(uc->uc_mcontext.gregs[REG_RSP]);
    CrashDescribeAddress("instruction", rip);
    if (rsp) {
      for (int i = 0; i < 4; ++i) CrashDescribeAddress("stack word", rsp[i]);
    }
  }
#else
  (void)uc_void;
#endif
  (void)!write(2, "  call stack:\n", 14);
  void* frames[64];
  const int n = backtrace(frames, 64);
  backtrace_symbols_fd(frames, n, 2);
  signal(sig, SIG_DFL);
  raise(sig);
}

inline void InstallCrashBacktrace() {
  struct sigaction sa {};
  sa.sa_sigaction = CrashBacktraceHandler;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGSEGV, SIGBUS, SIGABRT, SIGFPE}) sigaction(sig, &sa, nullptr);
}

}  // namespace egca::bench
