#include "child.h"

#include <cxxabi.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <signal.h>
#include <ucontext.h>
#include <unistd.h>
#include <unwind.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <string>
#include <typeinfo>

namespace egca::cpp::internal {
namespace {

// The loaded program's address range (for the fault handler; set before main runs).
uintptr_t g_base = 0;
uintptr_t g_end = 0;
// Its executable segment: the only range whose bytes the fault handler reads (the gaps
// between segments are not mapped).
uintptr_t g_code_begin = 0;
uintptr_t g_code_end = 0;
// An address in the frame that calls `main`: the candidate's frames lie below it, so the
// fault handler's stack scan stays within mapped stack.
uintptr_t g_stack_top = 0;
int g_result_fd = -1;
alignas(16) char g_alt_stack[1 << 16];
// The program's record of its own last throw (runtime_source.h; Borrowed), cleared when a
// library throws after it, so the catch below reads whichever throw came last.
void** g_program_throw_pc = nullptr;
// Return addresses in the program's code at the last throw inside a library, innermost
// first (RecordLibraryThrow).
constexpr int kLibraryFrames = 16;
uintptr_t g_library_frames[kLibraryFrames];
int g_library_frame_count = 0;

bool InProgram(uintptr_t pc) { return pc >= g_base && pc < g_end; }

void WriteHex(char* buf, size_t* len, uintptr_t v) {
  char tmp[20];
  int n = 0;
  do {
    tmp[n++] = "0123456789abcdef"[v & 15];
    v >>= 4;
  } while (v != 0);
  while (n > 0) buf[(*len)++] = tmp[--n];
}

// Whether `ret` is a return address in the program: in it, and right after a call
// instruction (call rel32; call *disp32(%rip); call *%reg; call *disp8/disp32(%reg)).
bool AfterCall(uintptr_t ret) {
  if (ret < g_code_begin + 6 || ret >= g_code_end) return false;
  const auto* b = reinterpret_cast<const unsigned char*>(ret);
  return b[-5] == 0xe8 || (b[-6] == 0xff && b[-5] == 0x15) ||
         (b[-2] == 0xff && (b[-1] & 0xf8) == 0xd0) || (b[-3] == 0xff && (b[-2] & 0xf8) == 0x50) ||
         (b[-6] == 0xff && (b[-5] & 0xf8) == 0x90);
}

// One "signal <signo> <offsets>\n" line: comma-separated hex offsets of addresses in the
// program, innermost first, each one past the instruction (callers subtract one); "-": none.
void WriteFaultLine(int signo, const uintptr_t* found, int n) {
  char buf[40 + 32 * 17];
  size_t len = 0;
  const char* head = "signal ";
  for (const char* p = head; *p; ++p) buf[len++] = *p;
  if (signo >= 10) buf[len++] = static_cast<char>('0' + signo / 10);
  buf[len++] = static_cast<char>('0' + signo % 10);
  buf[len++] = ' ';
  for (int i = 0; i < n; ++i) {
    if (i > 0) buf[len++] = ',';
    WriteHex(buf, &len, found[i] - g_base);
  }
  if (n == 0) buf[len++] = '-';
  buf[len++] = '\n';
  ssize_t ignored = ::write(g_result_fd, buf, len);
  (void)ignored;
}

// Async-signal-safe: the addresses in the program that locate the fault, innermost first:
// the faulting pc when it is in the program, then return addresses into the program found
// by scanning the interrupted stack upwards (a crash inside libc or an instantiated
// standard-library template is blamed on the candidate's call; the parent keeps the first
// that maps to the candidate). The pc-only line is written first: a fault while scanning
// ends the process with the default action (SA_RESETHAND), losing only the scan (a stack
// overflow inside libc can do that: rsp below the mapped stack).
void OnFault(int signo, siginfo_t*, void* context) {
  auto* uc = static_cast<ucontext_t*>(context);
  const uintptr_t pc = static_cast<uintptr_t>(uc->uc_mcontext.gregs[REG_RIP]);
  constexpr int kMax = 32;
  uintptr_t found[kMax];
  int n = 0;
  if (InProgram(pc)) found[n++] = pc + 1;
  WriteFaultLine(signo, found, n);
  uintptr_t sp = static_cast<uintptr_t>(uc->uc_mcontext.gregs[REG_RSP]);
  // In the program's code (frame pointers kept) a stack overflow can leave rsp below the
  // mapped stack (`sub rsp` touches nothing; the next push faults): scan from the frame
  // pointer, whose push succeeded.
  const uintptr_t fp = static_cast<uintptr_t>(uc->uc_mcontext.gregs[REG_RBP]);
  if (InProgram(pc) && fp > sp && fp < g_stack_top && (fp & 7) == 0) sp = fp;
  if (g_stack_top == 0 || sp == 0 || sp >= g_stack_top || (sp & 7) != 0) return;
  // At most 64 KiB of stack: enough for the few frames between a fault and the candidate.
  const uintptr_t end = g_stack_top - sp > (64u << 10) ? sp + (64u << 10) : g_stack_top;
  for (auto* word = reinterpret_cast<const uintptr_t*>(sp);
       reinterpret_cast<uintptr_t>(word) < end && n < kMax; ++word) {
    if (AfterCall(*word)) found[n++] = *word;
  }
  WriteFaultLine(signo, found, n);
}

_Unwind_Reason_Code CollectProgramFrame(_Unwind_Context* context, void*) {
  int before = 0;
  const uintptr_t ip = _Unwind_GetIPInfo(context, &before);
  if (ip >= g_code_begin && ip < g_code_end) g_library_frames[g_library_frame_count++] = ip;
  return g_library_frame_count < kLibraryFrames ? _URC_NO_REASON : _URC_END_OF_STACK;
}

int FindRange(dl_phdr_info* info, size_t, void* data) {
  auto* base = static_cast<uintptr_t*>(data);
  if (info->dlpi_addr != *base) return 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    g_end = std::max<uintptr_t>(g_end, info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
    if ((ph.p_flags & PF_X) != 0 && g_code_end == 0) {
      g_code_begin = info->dlpi_addr + ph.p_vaddr;
      g_code_end = g_code_begin + ph.p_filesz;
    }
  }
  return 1;
}

void WriteAll(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    ssize_t n = ::write(fd, s.data() + done, s.size() - done);
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

std::string OneLine(std::string s, size_t limit) {
  if (s.size() > limit) s.resize(limit);
  for (char& c : s) {
    if (c == '\n' || c == '\t' || c == '\r') c = ' ';
  }
  return s;
}

std::string Demangle(const char* name) {
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string out = (status == 0 && d != nullptr) ? d : name;
  std::free(d);
  return out;
}

void FlushAll() {
  std::cout.flush();
  std::cerr.flush();
  std::clog.flush();
  std::fflush(nullptr);
}

}  // namespace

void RecordLibraryThrow() {
  if (g_code_end == 0) return;
  g_library_frame_count = 0;
  _Unwind_Backtrace(CollectProgramFrame, nullptr);
  if (g_program_throw_pc != nullptr) *g_program_throw_pc = nullptr;
}

int RunProgramChild(std::string_view payload, int result_fd) {
  g_result_fd = result_fd;
  size_t nl = payload.find('\n');
  if (nl == std::string_view::npos) {
    WriteAll(result_fd, "setup bad payload\n");
    return 120;
  }
  const std::string nonce(payload.substr(0, nl));
  const std::string_view object = payload.substr(nl + 1);
  const std::string header = "egca-cpp " + nonce + "\n";
  int fd = ::open("program.so", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0500);
  bool written = fd >= 0;
  for (size_t done = 0; written && done < object.size();) {
    ssize_t n = ::write(fd, object.data() + done, object.size() - done);
    if (n <= 0) written = false;
    else done += static_cast<size_t>(n);
  }
  if (fd >= 0) ::close(fd);
  if (!written) {
    WriteAll(result_fd, header + "setup cannot write program.so: " + std::strerror(errno) + "\n");
    return 120;
  }
  // Loading runs the program's static constructors: candidate code from here on.
  void* handle = ::dlopen("./program.so", RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* err = ::dlerror();
    WriteAll(result_fd, header + "setup " + OneLine(err ? err : "dlopen failed", 500) + "\n");
    return 120;
  }
  using Main = int (*)(int, char**);
  auto main_fn = reinterpret_cast<Main>(::dlsym(handle, "main"));
  if (main_fn == nullptr) {
    WriteAll(result_fd, header + "setup the program has no main\n");
    return 120;
  }
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(main_fn), &info) != 0) {
    g_base = reinterpret_cast<uintptr_t>(info.dli_fbase);
    dl_iterate_phdr(FindRange, &g_base);
  }
  auto** throw_pc = static_cast<void**>(::dlsym(handle, "egca_last_throw_pc"));
  auto* throw_frames = static_cast<void**>(::dlsym(handle, "egca_throw_frames"));
  g_program_throw_pc = throw_pc;
  volatile char stack_marker = 0;
  g_stack_top = reinterpret_cast<uintptr_t>(&stack_marker);

