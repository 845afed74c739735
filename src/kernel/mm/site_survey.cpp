#include "kernel/mm/site_survey.h"

#include <cstring>
#include <sys/syscall.h>

#include "host/raw_syscall.h"
#include "kernel/mm/usercopy.h"
#include "kernel/kernel.h"
#include "kernel/lib/kfmt.h"
#include "kernel/mm/syscall_sites.h"

namespace flatux {

constexpr size_t kSurveySlots = 1 << 16;
constexpr int kShapes = (int)SiteShape::kCount;

struct SurveyEntry {
  Mm* mm;  // nullptr: free
  uintptr_t addr;
  uint64_t calls;
  SiteShape shape;
  uint8_t before[8];  // the bytes before the syscall instruction
};

// The commonest byte patterns before sites no variant but page 0
// rewrites: where more coverage would come from.
constexpr int kPatterns = 24;
struct Pattern {
  uint8_t before[8];
  uint64_t sites, calls;
};

struct SiteSurvey {
  KMutex lock;
  int fd;
  SurveyEntry* slots;
  size_t used = 0;
  uint64_t sites[kShapes]{}, calls[kShapes]{};
  uint64_t dropped = 0;  // calls from sites that found the table full
  Pattern patterns[kPatterns]{};
  int npatterns = 0;
};

namespace {

size_t slot_of(const Mm* mm, uintptr_t addr) {
  return (size_t)((((uintptr_t)mm >> 4) ^ addr) * 0x9e3779b97f4a7c15ull >> 48) % kSurveySlots;
}

SurveyEntry* find_or_add(SiteSurvey& s, Mm* mm, uintptr_t addr, SiteShape shape) {
  for (size_t i = slot_of(mm, addr), n = 0; n < kSurveySlots; i = (i + 1) % kSurveySlots, n++) {
    SurveyEntry& e = s.slots[i];
    if (e.mm == mm && e.addr == addr) return &e;
    if (!e.mm) {
      if (s.used >= kSurveySlots * 3 / 4) return nullptr;
      e = SurveyEntry{mm, addr, 0, shape};
      s.used++;
      return &e;
    }
  }
  return nullptr;
}

void count_pattern(SiteSurvey& s, const SurveyEntry& e) {
  if (e.shape != SiteShape::kOther) return;
  for (int i = 0; i < s.npatterns; i++) {
    if (memcmp(s.patterns[i].before, e.before, 8) == 0) {
      s.patterns[i].sites++;
      s.patterns[i].calls += e.calls;
      return;
    }
  }
  int at = s.npatterns < kPatterns ? s.npatterns++ : kPatterns - 1;  // the last slot is reused
  if (at == kPatterns - 1 && s.patterns[at].calls > e.calls) return;
  memcpy(s.patterns[at].before, e.before, 8);
  s.patterns[at].sites = 1;
  s.patterns[at].calls = e.calls;
  // Keep them ordered by calls, so the last slot is the least used.
  while (at > 0 && s.patterns[at].calls > s.patterns[at - 1].calls) {
    Pattern t = s.patterns[at];
    s.patterns[at] = s.patterns[at - 1];
    s.patterns[at - 1] = t;
    at--;
  }
}

// Adds the sites of `mm` (all when nullptr) to the totals and takes them
// out of the table, which is then rebuilt without them.
void fold(SiteSurvey& s, Heap& heap, const Mm* mm) {
  auto* fresh = static_cast<SurveyEntry*>(heap.alloc(kSurveySlots * sizeof(SurveyEntry)));
  if (!fresh) return;
  SurveyEntry* old = s.slots;
  s.slots = fresh;
  s.used = 0;
  for (size_t i = 0; i < kSurveySlots; i++) {
    const SurveyEntry& e = old[i];
    if (!e.mm) continue;
    if (!mm || e.mm == mm) {
      s.sites[(int)e.shape]++;
      s.calls[(int)e.shape] += e.calls;
      count_pattern(s, e);
    } else if (SurveyEntry* n = find_or_add(s, e.mm, e.addr, e.shape)) {
      n->calls = e.calls;
      memcpy(n->before, e.before, 8);
    }
  }
  heap.free(old);
}

constexpr const char* kShapeNames[kShapes] = {
    "mov $NR,%eax; syscall (rewritten: jump)",
    "needs a host frame (sigreturn, clone, vfork)",
    "mov $NR,%eax after a prefix-like byte",
    "xor %eax,%eax; syscall",
    "other shapes",
    "writable, shared or foreign code",
};

}  // namespace

bool site_survey_start(Kernel& k, int fd) {
  SiteSurvey* s = k.heap->make<SiteSurvey>();
  if (!s) return false;
  s->fd = fd;
  s->slots = static_cast<SurveyEntry*>(k.heap->alloc(kSurveySlots * sizeof(SurveyEntry)));
  if (!s->slots) {
    k.heap->destroy_obj(s);
    return false;
  }
  k.survey = s;
  return true;
}

void site_survey_call(Task& t, const ucontext_t* uc) {
  SiteSurvey& s = *t.kernel->survey;
  SiteShape shape = classify_syscall_site(t, uc);
  uintptr_t site = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP] - 2;
  uint8_t before[8] = {};
  if (site >= 4096) copy_from_user(before, (const void*)(site - 8), 8);
  Guard g(s.lock);
  if (SurveyEntry* e = find_or_add(s, t.proc->mm, site, shape)) {
    if (!e->calls++) memcpy(e->before, before, 8);
  } else {
    s.dropped++;
  }
}

void site_survey_fold(Mm& mm) {
  // An Mm does not point at its kernel: found through the heap's fixed address.
  auto* kernel = static_cast<Kernel*>(Heap::root_of_this_process());
  if (!kernel || !kernel->survey) return;
  Guard g(kernel->survey->lock);
  fold(*kernel->survey, *kernel->heap, &mm);
}

void site_survey_write(Kernel& k) {
  SiteSurvey* s = k.survey;
  if (!s) return;
  Guard g(s->lock);
  fold(*s, *k.heap, nullptr);
  uint64_t all_sites = 0, all_calls = 0;
  for (int i = 0; i < kShapes; i++) all_sites += s->sites[i], all_calls += s->calls[i];
  char buf[4096];
  KFmt f(buf, sizeof buf);
  f.str("# syscall sites executed (per process) and trapped calls, by shape\n");
  for (int i = 0; i < kShapes; i++)
    f.str(kShapeNames[i]).str("\t").udec(s->sites[i]).str("\t").udec(s->calls[i]).ch('\n');
  f.str("total\t").udec(all_sites).str("\t").udec(all_calls).ch('\n');
  if (s->dropped) f.str("# calls not counted (table full): ").udec(s->dropped).ch('\n');
  f.str("# other shapes, commonest 8 bytes before the syscall: sites calls\n");
  for (int i = 0; i < s->npatterns; i++) {
    f.str("#  ");
    for (uint8_t b : s->patterns[i].before) f.hexraw(b, 2).ch(' ');
    f.str("\t").udec(s->patterns[i].sites).str("\t").udec(s->patterns[i].calls).ch('\n');
  }
  host::sys(SYS_write, s->fd, buf, f.view().size());
}

}  // namespace flatux
