#include "kernel/mm/syscall_sites.h"

#include <atomic>
#include <csignal>
#include <cstring>
#include <linux/errno.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "host/code_patch.h"
#include "host/fast_entry.h"
#include "host/raw_syscall.h"
#include "kernel/mm/usercopy.h"
#include "kernel/kernel.h"
#include "kernel/mm/mm.h"
#include "kernel/syscall.h"

namespace flatux {

enum SiteState : uint8_t {
  kSiteRewritten,  // the site jumps to its stub
  kSiteReverted,   // original bytes back (code made writable); the stub is kept
  kSiteRefused,    // not rewritable where it is (writable or shared code)
};

enum SiteKind : uint8_t {
  kSiteJump,   // `mov $NR,%eax` became `jmp stub` (the syscall stays)
  kSitePage0,  // `syscall` became `call *%rax` into page 0 (rewrite-page0)
};

struct SiteEntry {
  uintptr_t addr;  // the mov (kSiteJump) or the syscall instruction (kSitePage0)
  uintptr_t stub;  // 0 when refused, and for page-0 sites
  uint32_t nr;
  SiteState state;
  SiteKind kind;
};

// Page-0 sites, looked up without the lock by the fast entry, which must
// tell a rewritten site's call from a call through a null pointer: open
// addressing over a table that never moves, changed under mm.lock.
constexpr size_t kPage0Slots = 4096;
constexpr uintptr_t kSlotEmpty = 0, kSlotGone = 1;
struct Page0Set {
  std::atomic<uintptr_t> slot[kPage0Slots];
  size_t used;  // slots ever taken (tombstones included)
};

// Stubs live in 64 KiB areas of private anonymous memory of the process,
// read-only and executable, each placed within ±2 GiB of the sites using
// it (the site's jump and the stub's lea are rel32). Slots are 32 bytes.
constexpr size_t kStubSize = 32;
constexpr size_t kAreaSize = 64 * 1024;
constexpr size_t kSlots = kAreaSize / kStubSize;

struct StubArea {
  uintptr_t base;
  StubArea* next;
  uint32_t live;
  uint64_t used[kSlots / 64];
};

struct SyscallSites {
  Kernel* kernel;
  SiteEntry* v = nullptr;  // sorted by addr
  size_t n = 0, cap = 0;
  StubArea* areas = nullptr;
  Page0Set* page0 = nullptr;
};

namespace {

constexpr uint8_t kMovEax = 0xb8, kJmpRel32 = 0xe9, kInt3 = 0xcc;

// The byte before the mov must not be one that would make it part of a
// longer instruction: a legacy prefix (0x66 makes it `mov $imm16,%ax`, a
// 4-byte instruction) or REX (0x41 makes it `mov $imm32,%r8d`, 0x48 a
// 10-byte movabs). Such a byte ending the previous instruction (a
// displacement, say) only costs a site that stays trapping.
bool prefix_or_rex(uint8_t b) {
  switch (b) {
    case 0x26: case 0x2e: case 0x36: case 0x3e: case 0x64: case 0x65: case 0x66: case 0x67:
    case 0xf0: case 0xf2: case 0xf3:
      return true;
    default:
      return b >= 0x40 && b <= 0x4f;
  }
}

uint32_t get32(const uint8_t* p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}

// b: the 8 bytes before the address after the syscall instruction.
bool mov_syscall_shape(const uint8_t (&b)[8], uint64_t nr) {
  return b[1] == kMovEax && get32(b + 2) == nr && b[6] == 0x0f && b[7] == 0x05 && !prefix_or_rex(b[0]);
}

bool fits_rel32(int64_t d) { return d >= INT32_MIN && d <= INT32_MAX; }

// Can every slot of an area at `base` reach the site and back?
bool reachable(uintptr_t base, uintptr_t site) {
  return fits_rel32((int64_t)(base - (site + 5))) &&
         fits_rel32((int64_t)(base + kAreaSize - (site + 5))) &&
         fits_rel32((int64_t)(site + 7 - (base + 12))) &&
         fits_rel32((int64_t)(site + 7 - (base + kAreaSize)));
}

bool mapped(long r) { return !(r < 0 && r > -4096); }

long map_area(uintptr_t hint, bool fixed) {
  return host::sys(SYS_mmap, hint, kAreaSize, PROT_READ | PROT_EXEC,
                   MAP_PRIVATE | MAP_ANONYMOUS | (fixed ? MAP_FIXED_NOREPLACE : 0), -1, 0);
}

// A new area within reach of `site`: where the host puts it by itself (next
// to the newest mappings, usually the libraries), else the first free
// place found stepping away from the site in growing strides.
uintptr_t new_area_near(uintptr_t site) {
  long r = map_area(0, false);
  if (mapped(r) && reachable((uintptr_t)r, site)) return (uintptr_t)r;
  if (mapped(r)) host::sys(SYS_munmap, r, kAreaSize);
  uintptr_t origin = site & ~(uintptr_t)(kAreaSize - 1);
  for (int k = 0; k < 16; k++) {
    for (int dir : {-1, 1}) {
      uintptr_t step = (uintptr_t)kAreaSize << k;
      uintptr_t hint = dir < 0 ? origin - step : origin + step;
      if ((dir < 0 && step > origin) || hint < (1u << 20) || !reachable(hint, site)) continue;
      r = map_area(hint, true);
      if (mapped(r)) return (uintptr_t)r;
    }
  }
  return 0;
}

void encode_stub(uint8_t (&s)[kStubSize], uintptr_t stub, uintptr_t site, uint32_t nr) {
  memset(s, kInt3, sizeof s);
  s[0] = kMovEax;  // mov $nr, %eax
  memcpy(s + 1, &nr, 4);
  s[5] = 0x48, s[6] = 0x8d, s[7] = 0x0d;  // lea site+7(%rip), %rcx
  int32_t back = (int32_t)(int64_t)(site + 7 - (stub + 12));
  memcpy(s + 8, &back, 4);
  // jmp *6(%rip): through the address at +24, 8-byte aligned (a guest
  // running with EFLAGS.AC set would take an unaligned load as a fault).
  s[12] = 0xff, s[13] = 0x25;
  int32_t to_word = 6;
  memcpy(s + 14, &to_word, 4);
  uint64_t entry = (uint64_t)flatux_fast_entry;
  memcpy(s + 24, &entry, 8);
}

void encode_jump(uint8_t (&j)[5], uintptr_t site, uintptr_t stub) {
  j[0] = kJmpRel32;
  int32_t rel = (int32_t)(int64_t)(stub - (site + 5));
  memcpy(j + 1, &rel, 4);
}

void encode_mov(uint8_t (&m)[5], uint32_t nr) {
  m[0] = kMovEax;
  memcpy(m + 1, &nr, 4);
}

uintptr_t alloc_stub(SyscallSites& ss, uintptr_t site, uint32_t nr) {
  StubArea* a = ss.areas;
  for (; a; a = a->next)
    if (a->live < kSlots && reachable(a->base, site)) break;
  if (!a) {
    uintptr_t base = new_area_near(site);
    if (!base) return 0;
    a = ss.kernel->heap->make<StubArea>();
    if (!a) {
      host::sys(SYS_munmap, base, kAreaSize);
      return 0;
    }
    a->base = base;
    a->next = ss.areas;
    ss.areas = a;
  }
  size_t slot = 0;
  while (a->used[slot / 64] & (1ull << (slot % 64))) slot++;
  uintptr_t stub = a->base + slot * kStubSize;
  uint8_t code[kStubSize];
  encode_stub(code, stub, site, nr);
  if (code_write(stub, code, sizeof code, PROT_READ | PROT_EXEC) < 0) return 0;
  a->used[slot / 64] |= 1ull << (slot % 64);
  a->live++;
  return stub;
}

void free_stub(SyscallSites& ss, uintptr_t stub) {
  for (StubArea** link = &ss.areas; *link; link = &(*link)->next) {
    StubArea* a = *link;
    if (stub < a->base || stub >= a->base + kAreaSize) continue;
    size_t slot = (stub - a->base) / kStubSize;
    a->used[slot / 64] &= ~(1ull << (slot % 64));
    // The area goes with its last site: no guest code jumps into it then.
    if (--a->live == 0) {
      host::sys(SYS_munmap, a->base, kAreaSize);
      *link = a->next;
      ss.kernel->heap->destroy_obj(a);
    }
    return;
  }
}

size_t lower_bound(const SyscallSites& ss, uintptr_t addr) {
  size_t lo = 0, hi = ss.n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (ss.v[mid].addr < addr) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

SiteEntry* find(SyscallSites& ss, uintptr_t addr) {
  size_t i = lower_bound(ss, addr);
  return i < ss.n && ss.v[i].addr == addr ? &ss.v[i] : nullptr;
}

SiteEntry* insert(SyscallSites& ss, const SiteEntry& e) {
  if (ss.n == ss.cap) {
    size_t cap = ss.cap ? ss.cap * 2 : 64;
    auto* nv = static_cast<SiteEntry*>(ss.kernel->heap->alloc(cap * sizeof(SiteEntry)));
    if (!nv) return nullptr;
    if (ss.n) memcpy(nv, ss.v, ss.n * sizeof(SiteEntry));
    ss.kernel->heap->free(ss.v);
    ss.v = nv;
    ss.cap = cap;
  }
  size_t i = lower_bound(ss, e.addr);
  memmove(ss.v + i + 1, ss.v + i, (ss.n - i) * sizeof(SiteEntry));
  ss.v[i] = e;
  ss.n++;
  return &ss.v[i];
}

SyscallSites* sites_of(Mm& mm, Kernel& k) {
  if (!mm.sites && (mm.sites = k.heap->make<SyscallSites>())) mm.sites->kernel = &k;
  return mm.sites;
}

// Code the guest can write, or that is shared with a file or another
// mapping, is never rewritten: the guest must find its own bytes there.
bool rewritable_code(const Mm& mm, uintptr_t site, size_t len) {
  const Region* r = mm.regions.find(site);
  return r && r->end >= site + len && (r->prot & PROT_EXEC) && !(r->prot & PROT_WRITE) &&
         !(r->flags & kRegionShared);
}

void note_refused(SyscallSites& ss, SiteEntry* e, uintptr_t site, uint32_t nr, SiteKind kind) {
  if (e) e->state = kSiteRefused;
  else insert(ss, SiteEntry{site, 0, nr, kSiteRefused, kind});
}

size_t page0_hash(uintptr_t addr) { return (size_t)((addr * 0x9e3779b97f4a7c15ull) >> 52); }

bool page0_add(SyscallSites& ss, uintptr_t addr) {
  if (!ss.page0 && !(ss.page0 = ss.kernel->heap->make<Page0Set>())) return false;
  Page0Set& p = *ss.page0;
  if (p.used >= kPage0Slots * 3 / 4) return false;
  size_t i = page0_hash(addr);
  for (;; i = (i + 1) % kPage0Slots) {
    uintptr_t v = p.slot[i].load(std::memory_order_relaxed);
    if (v == addr) return true;
    if (v == kSlotEmpty) break;
  }
  p.slot[i].store(addr, std::memory_order_release);
  p.used++;
  return true;
}

void page0_remove(SyscallSites& ss, uintptr_t addr) {
  if (!ss.page0) return;
  for (size_t i = page0_hash(addr), n = 0; n < kPage0Slots; i = (i + 1) % kPage0Slots, n++) {
    uintptr_t v = ss.page0->slot[i].load(std::memory_order_relaxed);
    if (v == kSlotEmpty) return;
    if (v == addr) {
      ss.page0->slot[i].store(kSlotGone, std::memory_order_release);
      return;
    }
  }
}

// What the site's bytes are while rewritten, and what they were.
size_t site_bytes(const SiteEntry& e, uint8_t (&now)[5], uint8_t (&orig)[5]) {
  if (e.kind == kSitePage0) {
    now[0] = 0xff, now[1] = 0xd0;  // call *%rax
    orig[0] = 0x0f, orig[1] = 0x05;
    return 2;
  }
  encode_jump(now, e.addr, e.stub);
  encode_mov(orig, e.nr);
  return 5;
}

// Puts the original bytes back where our rewrite still is.
void revert_entry(SyscallSites& ss, const Mm& mm, SiteEntry& e) {
  if (e.state != kSiteRewritten) return;
  e.state = kSiteReverted;
  if (e.kind == kSitePage0) page0_remove(ss, e.addr);
  uint8_t cur[5], now[5], orig[5];
  size_t n = site_bytes(e, now, orig);
  const Region* r = mm.regions.find(e.addr);
  if (!r || copy_from_user(cur, (const void*)e.addr, n) < 0 || memcmp(cur, now, n) != 0) return;
  code_patch_insn(e.addr, orig, n, r->prot);
}

// Runs rewrite(table, mm, entry or nullptr) for `site` under mm.lock,
// unless the site was refused before (or there is no memory for a table).
template <typename F>
void with_site(Task& t, uintptr_t site, F rewrite) {
  Mm& mm = *t.proc->mm;
  Guard lk(mm.lock);
  SyscallSites* ss = sites_of(mm, *t.kernel);
  if (!ss) return;
  SiteEntry* e = find(*ss, site);
  if (e && e->state == kSiteRefused) return;
  rewrite(*ss, mm, e);
}

void rewrite_mov_site(SyscallSites* ss, Mm& mm, SiteEntry* e, uintptr_t after, uint64_t nr) {
  uintptr_t site = after - 7;
  if (!rewritable_code(mm, site, 7)) return note_refused(*ss, e, site, (uint32_t)nr, kSiteJump);
  // Again under the lock: another thread may have rewritten it meanwhile.
  uint8_t b[8];
  if (copy_from_user(b, (const void*)(after - 8), 8) < 0 || !mov_syscall_shape(b, nr)) return;
  uintptr_t stub = e && e->stub && e->nr == nr ? e->stub : alloc_stub(*ss, site, (uint32_t)nr);
  if (!stub) return note_refused(*ss, e, site, (uint32_t)nr, kSiteJump);
  if (!e && !(e = insert(*ss, SiteEntry{site, stub, (uint32_t)nr, kSiteReverted, kSiteJump}))) {
    free_stub(*ss, stub);
    return;
  }
  e->stub = stub;
  e->nr = (uint32_t)nr;
  uint8_t jump[5];
  encode_jump(jump, site, stub);
  if (code_patch_insn(site, jump, 5, mm.regions.find(site)->prot) < 0)
    return note_refused(*ss, e, site, (uint32_t)nr, kSiteJump);
  e->state = kSiteRewritten;
}

// rewrite-page0: any other site's `syscall` becomes `call *%rax` (exact:
// the two bytes are the instruction that trapped). The call pushes its
// return address below the guest's RSP, which is why this is opt-in.
void rewrite_call_site(SyscallSites* ss, Mm& mm, SiteEntry* e, uintptr_t site) {
  static constexpr uint8_t kCall[2] = {0xff, 0xd0};
  uint8_t b[2];
  if (copy_from_user(b, (const void*)site, 2) < 0 || b[0] != 0x0f || b[1] != 0x05) return;
  if (!rewritable_code(mm, site, 2) || !page0_add(*ss, site)) return note_refused(*ss, e, site, 0, kSitePage0);
  if (!e && !(e = insert(*ss, SiteEntry{site, 0, 0, kSiteReverted, kSitePage0}))) {
    page0_remove(*ss, site);
    return;
  }
  if (code_patch_insn(site, kCall, 2, mm.regions.find(site)->prot) < 0) {
    page0_remove(*ss, site);
    return note_refused(*ss, e, site, 0, kSitePage0);
  }
  e->state = kSiteRewritten;
}

}  // namespace

void rewrite_syscall_site(Task& t, const ucontext_t* uc) {
  const greg_t* g = uc->uc_mcontext.gregs;
  uint64_t nr = (uint64_t)g[REG_RAX];
  uintptr_t after = (uintptr_t)g[REG_RIP];
  if (after < 4096) return;
  bool host_frame = nr >= (uint64_t)kMaxSyscall || needs_host_frame(nr);
  uint8_t b[8];
  if (!host_frame && copy_from_user(b, (const void*)(after - 8), 8) == 0 && mov_syscall_shape(b, nr))
    return with_site(t, after - 7, [&](SyscallSites& ss, Mm& mm, SiteEntry* e) {
      rewrite_mov_site(&ss, mm, e, after, nr);
    });
  // A site that traps with a call needing a host frame (glibc's
  // __restore_rt, `mov $15,%rax`) would gain nothing from a call either.
  if (t.kernel->cfg.syscall_entry == SyscallEntryMode::kRewritePage0 && !host_frame)
    with_site(t, after - 2, [&](SyscallSites& ss, Mm& mm, SiteEntry* e) {
      rewrite_call_site(&ss, mm, e, after - 2);
    });
}

SiteShape classify_syscall_site(Task& t, const ucontext_t* uc) {
  const greg_t* g = uc->uc_mcontext.gregs;
  uint64_t nr = (uint64_t)g[REG_RAX];
  uintptr_t after = (uintptr_t)g[REG_RIP];
  if (nr >= (uint64_t)kMaxSyscall || needs_host_frame(nr)) return SiteShape::kHostFrame;
  uint8_t b[8] = {};
  bool have = after >= 4096 && copy_from_user(b, (const void*)(after - 8), 8) == 0;
  bool mov = have && b[1] == kMovEax && get32(b + 2) == nr && b[6] == 0x0f && b[7] == 0x05;
  Mm& mm = *t.proc->mm;
  {
    Guard lk(mm.lock);
    if (!rewritable_code(mm, mov ? after - 7 : after - 2, mov ? 7 : 2)) return SiteShape::kNotCode;
  }
  if (mov) return prefix_or_rex(b[0]) ? SiteShape::kMovAfterPrefix : SiteShape::kMovRewritable;
  if (have && b[4] == 0x31 && b[5] == 0xc0) return SiteShape::kXorEax;
  return SiteShape::kOther;
}

bool is_page0_site(Mm& mm, uintptr_t addr) {
  SyscallSites* ss = mm.sites;
  if (!ss || !ss->page0 || addr <= kSlotGone) return false;
  for (size_t i = page0_hash(addr), n = 0; n < kPage0Slots; i = (i + 1) % kPage0Slots, n++) {
    uintptr_t v = ss->page0->slot[i].load(std::memory_order_acquire);
    if (v == addr) return true;
    if (v == kSlotEmpty) return false;
  }
  return false;
}

bool syscall_site_call_fault(Task& t, int sig, ucontext_t* uc) {
  if (t.kernel->cfg.syscall_entry != SyscallEntryMode::kRewritePage0) return false;
  Mm& mm = *t.proc->mm;
  greg_t* g = uc->uc_mcontext.gregs;
  uintptr_t rip = (uintptr_t)g[REG_RIP], rax = (uintptr_t)g[REG_RAX];
  bool noncanonical = rax >= 0x0000800000000000ull && rax < 0xffff800000000000ull;
  if (sig == SIGSEGV && noncanonical && is_page0_site(mm, rip)) {
    g[REG_RIP] = (greg_t)(rip + 2);  // the call itself faulted: nothing was pushed
  } else if (rip < 2 * kPage0Size || rip == rax) {
    uint64_t ret;  // it landed past the sled: the call's return address is on the stack
    if (copy_from_user(&ret, (const void*)g[REG_RSP], 8) < 0 || !is_page0_site(mm, ret - 2)) return false;
    g[REG_RIP] = (greg_t)ret;
    g[REG_RSP] += 8;
  } else {
    return false;
  }
  g[REG_RCX] = g[REG_RIP];  // as the syscall instruction leaves them
  g[REG_R11] = g[REG_EFL];
  return true;
}

bool syscall_site_trap(Task& t, ucontext_t* uc) {
  greg_t* g = uc->uc_mcontext.gregs;
  uintptr_t at = (uintptr_t)g[REG_RIP] - 1;
  Mm& mm = *t.proc->mm;
  Guard lk(mm.lock);  // a patch in progress holds it
  if (!mm.sites || !find(*mm.sites, at)) return false;
  uint8_t now;
  if (copy_from_user(&now, (const void*)at, 1) < 0 || now == kInt3) return false;
  g[REG_RIP] = (greg_t)at;  // the patch is done: run what is there now
  return true;
}

void syscall_sites_forget(Mm& mm, uintptr_t start, uintptr_t end) {
  SyscallSites* ss = mm.sites;
  if (!ss) return;
  size_t i = lower_bound(*ss, start), j = i;
  while (j < ss->n && ss->v[j].addr < end) {
    if (ss->v[j].stub) free_stub(*ss, ss->v[j].stub);
    if (ss->v[j].kind == kSitePage0) page0_remove(*ss, ss->v[j].addr);
    j++;
  }
  memmove(ss->v + i, ss->v + j, (ss->n - j) * sizeof(SiteEntry));
  ss->n -= j - i;
}

void syscall_sites_revert(Mm& mm, uintptr_t start, uintptr_t end) {
  SyscallSites* ss = mm.sites;
  if (!ss) return;
  for (size_t i = lower_bound(*ss, start); i < ss->n && ss->v[i].addr < end; i++)
    revert_entry(*ss, mm, ss->v[i]);
}

void syscall_sites_protect(Mm& mm, uintptr_t start, uintptr_t end, int prot) {
  SyscallSites* ss = mm.sites;
  if (!ss) return;
  bool stays_code = (prot & PROT_EXEC) && !(prot & PROT_WRITE);
  for (size_t i = lower_bound(*ss, start); i < ss->n && ss->v[i].addr < end; i++) {
    SiteEntry& e = ss->v[i];
    if (e.state == kSiteRefused) e.state = kSiteReverted;  // judged again at its next trap
    else if (!stays_code) revert_entry(*ss, mm, e);
  }
}

void syscall_sites_release(Mm& mm, bool unmap) {
  SyscallSites* ss = mm.sites;
  if (!ss) return;
  Heap* h = ss->kernel->heap;
  while (StubArea* a = ss->areas) {
    ss->areas = a->next;
    if (unmap) host::sys(SYS_munmap, a->base, kAreaSize);
    h->destroy_obj(a);
  }
  h->free(ss->v);
  h->destroy_obj(ss->page0);
  h->destroy_obj(ss);
  mm.sites = nullptr;
}

bool syscall_sites_fork(const Mm& parent, Mm& child) {
  const SyscallSites* from = parent.sites;
  if (!from) return true;
  Heap* h = from->kernel->heap;
  SyscallSites* to = h->make<SyscallSites>();
  if (!to) return false;
  to->kernel = from->kernel;
  child.sites = to;  // from here on, release() frees whatever was copied
  if (from->n) {
    if (!(to->v = static_cast<SiteEntry*>(h->alloc(from->n * sizeof(SiteEntry))))) return false;
    to->cap = from->n;
    // A site in memory the child does not get (MADV_DONTFORK) is not the
    // child's; its stub slot stays taken until the child's Mm goes. Both
    // lists are sorted by address, so one pass walks them together.
    const Region* r = parent.regions.first();
    for (size_t i = 0; i < from->n; i++) {
      uintptr_t addr = from->v[i].addr;
      while (r && r->end <= addr) r = r->next;
      if (r && r->start <= addr && (r->flags & kRegionDontFork)) continue;
      to->v[to->n++] = from->v[i];
    }
  }
  StubArea** tail = &to->areas;
  for (const StubArea* a = from->areas; a; a = a->next) {
    StubArea* c = h->make<StubArea>(*a);
    if (!c) return false;
    c->next = nullptr;
    *tail = c;
    tail = &c->next;
  }
  if (from->page0) {
    if (!(to->page0 = h->make<Page0Set>())) return false;
    for (size_t i = 0; i < kPage0Slots; i++)
      to->page0->slot[i].store(from->page0->slot[i].load(std::memory_order_relaxed), std::memory_order_relaxed);
    to->page0->used = from->page0->used;
  }
  return true;
}

size_t syscall_sites_areas(const Mm& mm, uintptr_t (*ranges)[2], size_t max) {
  size_t n = 0;
  for (const StubArea* a = mm.sites ? mm.sites->areas : nullptr; a; a = a->next, n++) {
    if (n < max) ranges[n][0] = a->base, ranges[n][1] = a->base + kAreaSize;
  }
  return n;
}

SyscallSiteStats syscall_site_stats(Mm& mm) {
  SyscallSiteStats st;
  Guard lk(mm.lock);
  if (!mm.sites) return st;
  for (size_t i = 0; i < mm.sites->n; i++) {
    if (mm.sites->v[i].state == kSiteRewritten) st.rewritten++;
    if (mm.sites->v[i].state == kSiteRefused) st.refused++;
  }
  for (StubArea* a = mm.sites->areas; a; a = a->next) st.stub_areas++;
  return st;
}

}  // namespace flatux
