/* lv_names.cc: the C++ program of the terminal views' name and attribution
 * tests (tests/e2e/live/run.sh, case names-tmux).
 *
 * Its functions have the names C++ programs have: members of class
 * templates instantiated with std::string, taking std::string arguments, so
 * their demangled names run past 150 characters. It reads commands from
 * stdin, one per line, and answers each with "ok N" (N counts the commands)
 * once it is done:
 *   keep N          lvnames::NameTable<...>::keep_name(std::string const&, ...)
 *                   keeps N strings of 300 characters, never freed (the
 *                   profile's leak): per string a 32-byte std::string (line
 *                   of `new`) and its 301-byte buffer (line of resize)
 *   batch N         lvnames::BatchBuilder<...>::build_batch(...) builds N
 *                   strings of 200 characters, each a 32-byte std::string
 *                   and its 201-byte buffer from the one line of `new`, then
 *                   frees them all: the profile's peak, 0 B at the end
 *   churn on|off    while on, three threads ("lvchurn0".."lvchurn2") run
 *                   lvnames::StringChurner<...>::churn(...): strings built,
 *                   grown, rewritten and copied (std::string's _M_mutate,
 *                   _M_construct, _M_append: allocating code inlined from
 *                   libstdc++'s headers), so CPU samples land in string code
 *                   and many of them inside the allocation hooks
 *   quit            exits (kept strings stay live)
 * So every name and count the views show is known.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace lvnames {

/* Keeps strings forever (a leak the finished profile shows). */
template <typename Key, typename Alloc = std::allocator<Key>> class NameTable {
  public:
    __attribute__((noinline)) void keep_name(const std::string &prefix, const Key &fill, int n)
    {
        for (int i = 0; i < n; i++) {
            std::string *s = new std::string(prefix);
            s->resize(300, fill[0]);
            kept_.push_back(s);
        }
    }
    std::vector<std::string *> kept_;
};

/* Builds a batch of strings and drops it: a peak that is gone at the end. */
template <typename Str, typename Sep> class BatchBuilder {
  public:
    __attribute__((noinline)) size_t build_batch(const std::string &stem, const Sep &sep, int n)
    {
        std::vector<Str *> batch;
        batch.reserve((size_t)n);
        for (int i = 0; i < n; i++) {
            Str *s = new Str(200, stem[0]);
            (*s)[1] = sep[0];
            batch.push_back(s);
        }
        size_t total = 0;
        for (Str *s : batch) {
            total += s->size();
            delete s;
        }
        return total;
    }
};

/* String work: every CPU sample of the churn threads lands in it. */
template <typename Str, typename Counts> class StringChurner {
  public:
    __attribute__((noinline)) size_t churn(const std::string &seed, const Str &tail,
                                           std::atomic<int> &running)
    {
        size_t sum = 0;
        while (running.load(std::memory_order_relaxed)) {
            Str s(seed);
            for (int i = 0; i < 40; i++) {
                s += tail;             /* _M_append */
                s.insert(0, 3, 'x');   /* _M_replace_aux */
                s.replace(2, 1, "yz"); /* _M_replace / _M_mutate */
            }
            /* string work that allocates nothing: keeps the profile small
             * while the CPU stays in std::string's members */
            for (int i = 0; i < 400; i++) {
                s.insert(0, 3, 'w'); /* _M_replace_aux, in place */
                s.erase(0, 3);       /* _M_erase */
            }
            Str copy(s.begin(), s.end()); /* _M_construct */
            sum += copy.size() + counts_[copy.substr(0, 4)]++;
        }
        return sum;
    }
    Counts counts_;
};

} // namespace lvnames

static lvnames::NameTable<std::string> table;
static std::atomic<int> churning;
static std::vector<std::thread> churners;
static size_t churned[3];

int main()
{
    char line[256];
    int cmds = 0;
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("ready\n");
    while (fgets(line, sizeof line, stdin)) {
        int n = 0;
        char arg[32] = "";
        if (sscanf(line, "keep %d", &n) == 1) {
            table.keep_name(std::string("kept-name-"), std::string("k"), n);
        } else if (sscanf(line, "batch %d", &n) == 1) {
            lvnames::BatchBuilder<std::string, std::string> b;
            if (b.build_batch(std::string("batch"), std::string("-"), n) != (size_t)n * 200)
                return 2;
        } else if (sscanf(line, "churn %31s", arg) == 1) {
            if (!strcmp(arg, "on") && !churning.load()) {
                churning = 1;
                for (int t = 0; t < 3; t++)
                    churners.emplace_back([t] {
                        char name[16];
                        snprintf(name, sizeof name, "lvchurn%d", t);
                        pthread_setname_np(pthread_self(), name);
                        lvnames::StringChurner<std::string, std::map<std::string, int>> c;
                        churned[t] = c.churn(std::string("seed-string-of-the-churn"),
                                             std::string("tail"), churning);
                    });
            } else if (strcmp(arg, "on") && churning.load()) {
                churning = 0;
                for (std::thread &t : churners)
                    t.join();
                churners.clear();
            }
        } else if (!strncmp(line, "quit", 4)) {
            break;
        }
        printf("ok %d\n", ++cmds);
    }
    if (churning.load()) {
        churning = 0;
        for (std::thread &t : churners)
            t.join();
    }
    return 0;
}
