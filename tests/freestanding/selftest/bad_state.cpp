// Mutable static state: initialised, zeroed and thread-local globals, and a
// function-local static in an inline function (its own COMDAT .bss.* section).
int counter = 1;
int zeroed;
thread_local int per_thread;

inline int& hits() {
  static int n;
  return n;
}

int bump() {
  ++per_thread;
  ++hits();
  return ++counter + zeroed + per_thread;
}
