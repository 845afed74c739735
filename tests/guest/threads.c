// POSIX threads: creation and joining with return values, mutual exclusion
// under contention, condition variables, thread-local storage and thread
// identities.
#include "guest_check.h"

#include <pthread.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

static pid_t tid(void) { return (pid_t)syscall(SYS_gettid); }

// --- many threads, each handing back its index ---

#define MANY 64

static void* return_index(void* arg) { return arg; }

static void create_join(void) {
  printf("%d threads created and joined:\n", MANY);
  pthread_t th[MANY];
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  // Small stacks keep 64 threads cheap on a kernel without lazy paging.
  pthread_attr_setstacksize(&attr, 256 * 1024);
  int created = 0;
  for (int i = 0; i < MANY; i++) {
    int r = pthread_create(&th[i], &attr, return_index, (void*)(intptr_t)i);
    CHECK(r == 0, "pthread_create #%d: %s", i, strerror(r));
    if (r != 0) break;
    created++;
  }
  pthread_attr_destroy(&attr);
  int right = 0;
  for (int i = 0; i < created; i++) {
    void* ret = NULL;
    int r = pthread_join(th[i], &ret);
    CHECK(r == 0, "pthread_join #%d: %s", i, strerror(r));
    CHECK((intptr_t)ret == i, "thread %d returned %ld", i, (long)(intptr_t)ret);
    if (r == 0 && (intptr_t)ret == i) right++;
  }
  printf("  %d of %d returned their own index\n", right, MANY);
}

// --- a contended mutex ---

#define COUNTERS 8
#define INCREMENTS 1000000

static pthread_mutex_t counter_lock = PTHREAD_MUTEX_INITIALIZER;
// Not atomic: only the mutex keeps increments from being lost.
static unsigned long counter;

static void* increment(void* arg) {
  for (int i = 0; i < INCREMENTS; i++) {
    pthread_mutex_lock(&counter_lock);
    counter++;
    pthread_mutex_unlock(&counter_lock);
  }
  return arg;
}

static void contended_mutex(void) {
  printf("%d threads x %d mutex-protected increments:\n", COUNTERS, INCREMENTS);
  pthread_t th[COUNTERS];
  counter = 0;
  for (int i = 0; i < COUNTERS; i++)
    REQUIRE(pthread_create(&th[i], NULL, increment, NULL) == 0, "pthread_create");
  for (int i = 0; i < COUNTERS; i++) pthread_join(th[i], NULL);
  CHECK(counter == (unsigned long)COUNTERS * INCREMENTS, "counter %lu, want %lu", counter,
        (unsigned long)COUNTERS * INCREMENTS);
  printf("  counter = %lu\n", counter);
}

// --- condition-variable ping-pong ---

#define ROUNDS 100000

static pthread_mutex_t pp_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pp_cond = PTHREAD_COND_INITIALIZER;
static long pp_turn;  // even: ping's move, odd: pong's move
static long pp_misorder;

static void* player(void* arg) {
  long parity = (long)(intptr_t)arg;
  for (long i = 0; i < ROUNDS; i++) {
    pthread_mutex_lock(&pp_lock);
    while ((pp_turn & 1) != parity) pthread_cond_wait(&pp_cond, &pp_lock);
    if (pp_turn != 2 * i + parity) pp_misorder++;
    pp_turn++;
    pthread_cond_signal(&pp_cond);
    pthread_mutex_unlock(&pp_lock);
  }
  return NULL;
}

static void ping_pong(void) {
  printf("condition variable ping-pong, %d rounds:\n", ROUNDS);
  pthread_t a, b;
  pp_turn = 0;
  REQUIRE(pthread_create(&a, NULL, player, (void*)0) == 0, "pthread_create ping");
  REQUIRE(pthread_create(&b, NULL, player, (void*)1) == 0, "pthread_create pong");
  pthread_join(a, NULL);
  pthread_join(b, NULL);
  CHECK(pp_turn == 2L * ROUNDS, "%ld moves, want %ld", pp_turn, 2L * ROUNDS);
  CHECK(pp_misorder == 0, "%ld moves out of turn", pp_misorder);
  printf("  %ld moves, strictly alternating\n", pp_turn);
}

// --- thread-local storage and identities ---

#define TLS_THREADS 8

static __thread long tls_value = -1;
static __thread char tls_array[64];

static pthread_barrier_t barrier;

struct ident {
  int index;
  pthread_t self;
  pid_t tid;
  void* tls_addr;
  long tls_seen_first;  // before this thread wrote it: the initial value
  int tls_kept;
  int equal_self;
};

