// argv/envp as the kernel laid them out on the initial stack.
//
// usage: hello EXPECTED_ARGC NAME=VALUE JOINED ARG...
//   EXPECTED_ARGC  the argc the program must see
//   NAME=VALUE     the only variable the environment must hold
//   JOINED         the ARGs joined with '|', which they must match
// The expectations travel in argv itself so a mangled argument vector shows
// up as a mismatch instead of an equally mangled expectation.
#include "guest_check.h"

extern char** environ;

int main(int argc, char** argv, char** envp) {
  guest_name = "hello";
  printf("hello from %s\n", argv[0] ? argv[0] : "(null)");
  printf("argc=%d\n", argc);
  for (int i = 0; i < argc; i++) printf("argv[%d]=\"%s\"\n", i, argv[i]);
  for (char** e = envp; *e; e++) printf("envp: \"%s\"\n", *e);

  REQUIRE(argc >= 4, "argc=%d; usage: hello EXPECTED_ARGC NAME=VALUE JOINED ARG...", argc);
  CHECK(argv[argc] == NULL, "argv is not NULL-terminated");
  CHECK(argv[0][0] != '\0', "argv[0] is empty");
  CHECK(strstr(argv[0], "hello") != NULL, "argv[0]=\"%s\" does not name this program", argv[0]);

  char* end;
  long want_argc = strtol(argv[1], &end, 10);
  CHECK(*end == '\0' && want_argc == argc, "argc=%d but argv[1]=\"%s\"", argc, argv[1]);

  // The kernel places envp right after argv's NULL; libc hands the same
  // array to main and environ.
  CHECK(envp == argv + argc + 1, "envp=%p is not argv+argc+1=%p", (void*)envp,
        (void*)(argv + argc + 1));
  CHECK(envp == environ, "envp=%p environ=%p", (void*)envp, (void*)environ);

  const char* want_env = argv[2];
  const char* eq = strchr(want_env, '=');
  REQUIRE(eq && eq != want_env, "argv[2]=\"%s\" is not NAME=VALUE", want_env);
  char name[256];
  size_t nlen = (size_t)(eq - want_env);
  REQUIRE(nlen < sizeof name, "variable name too long");
  memcpy(name, want_env, nlen);
  name[nlen] = '\0';
  const char* got = getenv(name);
  printf("getenv(\"%s\")=%s%s%s\n", name, got ? "\"" : "", got ? got : "(unset)",
         got ? "\"" : "");
  CHECK(got && strcmp(got, eq + 1) == 0, "%s=\"%s\", want \"%s\"", name,
        got ? got : "(unset)", eq + 1);
  int nenv = 0;
  for (char** e = envp; *e; e++) nenv++;
  CHECK(nenv == 1, "environment has %d entries, want exactly 1", nenv);
  CHECK(nenv >= 1 && strcmp(envp[0], want_env) == 0, "envp[0]=\"%s\", want \"%s\"",
        nenv ? envp[0] : "", want_env);

  char joined[4096] = "";
  size_t len = 0;
  for (int i = 4; i < argc; i++) {
    size_t alen = strlen(argv[i]);
    REQUIRE(len + alen + 2 < sizeof joined, "arguments too long");
    if (i > 4) joined[len++] = '|';
    memcpy(joined + len, argv[i], alen + 1);
    len += alen;
  }
  CHECK(strcmp(joined, argv[3]) == 0, "arguments joined are \"%s\", want \"%s\"", joined,
        argv[3]);

  // Strings are laid out back to back in the order of argv then envp.
  for (int i = 1; i < argc; i++)
    CHECK(argv[i] == argv[i - 1] + strlen(argv[i - 1]) + 1,
          "argv[%d] does not follow argv[%d]", i, i - 1);
  return guest_finish();
}
