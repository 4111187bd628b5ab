// Side-by-side A/B of two versions of ojx::interval_map (see interval_map_ab.sh): 1 M objects of 1-4 KiB, 2^21
// random probes (as bench_interval_map), rounds of one pass per version in alternating order, paired ratios.
#include "ojx/interval_map.hpp"
#include "ojx/interval_map_old.hpp"
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <vector>
#include <sys/mman.h>
struct range { ojx::address b, e; };
static std::vector<range> objects; static std::vector<ojx::address> probes;
static void advise(void* m, std::size_t b) { madvise(m, b, MADV_HUGEPAGE); }
template <class Map> Map* build() {
  auto* m = new Map(typename std::remove_cvref_t<decltype(std::declval<Map>().config())>{.advise_large_table = advise});
  for (std::size_t i = 0; i < objects.size(); ++i) m->insert(objects[i].b, objects[i].e, ojx::object_info{ojx::context_id(i % 1000), ojx::type_id(i % 77), i});
  m->reclaim_retired(); return m;
}
template <class Map, int Use> __attribute__((noinline)) double run(const Map& map, std::uint64_t& sink) {
  const ojx::address* p = probes.data(); const std::size_t n = probes.size(); std::uint64_t found = 0;
  auto t0 = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < n; ++i) {
    const auto r = map.lookup(p[i]);
    if constexpr (Use == 0) found += r.value.payload.serial;
    else found += r.value.payload.serial + (r.value.end - r.value.begin) + r.value.payload.allocation_context;
  }
  auto t1 = std::chrono::steady_clock::now();
  sink += found;
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / double(n);
}
int main(int argc, char** argv) {
  const int rounds = argc > 1 ? atoi(argv[1]) : 30; const int use_all = argc > 2 ? atoi(argv[2]) : 0;
  std::size_t count = 1000000; std::mt19937_64 rng(count); ojx::address next = 0x7F0000000000;
  for (std::size_t i = 0; i < count; ++i) { std::uint64_t size = 1024 + rng() % (3 * 1024 + 1); objects.push_back({next, next + size}); next += size + 1 + rng() % 64; }
  probes.resize(1 << 21);
  for (auto& a : probes) { std::size_t i = rng() % count; const range& o = objects[i]; ojx::address ge = i + 1 < count ? objects[i + 1].b : next;
    a = rng() % 10 == 0 ? o.e + rng() % (ge - o.e) : o.b + rng() % (o.e - o.b); }
  auto* a = build<ojx_old::object_map>(); auto* b = build<ojx::object_map>();
  std::uint64_t sink = 0; std::vector<double> ta, tb, ratio;
  for (int r = 0; r < rounds; ++r) {
    double x, y;
    auto runa = [&] { return use_all ? run<ojx_old::object_map, 1>(*a, sink) : run<ojx_old::object_map, 0>(*a, sink); };
    auto runb = [&] { return use_all ? run<ojx::object_map, 1>(*b, sink) : run<ojx::object_map, 0>(*b, sink); };
    if (r % 2 == 0) { x = runa(); y = runb(); } else { y = runb(); x = runa(); }
    ta.push_back(x); tb.push_back(y); ratio.push_back(y / x);
  }
  auto med = [](std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; };
  std::mt19937_64 g(1); std::vector<double> boots;
  for (int k = 0; k < 2000; ++k) { std::vector<double> s; for (std::size_t i = 0; i < ratio.size(); ++i) s.push_back(ratio[g() % ratio.size()]); boots.push_back(med(s)); }
  std::sort(boots.begin(), boots.end());
  std::printf("%s: old median %.1f min %.1f | new median %.1f min %.1f | new/old median %.3f [%.3f, %.3f] (sink %lu)\n",
              use_all ? "all" : "serial", med(ta), *std::min_element(ta.begin(), ta.end()), med(tb),
              *std::min_element(tb.begin(), tb.end()), med(ratio), boots[50], boots[1949], sink & 1);
}
