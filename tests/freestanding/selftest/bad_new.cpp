// libstdc++'s operator new/delete: host malloc underneath.
int* make_int() { return new int(7); }
void drop_int(int* p) { delete p; }