  stack_t alt{};
  alt.ss_sp = g_alt_stack;
  alt.ss_size = sizeof(g_alt_stack);
  ::sigaltstack(&alt, nullptr);
  struct sigaction sa {};
  sa.sa_sigaction = OnFault;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESETHAND | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) ::sigaction(sig, &sa, nullptr);

  char arg0[] = "candidate";
  char* argv[] = {arg0, nullptr};
  std::string record;
  int rc = 0;
  try {
    rc = main_fn(1, argv);
    FlushAll();
    record = header + "exit " + std::to_string(rc) + "\n";
  } catch (...) {
    FlushAll();
    std::string what;
    try {
      throw;
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    std::type_info* type = abi::__cxa_current_exception_type();
    std::string type_name = type != nullptr ? Demangle(type->name()) : "unknown";
    std::string where = "-";
    int in_main = 0;
    if (throw_pc != nullptr && *throw_pc != nullptr) {
      auto pc = reinterpret_cast<uintptr_t>(*throw_pc);
      // The throw site, then the frames above it (runtime_source.h), comma-separated.
      char buf[24 * 17];
      size_t len = 0;
      if (InProgram(pc)) WriteHex(buf, &len, pc - g_base);
      for (int i = 0; throw_frames != nullptr && i < 16 && throw_frames[i] != nullptr; ++i) {
        auto frame = reinterpret_cast<uintptr_t>(throw_frames[i]);
        if (frame == pc || !InProgram(frame)) continue;
        if (len > 0) buf[len++] = ',';
        WriteHex(buf, &len, frame - g_base);
      }
      if (len > 0) where.assign(buf, len);
      Dl_info at{};
      if (::dladdr(*throw_pc, &at) != 0 && at.dli_saddr == reinterpret_cast<void*>(main_fn)) {
        in_main = 1;
      }
    } else if (g_library_frame_count > 0) {
      // Thrown inside a library: the program's calls on the stack at the throw.
      char buf[kLibraryFrames * 17];
      size_t len = 0;
      for (int i = 0; i < g_library_frame_count; ++i) {
        if (len > 0) buf[len++] = ',';
        WriteHex(buf, &len, g_library_frames[i] - g_base);
      }
      where.assign(buf, len);
      Dl_info at{};
      void* caller = reinterpret_cast<void*>(g_library_frames[0] - 1);
      if (::dladdr(caller, &at) != 0 && at.dli_saddr == reinterpret_cast<void*>(main_fn)) in_main = 1;
    }
    record = header + "exception " + where + " " + std::to_string(in_main) + "\t" +
             OneLine(type_name, 200) + "\t" + OneLine(what, 1000) + "\n";
    rc = 1;
  }
  WriteAll(result_fd, record);
  return rc & 0xff;
}

}  // namespace egca::cpp::internal
