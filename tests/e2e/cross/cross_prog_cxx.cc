// cross_prog_cxx.cc: the C++ program of the 32-bit cross targets, where
// operator new takes an unsigned int (_Znwj, not _Znwm), with counts it knows
// (tests/e2e/cross/check_cross.sh checks them in the converted database):
//   f_new        6 new Obj (24 bytes), deleted     kind new,    144 bytes
//   f_new_array  3 new int[10], deleted[]          kind new[],  120 bytes
//   f_new_leak   1 new Obj, never deleted           kind new,     24 bytes
// Every function is noinline and stores through a volatile pointer, so that
// -O2 keeps each new and delete where the source has it.
#define NOINLINE __attribute__((noinline))
struct Obj {
    int v[6];
};
static void *volatile sink;

NOINLINE static void f_new()
{
    for (int i = 0; i < 6; i++) {
        Obj *o = new Obj();
        sink = o;
        delete static_cast<Obj *>(sink);
    }
}

NOINLINE static void f_new_array()
{
    for (int i = 0; i < 3; i++) {
        int *a = new int[10]();
        sink = a;
        delete[] static_cast<int *>(sink);
    }
}

NOINLINE static void f_new_leak()
{
    sink = new Obj();
}

int main()
{
    f_new();
    f_new_array();
    f_new_leak();
    return 0;
}
