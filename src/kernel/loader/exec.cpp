#include "kernel/loader/exec.h"

#include <cstring>
#include <elf.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <linux/errno.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "host/raw_syscall.h"
#include "kernel/kernel.h"
#include "kernel/lib/kstring.h"
#include "kernel/loader/elf_parse.h"
#include "kernel/mm/mm.h"
#include "kernel/task/caps.h"
#include "kernel/vfs/file.h"
#include "kernel/vfs/vfs.h"
#include "kernel/vfs/path_ops.h"
#include "kernel/vfs/perm.h"

namespace flatux {
namespace {

constexpr int kMaxScriptDepth = 4;
constexpr size_t kMaxArgBytes = 2ull << 20;  // argv + envp strings, like Linux's ARG_MAX
constexpr int kMaxArgs = 65536;

// A File opened for execution, closed on scope exit.
class ExecFile {
 public:
  ~ExecFile() { if (f) f->put(); }
  File* f = nullptr;
  struct stat st {};
};

long read_at(Task& t, File& f, void* buf, size_t n, uint64_t off) {
  // The loader reads into kernel memory: host-backed files only for now.
  if (f.host_fd < 0) return -ENOEXEC;
  size_t got = 0;
  while (got < n) {
    long r = host::sys(SYS_pread64, f.host_fd, (char*)buf + got, n - got, off + got);
    if (r < 0) return r;
    if (r == 0) break;
    got += r;
  }
  return (long)got;
}

long open_exec(Task& t, const char* path, ExecFile& ef) {
  long r = vfs_open(t, AT_FDCWD, path, O_RDONLY, 0, &ef.f);
  if (r < 0) return r;
  if (!ef.f->ops->stat || ef.f->ops->stat(t, *ef.f, &ef.st) < 0) return -EACCES;
  if (S_ISDIR(ef.st.st_mode)) return -EACCES;
  // Execute permission for the caller's class (root: anyone's x bit).
  if (!S_ISREG(ef.st.st_mode) || may_access(t, ef.st, X_OK) < 0) return -EACCES;
  if (ef.f->mount && (ef.f->mount->flags_now() & MS_NOEXEC)) return -EACCES;
  if (ef.f->host_fd < 0 && ef.f->ops->shared_map_fd) {
    // A file in kernel memory (tmpfs) is loaded from the host descriptor
    // it keeps for shared mappings; this private File owns a duplicate.
    long fd = ef.f->ops->shared_map_fd(t, *ef.f);
    if (fd >= 0) fd = host::sys(SYS_fcntl, fd, F_DUPFD_CLOEXEC, 0);
    if (fd >= 0) ef.f->host_fd = (int)fd;
  }
  return 0;
}

// The credentials the program in `ef` runs with: its set-id bits and its
// capabilities (security.capability) applied to the caller's (caps.h).
long program_creds(Task& t, ExecFile& ef, ExecResult* out) {
  FileCaps fcaps;
  const FileCaps* caps = nullptr;
  if (ef.f->ops->xattr) {
    uint8_t raw[XATTR_CAPS_SZ_3];
    XattrOp op;
    op.kind = XattrOp::kGet;
    op.name = "security.capability";
    op.value = raw;
    op.size = sizeof raw;
    long n = ef.f->ops->xattr(t, *ef.f, op);
    if (n >= 0) {
      long r = parse_file_caps(raw, (size_t)n, &fcaps);
      if (r == 0) caps = &fcaps;
      else if (r != -ENODATA) return r;
    } else if (n != -ENODATA && n != -EOPNOTSUPP) {
      return n;
    }
  }
  bool nosuid = ef.f->mount && (ef.f->mount->flags_now() & MS_NOSUID);
  ExecFileIdentity id{ef.st.st_mode, ef.st.st_uid, ef.st.st_gid, nosuid, caps};
  return exec_creds(t.proc->creds, id, t.proc->no_new_privs, &out->creds, &out->secure);
}

// Maps every PT_LOAD of `img` from `f`; *bias receives the load bias.
long map_image(Task& t, Mm& mm, File& f, const loader::ElfImage& img, uintptr_t* bias,
               const char** why) {
  uintptr_t span = img.max_vaddr - img.min_vaddr;
  constexpr int kAnon = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
  long r;
  if (img.type == ET_DYN) {
    r = mm_map(mm, 0, span, PROT_NONE, kAnon, -1, 0, kRegionImage, false);
  } else {
    r = mm_map(mm, img.min_vaddr, span, PROT_NONE, kAnon, -1, 0, kRegionImage, true);
    if (r < 0) {
      *why = kExecRangeBusy;
      return -ENOEXEC;
    }
  }
  if (r < 0) return r;
  *bias = (uintptr_t)r - img.min_vaddr;
  for (int i = 0; i < img.nsegs; i++) {
    const loader::ElfSegment& s = img.segs[i];
    uintptr_t start = page_down(*bias + s.vaddr);
    uintptr_t file_end = *bias + s.vaddr + s.filesz;
    uintptr_t mem_end = *bias + s.vaddr + s.memsz;
    int prot = (int)s.prot;
    if (s.filesz) {
      // Writable while we zero the partial page past the file data.
      int map_prot = s.memsz > s.filesz ? prot | PROT_WRITE : prot;
      r = mm_map(mm, start, page_up(file_end) - start, map_prot, MAP_PRIVATE, f.host_fd,
                 page_down(s.offset), kRegionImage, true);
      if (r < 0) return r;
      if (s.memsz > s.filesz) {
        memset((void*)file_end, 0, page_up(file_end) - file_end);
        if (map_prot != prot) host::sys(SYS_mprotect, start, page_up(file_end) - start, prot);
        mm.regions.set_prot(start, page_up(file_end), prot);
      }
    }
    uintptr_t anon_start = s.filesz ? page_up(file_end) : start;
    if (page_up(mem_end) > anon_start) {
      r = mm_map(mm, anon_start, page_up(mem_end) - anon_start, prot, kAnon, -1, 0, kRegionImage, true);
      if (r < 0) return r;
    }
  }
  return 0;
}

long load_elf_file(Task& t, Mm& mm, ExecFile& ef, const uint8_t* head, size_t head_len,
                   loader::ElfImage* img, uintptr_t* bias, const char** why) {
  long r = loader::parse_elf_header(head, head_len, (uint64_t)ef.st.st_size, img, why);
  if (r < 0) return r;
  size_t ph_len = (size_t)img->phnum * img->phentsize;
  uint8_t* ph = static_cast<uint8_t*>(t.kernel->heap->alloc(ph_len));
  if (!ph) return -ENOMEM;
  r = read_at(t, *ef.f, ph, ph_len, img->phoff);
  if (r >= 0 && (size_t)r != ph_len) {
    *why = "program headers beyond end of file";
    r = -ENOEXEC;
  }
  if (r >= 0) r = loader::parse_elf_phdrs(ph, ph_len, (uint64_t)ef.st.st_size, img, why);
  t.kernel->heap->free(ph);
  if (r < 0) return r;
  return map_image(t, mm, *ef.f, *img, bias, why);
}

// Copies strings and pointer tables onto the new stack (System V ABI).
class StackBuilder {
 public:
  StackBuilder(uintptr_t top) : sp_(top) {}
  uintptr_t push_bytes(const void* p, size_t n) {
    sp_ -= n;
    memcpy((void*)sp_, p, n);
    return sp_;
  }
  uintptr_t push_str(const char* s) { return push_bytes(s, strlen(s) + 1); }
  uintptr_t sp() const { return sp_; }
  void align(size_t a) { sp_ &= ~(uintptr_t)(a - 1); }
  void set_sp(uintptr_t sp) { sp_ = sp; }

