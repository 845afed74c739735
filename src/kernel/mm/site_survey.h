// `flatux run --site-survey=FILE`: which shapes the syscall sites a
// workload executes have, and how many calls each shape carries -- what
// each --syscall-entry variant can rewrite (the figures in
// docs/PERFORMANCE.md). Every trapped call is classified; with
// --syscall-entry=trap every call traps, so the call counts are complete.
#pragma once
#include <sys/ucontext.h>

namespace flatux {

struct Kernel;
struct Mm;
struct Task;

// Starts counting (launcher, before guests run). False when out of memory.
bool site_survey_start(Kernel& k, int fd);
// One trapped call (SIGSYS handler).
void site_survey_call(Task& t, const ucontext_t* uc);
// The Mm's sites go into the totals (mm.lock held).
void site_survey_fold(Mm& mm);
// Writes the totals to the file given at the start (after the guests ended).
void site_survey_write(Kernel& k);

}  // namespace flatux
