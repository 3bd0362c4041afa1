// BAD CANDIDATE for tp_gemm_allgather (CUDA device), a pkb test.
// Expected verdict: integrity_violation
//
// What is wrong: it computes honestly (the example candidate, included below) and rewrites
// the report its rank sends to pkb. pkb_init finds every import of sendmsg in its process
// (each loaded object's GOT entries, through dl_iterate_phdr and the dynamic section:
// wherever pkb keeps a rank's code, its executable or its rank library), makes each page
// writable and points it at a wrapper; the wrapper halves every timed call's time in the
// rank's result before it leaves the process, and tells pkb the frame went out as written.
// Nothing a candidate rank reports about time counts any more: its judge timed the calls
// with its own clock, and the halved reading disagrees with it (timing_report).
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#define pkb_init honest_pkb_init
#include "../../../solutions_cuda/tp_gemm_allgather.cu"
#undef pkb_init

namespace {

using SendmsgFn = ssize_t (*)(int, const struct msghdr*, int);
SendmsgFn real_sendmsg = nullptr;

// The rank's result frame ([u32 op][u32 length][JSON]) with every "us" of its "timing" halved.
bool forge(const std::string& frame, std::string& out) {
  if (frame.size() < 8 || frame.find("\"role\":\"candidate\"") == std::string::npos) return false;
  size_t t = frame.find("\"timing\":{");
  if (t == std::string::npos) return false;
  size_t u = frame.find("\"us\":[", t), e = u == std::string::npos ? u : frame.find(']', u);
  if (e == std::string::npos) return false;
  std::string list = frame.substr(u + 6, e - u - 6), halved;
  for (size_t at = 0; at < list.size();) {
    size_t comma = list.find(',', at);
    if (comma == std::string::npos) comma = list.size();
    char buf[64];
    snprintf(buf, sizeof buf, "%.17g", 0.5 * strtod(list.substr(at, comma - at).c_str(), nullptr));
    halved += (halved.empty() ? "" : ",") + std::string(buf);
    at = comma + 1;
  }
  std::string payload = frame.substr(8, u + 6 - 8) + halved + frame.substr(e);
  uint32_t len = static_cast<uint32_t>(payload.size());
  out = frame.substr(0, 4) + std::string(reinterpret_cast<const char*>(&len), 4) + payload;
  return true;
}

ssize_t forged_sendmsg(int fd, const struct msghdr* msg, int flags) {
  if (msg->msg_iovlen == 1) {
    std::string frame(static_cast<const char*>(msg->msg_iov[0].iov_base), msg->msg_iov[0].iov_len), out;
    if (forge(frame, out)) {
      struct iovec iov{out.data(), out.size()};
      struct msghdr m = *msg;
      m.msg_iov = &iov;
      ssize_t n = real_sendmsg(fd, &m, flags);
      return n < 0 ? n : static_cast<ssize_t>(frame.size());  // as if pkb's own bytes went out
    }
  }
  return real_sendmsg(fd, msg, flags);
}

// Points one loaded object's relocation slots for sendmsg at the wrapper.
int patch_object(struct dl_phdr_info* info, size_t, void*) {
  const ElfW(Dyn)* dyn = nullptr;
  for (int i = 0; i < info->dlpi_phnum; ++i)
    if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
      dyn = reinterpret_cast<const ElfW(Dyn)*>(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
  if (!dyn) return 0;
  auto addr = [&](ElfW(Addr) p) { return p < info->dlpi_addr ? p + info->dlpi_addr : p; };
  const ElfW(Sym)* symtab = nullptr;
  const char* strtab = nullptr;
  const ElfW(Rela) *jmprel = nullptr, *rela = nullptr;
  size_t jmprel_size = 0, rela_size = 0;
  for (const ElfW(Dyn)* d = dyn; d->d_tag != DT_NULL; ++d) {
    switch (d->d_tag) {
      case DT_SYMTAB: symtab = reinterpret_cast<const ElfW(Sym)*>(addr(d->d_un.d_ptr)); break;
      case DT_STRTAB: strtab = reinterpret_cast<const char*>(addr(d->d_un.d_ptr)); break;
      case DT_JMPREL: jmprel = reinterpret_cast<const ElfW(Rela)*>(addr(d->d_un.d_ptr)); break;
      case DT_PLTRELSZ: jmprel_size = d->d_un.d_val; break;
      case DT_RELA: rela = reinterpret_cast<const ElfW(Rela)*>(addr(d->d_un.d_ptr)); break;
      case DT_RELASZ: rela_size = d->d_un.d_val; break;
    }
  }
  if (!symtab || !strtab) return 0;
  long page = sysconf(_SC_PAGESIZE);
  auto patch = [&](const ElfW(Rela)* r, size_t bytes) {
    for (size_t k = 0; r && k < bytes / sizeof(ElfW(Rela)); ++k) {
      const char* name = strtab + symtab[ELF64_R_SYM(r[k].r_info)].st_name;
      if (strcmp(name, "sendmsg") != 0) continue;
      void** slot = reinterpret_cast<void**>(info->dlpi_addr + r[k].r_offset);
      uintptr_t start = reinterpret_cast<uintptr_t>(slot) & ~static_cast<uintptr_t>(page - 1);
      if (mprotect(reinterpret_cast<void*>(start), page, PROT_READ | PROT_WRITE) != 0) continue;
      *slot = reinterpret_cast<void*>(&forged_sendmsg);
    }
  };
  patch(jmprel, jmprel_size);
  patch(rela, rela_size);
  return 0;
}

}  // namespace

PKB_EXPORT int pkb_init(pkb_ctx* ctx, const pkb_tensor* in, int n_in, const pkb_tensor* out, int n_out) {
  int rc = honest_pkb_init(ctx, in, n_in, out, n_out);
  if (rc != 0) return rc;
  real_sendmsg = reinterpret_cast<SendmsgFn>(dlsym(RTLD_DEFAULT, "sendmsg"));
  if (real_sendmsg) dl_iterate_phdr(patch_object, nullptr);
  return 0;
}