static void* identify(void* arg) {
  struct ident* id = arg;
  id->tls_seen_first = tls_value;
  tls_value = 1000 + id->index;
  memset(tls_array, 'a' + id->index, sizeof tls_array);
  id->self = pthread_self();
  id->equal_self = pthread_equal(id->self, pthread_self()) != 0;
  id->tid = tid();
  id->tls_addr = &tls_value;
  // Everyone has written their copy before anyone checks theirs.
  pthread_barrier_wait(&barrier);
  int kept = tls_value == 1000 + id->index;
  for (size_t i = 0; i < sizeof tls_array; i++)
    if (tls_array[i] != 'a' + id->index) kept = 0;
  id->tls_kept = kept;
  pthread_barrier_wait(&barrier);
  return NULL;
}

static void identities(void) {
  printf("__thread variables and thread identities, %d threads:\n", TLS_THREADS);
  tls_value = 42;
  REQUIRE(pthread_barrier_init(&barrier, NULL, TLS_THREADS) == 0, "barrier_init");
  pthread_t th[TLS_THREADS];
  struct ident ids[TLS_THREADS];
  memset(ids, 0, sizeof ids);
  for (int i = 0; i < TLS_THREADS; i++) {
    ids[i].index = i;
    REQUIRE(pthread_create(&th[i], NULL, identify, &ids[i]) == 0, "pthread_create");
  }
  for (int i = 0; i < TLS_THREADS; i++) pthread_join(th[i], NULL);
  pthread_barrier_destroy(&barrier);

  pid_t pid = getpid();
  CHECK(tid() == pid, "the main thread's tid %d is not the pid %d", (int)tid(), (int)pid);
  CHECK(tls_value == 42, "the main thread's __thread value changed to %ld", tls_value);
  for (int i = 0; i < TLS_THREADS; i++) {
    CHECK(ids[i].tls_seen_first == -1, "thread %d started with tls_value %ld, want -1", i,
          ids[i].tls_seen_first);
    CHECK(ids[i].tls_kept, "thread %d's __thread data was overwritten", i);
    CHECK(ids[i].equal_self, "thread %d: pthread_equal(self, self) is false", i);
    CHECK(pthread_equal(ids[i].self, th[i]), "thread %d: pthread_self differs from create's",
          i);
    CHECK(ids[i].tid > 0 && ids[i].tid != pid, "thread %d has tid %d (pid %d)", i,
          (int)ids[i].tid, (int)pid);
    CHECK(ids[i].tls_addr != (void*)&tls_value, "thread %d shares main's __thread address",
          i);
    CHECK(!pthread_equal(ids[i].self, pthread_self()), "thread %d has main's pthread_self", i);
    for (int j = 0; j < i; j++) {
      CHECK(ids[i].tid != ids[j].tid, "threads %d and %d share tid %d", i, j, (int)ids[i].tid);
      CHECK(!pthread_equal(ids[i].self, ids[j].self), "threads %d and %d share pthread_self",
            i, j);
      CHECK(ids[i].tls_addr != ids[j].tls_addr, "threads %d and %d share __thread storage", i,
            j);
    }
  }
  printf("  distinct tids, pthread_self values and __thread addresses; main's value kept\n");
}

// --- a thread's exit value through pthread_exit, and a detached thread ---

static volatile int detached_ran;

static void* exits_early(void* arg) {
  pthread_exit((void*)(intptr_t)77);
  return arg;
}

static void* detached(void* arg) {
  __atomic_store_n(&detached_ran, 1, __ATOMIC_RELEASE);
  return arg;
}

static void exit_and_detach(void) {
  printf("pthread_exit and a detached thread:\n");
  pthread_t t;
  void* ret = NULL;
  REQUIRE(pthread_create(&t, NULL, exits_early, NULL) == 0, "pthread_create");
  CHECK(pthread_join(t, &ret) == 0, "pthread_join");
  CHECK((intptr_t)ret == 77, "pthread_exit value %ld, want 77", (long)(intptr_t)ret);

  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  REQUIRE(pthread_create(&t, &attr, detached, NULL) == 0, "pthread_create detached");
  pthread_attr_destroy(&attr);
  for (int i = 0; i < 5000 && !__atomic_load_n(&detached_ran, __ATOMIC_ACQUIRE); i++)
    usleep(1000);
  CHECK(detached_ran, "the detached thread never ran");
  printf("  exit value 77 joined; detached thread ran\n");
}

int main(void) {
  // Line by line, so a run that hangs shows how far it got.
  setvbuf(stdout, NULL, _IOLBF, 0);
  guest_name = "threads";
  create_join();
  contended_mutex();
  ping_pong();
  identities();
  exit_and_detach();
  return guest_finish();
}
