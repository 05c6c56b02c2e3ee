/* webui_cxx.cpp: a C++ program whose frames carry long names, for the web
 * UI's browser test: templates over std::string and std::map, functions that
 * take std::string const& and containers, so that the demangled names run to
 * a hundred characters and more.
 *
 * It indexes WORDS words: make_word builds each one (a std::string longer than
 * the small-string buffer: one heap block each, freed at once: temporary),
 * WordIndex<std::string, int>::add keeps it in a std::map of std::vector<int>
 * (the index, freed at the end), lower_copy makes a copy that index_word
 * frees before anything else is allocated (WORDS temporary blocks), and remember_line leaks one 48-byte block
 * every LEAK_EVERY words (WORDS / LEAK_EVERY = 250 blocks never freed).
 */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#define WORDS 20000
#define LEAK_EVERY 80

template <typename K, typename V> struct WordIndex {
    std::map<K, std::vector<V>> m;
    __attribute__((noinline)) void add(const K &key, const V &v)
    {
        m[key].push_back(v);
    }
};

/* One word of the text: a string of 40-odd characters (on the heap). */
__attribute__((noinline)) std::string make_word(const std::string &prefix, int i)
{
    char num[32];
    snprintf(num, sizeof num, "-%06d-padding-past-the-small-buffer", i % 3000);
    return prefix + num;
}

/* The leak: one 48-byte note every LEAK_EVERY words, never freed. */
__attribute__((noinline)) void remember_line(const std::map<std::string, std::vector<int>> &m,
                                             const std::string &word, int line)
{
    if (line % LEAK_EVERY == 0) {
        char *note = static_cast<char *>(malloc(48));
        snprintf(note, 48, "%zu %d", m.size(), (int)word.size());
        static volatile char *sink;
        sink = note;
    }
}

/* The word in lower case: one heap block the caller frees at once. */
__attribute__((noinline)) std::string lower_copy(const std::string &word)
{
    std::string s(word);
    for (char &c : s)
        c = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
    return s;
}

__attribute__((noinline)) void index_word(const std::string &word, int line,
                                          WordIndex<std::string, int> &idx)
{
    /* a lower-case copy, freed before anything else is allocated: temporary */
    {
        std::string lower = lower_copy(word);
        static volatile size_t seen;
        seen = seen + lower.size();
    }
    idx.add(word, line);
    remember_line(idx.m, word, line);
}

int main()
{
    WordIndex<std::string, int> idx;
    const std::string prefix = "word-of-the-profiled-text";
    for (int i = 0; i < WORDS; i++) {
        std::string w = make_word(prefix, i);
        index_word(w, i, idx);
    }
    printf("%zu words\n", idx.m.size());
    return 0;
}
