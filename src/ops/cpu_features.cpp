#include "ops/cpu_features.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace hearth::ops {
namespace {

CpuFeatures detect() {
  CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(1, &a, &b, &c, &d)) {
    f.fma = (c >> 12) & 1;
    f.f16c = (c >> 29) & 1;
    const bool osxsave = (c >> 27) & 1;
    unsigned long long xcr0 = 0;
    if (osxsave) {
      unsigned lo, hi;
      __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
      xcr0 = (static_cast<unsigned long long>(hi) << 32) | lo;
    }
    const bool ymm = (xcr0 & 0x6) == 0x6, zmm = (xcr0 & 0xe6) == 0xe6;
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
      f.avx2 = ymm && ((b >> 5) & 1);
      f.avx512f = zmm && ((b >> 16) & 1);
      f.avx512bw = zmm && ((b >> 30) & 1);
      f.avx512vl = zmm && ((b >> 31) & 1);
      f.avx512vnni = zmm && ((c >> 11) & 1);
    }
    if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) f.avxvnni = ymm && ((a >> 4) & 1);
    if (!ymm) f.fma = f.f16c = false;
  }
#endif
  return f;
}

bool evex_vnni(const CpuFeatures& f) {
  return f.avx512f && f.avx512bw && f.avx512vl && f.avx512vnni;
}

// The highest level the CPU runs, and no higher than `want`.
SimdLevel clamp(SimdLevel want) {
  const CpuFeatures& f = cpu_features();
  SimdLevel l = SimdLevel::Scalar;
  if (f.avx2 && f.fma && f.f16c)
    l = f.avxvnni || evex_vnni(f) ? SimdLevel::Avx2Vnni : SimdLevel::Avx2;
  return std::min(l, want);
}

std::atomic<int> g_evex{-1};

bool env_is(const char* name, const char* value) {
  const char* env = std::getenv(name);
  return env != nullptr && std::strcmp(env, value) == 0;
}

bool default_evex() {
  const CpuFeatures& f = cpu_features();
  if (!evex_vnni(f)) return false;
  if (!f.avxvnni) return true;
  // Both: the AVX-512 kernels, unless HEARTH_VNNI=vex or HEARTH_SIMD=avxvnni.
  return !env_is("HEARTH_VNNI", "vex") && !env_is("HEARTH_SIMD", "avxvnni");
}

// HEARTH_SIMD: scalar, avx2, avxvnni (the 256-bit VNNI build) or avx512 (the AVX-512 build),
// each clamped to what the CPU runs; anything else is reported once and ignored.
SimdLevel best_level() {
  SimdLevel want = SimdLevel::Avx2Vnni;
  if (const char* env = std::getenv("HEARTH_SIMD")) {
    if (std::strcmp(env, "scalar") == 0) {
      want = SimdLevel::Scalar;
    } else if (std::strcmp(env, "avx2") == 0) {
      want = SimdLevel::Avx2;
    } else if (std::strcmp(env, "avxvnni") != 0 && std::strcmp(env, "avx512") != 0) {
      std::fprintf(stderr,
                   "hearth: HEARTH_SIMD=%s is not one of scalar, avx2, avxvnni, avx512; using "
                   "the best level this CPU runs\n",
                   env);
    }
  }
  return clamp(want);
}

std::atomic<int> g_level{-1};

}  // namespace

std::string CpuFeatures::summary() const {
  std::string s;
  auto add = [&](bool on, const char* name) {
    if (!on) return;
    if (!s.empty()) s.push_back(' ');
    s.append(name);
  };
  add(avx2, "avx2");
  add(fma, "fma");
  add(f16c, "f16c");
  add(avx512f, "avx512f");
  add(avx512bw, "avx512bw");
  add(avx512vl, "avx512vl");
  add(avx512vnni, "avx512vnni");
  add(avxvnni, "avxvnni");
  return s.empty() ? "none" : s;
}

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = detect();
  return f;
}

SimdLevel simd_level() {
  int l = g_level.load(std::memory_order_relaxed);
  if (l < 0) {
    l = static_cast<int>(best_level());
    g_level.store(l, std::memory_order_relaxed);
  }
  return static_cast<SimdLevel>(l);
}

bool vnni_evex() {
  int e = g_evex.load(std::memory_order_relaxed);
  if (e < 0) {
    e = default_evex() ? 1 : 0;
    g_evex.store(e, std::memory_order_relaxed);
  }
  return e == 1;
}

void set_vnni_evex(bool evex) {
  const CpuFeatures& f = cpu_features();
  if (f.avxvnni && evex_vnni(f)) g_evex.store(evex ? 1 : 0, std::memory_order_relaxed);
}

void set_simd_level(SimdLevel level) {
  g_level.store(static_cast<int>(clamp(level)), std::memory_order_relaxed);
}

const char* simd_level_name(SimdLevel level) {
  switch (level) {
    case SimdLevel::Avx2Vnni:
      return vnni_evex() ? "avx2+avx512vnni" : "avx2+vnni";
    case SimdLevel::Avx2:
      return "avx2";
    default:
      return "scalar";
  }
}

}  // namespace hearth::ops