 private:
  uintptr_t sp_;
};

int count(const char* const* v) {
  int n = 0;
  while (v && v[n]) n++;
  return n;
}

long build_stack(Task& t, Mm& mm, const char* execfn, const char* const* argv,
                 const char* const* envp, const loader::ElfImage& img, uintptr_t bias,
                 uintptr_t interp_bias, const ExecResult& res, uintptr_t* sp_out) {
  int argc = count(argv), envc = count(envp);
  size_t bytes = 0;
  for (int i = 0; i < argc; i++) bytes += strlen(argv[i]) + 1;
  for (int i = 0; i < envc; i++) bytes += strlen(envp[i]) + 1;
  if (bytes > kMaxArgBytes || argc + envc > kMaxArgs) return -E2BIG;

  long r = mm_setup_stack(mm, t.proc->rlimits[RLIMIT_STACK][0]);
  if (r < 0) return r;
  StackBuilder sb(mm.stack_top);
  uintptr_t execfn_p = sb.push_str(execfn);
  uintptr_t platform_p = sb.push_str("x86_64");
  uint8_t rnd[16];
  if (host::sys(SYS_getrandom, rnd, sizeof rnd, 0) != (long)sizeof rnd) return -EIO;
  uintptr_t random_p = sb.push_bytes(rnd, sizeof rnd);

  uintptr_t* ptrs = static_cast<uintptr_t*>(t.kernel->heap->alloc(sizeof(uintptr_t) * (argc + envc + 1)));
  if (!ptrs) return -ENOMEM;
  // argv strings sit just below envp's, each block contiguous, so
  // /proc/PID/cmdline and environ are plain ranges of the stack.
  mm.env_end = sb.sp();
  for (int i = envc - 1; i >= 0; i--) ptrs[argc + i] = sb.push_str(envp[i]);
  mm.env_start = mm.arg_end = sb.sp();
  for (int i = argc - 1; i >= 0; i--) ptrs[i] = sb.push_str(argv[i]);
  mm.arg_start = sb.sp();

  const KernelConfig& c = t.kernel->cfg;
  const Creds& cr = res.creds;
  const uint64_t auxv[][2] = {
      {AT_SYSINFO_EHDR, c.vdso_base},  // dropped below when there is no vDSO
      {AT_MINSIGSTKSZ, c.minsigstksz ? c.minsigstksz : 2048},
      {AT_HWCAP, c.hwcap},
      {AT_PAGESZ, kPageSize},
      {AT_CLKTCK, 100},
      {AT_PHDR, bias + img.phdr_vaddr},
      {AT_PHENT, sizeof(Elf64_Phdr)},
      {AT_PHNUM, img.phnum},
      {AT_BASE, interp_bias},
      {AT_FLAGS, 0},
      {AT_ENTRY, bias + img.entry},
      {AT_UID, cr.uid},
      {AT_EUID, cr.euid},
      {AT_GID, cr.gid},
      {AT_EGID, cr.egid},
      {AT_SECURE, res.secure},
      {AT_RANDOM, random_p},
      {AT_HWCAP2, c.hwcap2},
      {AT_EXECFN, execfn_p},
      {AT_PLATFORM, platform_p},
      {AT_NULL, 0},
  };
  size_t first_aux = c.vdso_base ? 0 : 1;
  size_t naux = sizeof auxv / sizeof auxv[0] - first_aux;
  size_t words = 1 + (argc + 1) + (envc + 1) + 2 * naux;
  sb.align(16);
  sb.set_sp(sb.sp() - words * 8);
  sb.align(16);
  uintptr_t* w = reinterpret_cast<uintptr_t*>(sb.sp());
  *w++ = (uintptr_t)argc;
  for (int i = 0; i < argc; i++) *w++ = ptrs[i];
  *w++ = 0;
  for (int i = 0; i < envc; i++) *w++ = ptrs[argc + i];
  *w++ = 0;
  memcpy(w, auxv[first_aux], naux * 16);
  t.kernel->heap->free(ptrs);
  *sp_out = sb.sp();
  return 0;
}

void set_comm(ExecResult* out, const char* path) {
  const char* base = strrchr(path, '/');
  base = base ? base + 1 : path;
  size_t n = strlen(base);
  if (n > sizeof out->comm - 1) n = sizeof out->comm - 1;
  memcpy(out->comm, base, n);
  out->comm[n] = 0;
}

// Splits "#!interp arg\n" in place: Linux passes everything after the
// interpreter as one argument, trimmed.
long parse_shebang(char* line, size_t len, char** interp, char** arg) {
  char* end = static_cast<char*>(memchr(line, '\n', len));
  if (!end) end = line + len;
  *end = 0;
  char* p = line + 2;
  while (*p == ' ' || *p == '\t') p++;
  if (!*p) return -ENOEXEC;
  *interp = p;
  while (*p && *p != ' ' && *p != '\t') p++;
  if (*p) *p++ = 0;
  while (*p == ' ' || *p == '\t') p++;
  char* q = p + strlen(p);
  while (q > p && (q[-1] == ' ' || q[-1] == '\t' || q[-1] == '\r')) *--q = 0;
  *arg = *p ? p : nullptr;
  return 0;
}

long exec_depth(Task& t, Mm& mm, const char* path, const char* const* argv, const char* const* envp,
                ExecResult* out, int depth) {
  ExecFile ef;
  long r = open_exec(t, path, ef);
  if (r < 0) return r;
  uint8_t head[256];
  long n = read_at(t, *ef.f, head, sizeof head, 0);
  if (n < 0) return n;

  if (n >= 2 && head[0] == '#' && head[1] == '!') {
    if (depth >= kMaxScriptDepth) return -ELOOP;
    char line[sizeof head + 1];
    memcpy(line, head, n);
    line[n] = 0;
    char *interp, *arg;
    if (parse_shebang(line, (size_t)n, &interp, &arg) < 0) {
      out->why = "bad #! line";
      return -ENOEXEC;
    }
    int argc = count(argv);
    const char** nargv = static_cast<const char**>(t.kernel->heap->alloc(sizeof(char*) * (argc + 4)));
    if (!nargv) return -ENOMEM;
    int k = 0;
    nargv[k++] = interp;
    if (arg) nargv[k++] = arg;
    nargv[k++] = path;
    for (int i = 1; i < argc; i++) nargv[k++] = argv[i];
    nargv[k] = nullptr;
    r = exec_depth(t, mm, interp, nargv, envp, out, depth + 1);
    t.kernel->heap->free(nargv);
    if (r == 0) set_comm(out, path);  // Linux names the process after the script
    return r;
  }

  // Neither a script nor ELF: the shell's "Exec format error".
  if (n < 4 || memcmp(head, ELFMAG, SELFMAG) != 0) return -ENOEXEC;

  if ((r = program_creds(t, ef, out)) < 0) return r;
  loader::ElfImage img;
  uintptr_t bias = 0, interp_bias = 0;
  r = load_elf_file(t, mm, ef, head, (size_t)n, &img, &bias, &out->why);
  if (r < 0) return r;
  uintptr_t entry = bias + img.entry;
  uintptr_t image_end = bias + img.max_vaddr;

  if (img.has_interp) {
    char ipath[kPathMax];
    r = read_at(t, *ef.f, ipath, img.interp_size, img.interp_offset);
    if (r != (long)img.interp_size || ipath[img.interp_size - 1] != 0 ||
        strlen(ipath) + 1 != img.interp_size) {
      out->why = "bad PT_INTERP";
      return -ENOEXEC;
    }
    ExecFile ief;
    r = open_exec(t, ipath, ief);
    if (r == -ENOENT || r == -ENOTDIR) {
      out->why = "ELF interpreter not found";
      return -ENOEXEC;
    }
    if (r < 0) return r;
    uint8_t ihead[64];
    long in = read_at(t, *ief.f, ihead, sizeof ihead, 0);
    if (in < 0) return in;
    loader::ElfImage iimg;
    r = load_elf_file(t, mm, ief, ihead, (size_t)in, &iimg, &interp_bias, &out->why);
    if (r == -ENOEXEC) out->why = "ELF interpreter is not a loadable x86_64 ELF file";
    if (r < 0) return r;
    if (iimg.has_interp) {
      out->why = "ELF interpreter has an interpreter itself";
      return -ENOEXEC;
    }
    entry = interp_bias + iimg.entry;
  }

  r = mm_setup_brk(mm, image_end);
  if (r < 0) return r;
  uintptr_t sp;
  r = build_stack(t, mm, path, argv, envp, img, bias, interp_bias, *out, &sp);
  if (r < 0) return r;

  memset(out->regs, 0, sizeof out->regs);
  out->regs[REG_RIP] = (greg_t)entry;
  out->regs[REG_RSP] = (greg_t)sp;
  if (vfs_of(t).file_guest_path(t, *ef.f, out->exe, sizeof out->exe) < 0)
    copy_cstr(out->exe, sizeof out->exe, path);
  set_comm(out, path);
  return 0;
}

}  // namespace

const char kExecRangeBusy[] = "ET_EXEC program's link address range is already in use";

long exec_load(Task& t, Mm& mm, const char* path, const char* const* argv, const char* const* envp,
               ExecResult* out) {
  out->why = nullptr;
  return exec_depth(t, mm, path, argv, envp, out, 0);
}

}  // namespace flatux
