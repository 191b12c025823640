#include "tools/membw.h"

#include <gtest/gtest.h>

#include <cmath>

namespace hearth::tools {
namespace {

// Like the compute probe's test: the rate depends on the machine (and sanitizers), so only that
// a figure was measured is checked, on a buffer small enough for the test to be quick.
TEST(ReadBandwidthProbe, MeasuresAgainAndAgainOnTheSameBuffer) {
  for (int threads : {1, 2}) {
    ops::ThreadPool pool(threads);
    ReadBandwidthProbe probe(pool, size_t{8} << 20);
    for (int i = 0; i < 3; ++i) {  // each reading beside a timed run, as hearth bench takes it
      const double bw = probe.measure(1);
      EXPECT_GT(bw, 0);
      EXPECT_TRUE(std::isfinite(bw));
    }
  }
}

TEST(ReadBandwidthProbe, OneShotFormIsTheSameMeasurement) {
  ops::ThreadPool pool(2);
  const double bw = measure_read_bandwidth(pool, size_t{8} << 20, 2);
  EXPECT_GT(bw, 0);
  EXPECT_TRUE(std::isfinite(bw));
}

TEST(ReadBandwidthProbe, ABufferSmallerThanOneWordIsAnError) {
  ops::ThreadPool pool(1);
  EXPECT_ANY_THROW(ReadBandwidthProbe(pool, 4));
}

}  // namespace
}  // namespace hearth::tools
