// The server's metrics registry, rendered as Prometheus text (GET /metrics). Counters and
// histograms are updated by handler threads when a request finishes; gauges (running/queued,
// KV pool) are read at scrape time and passed in (server/metrics_gauges.h).
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace hearth {
struct RequestStats;
enum class FinishReason;
}  // namespace hearth

namespace hearth::server {

struct MetricsGauges;

// A cumulative Prometheus histogram with fixed upper bounds (+Inf implied).
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double v);
  // Appends the _bucket/_sum/_count lines for `name` (HELP/TYPE included).
  void render(std::string& out, const std::string& name, const std::string& help) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket, not cumulative; last = above every bound
  double sum_ = 0;
  uint64_t count_ = 0;
};

class Metrics {
 public:
  Metrics();
  // One finished generation request.
  void record(const RequestStats& stats, FinishReason reason);
  void record_http_error(int status);
  std::string render(const MetricsGauges& g) const;

 private:
  // The counters' samples, in /metrics order; mu_ is held.
  void append_request_counters(std::string& out) const;

  mutable std::mutex mu_;
  uint64_t requests_ = 0;
  uint64_t prompt_tokens_ = 0;
  uint64_t cached_tokens_ = 0;
  uint64_t prefilled_tokens_ = 0;
  uint64_t generated_tokens_ = 0;
  uint64_t cancelled_ = 0;
  uint64_t preemptions_ = 0;
  uint64_t draft_tokens_ = 0, draft_accepted_ = 0;
  uint64_t errors_4xx_ = 0;
  uint64_t errors_5xx_ = 0;
  Histogram ttft_ms_;
  Histogram token_ms_;
};

}  // namespace hearth::server
