/* inproc_lua.c: one run of a Lua script, for the in-process benchmark
 * (bench/inproc.c, bench/inproc.sh).
 *
 * Compiled once and linked (ld -r) with every object of one liblua.a; the
 * script then makes three copies of that object whose allocator calls go to
 * three places (glibc directly, bench/floor.c's recorder, rheaper's wraps), and
 * hides every Lua symbol of each copy but this file's entry point, renamed per
 * copy. So the driver holds three Lua interpreters of identical machine code in
 * one process.
 *
 * A run is what `lua SCRIPT N` does: a new state with the standard libraries,
 * arg[1] = N, the script compiled from memory and run, the state closed. The
 * script's print is replaced by a function that keeps the number it is given
 * (alloc.lua prints one checksum), so a run writes nothing and the driver can
 * check that every copy computed the same result.
 */
#include <stddef.h>

#include "lauxlib.h"
#include "lua.h"
#include "lualib.h"

static long long inproc_lua_sum;

/* print(x): keeps x as the run's checksum. */
static int inproc_lua_print(lua_State *L)
{
    inproc_lua_sum = (long long)luaL_optinteger(L, 1, 0);
    return 0;
}

/* Runs the script (len bytes at src, its chunk name name) with arg[1] = n in a
 * fresh state. Returns 0 and its checksum in *sum, or -1 when the state could
 * not be made or the script failed (its message is then lost; run it with lua
 * to see it). */
int inproc_lua_run(const char *src, size_t len, const char *name, long n, long long *sum)
{
    lua_State *L = luaL_newstate();
    if (!L)
        return -1;
    luaL_openlibs(L);
    lua_pushcfunction(L, inproc_lua_print);
    lua_setglobal(L, "print");
    lua_createtable(L, 1, 0);
    lua_pushinteger(L, (lua_Integer)n);
    lua_rawseti(L, -2, 1);
    lua_setglobal(L, "arg");
    inproc_lua_sum = -1;
    int rc =
        luaL_loadbuffer(L, src, len, name) == LUA_OK && lua_pcall(L, 0, 0, 0) == LUA_OK ? 0 : -1;
    lua_close(L);
    *sum = inproc_lua_sum;
    return rc;
}
