#include "server/metrics.h"

#include <fmt/format.h>

#include <span>

#include "engine/request.h"
#include "server/metrics_gauges.h"

namespace hearth::server {

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double v) {
  size_t i = 0;
  while (i < bounds_.size() && v > bounds_[i]) ++i;
  ++counts_[i];
  sum_ += v;
  ++count_;
}

void Histogram::render(std::string& out, const std::string& name, const std::string& help) const {
  out += fmt::format("# HELP {} {}\n# TYPE {} histogram\n", name, help, name);
  uint64_t cum = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cum += counts_[i];
    out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, bounds_[i], cum);
  }
  cum += counts_.back();
  out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n{}_sum {}\n{}_count {}\n", name, cum, name, sum_,
                     name, count_);
}

Metrics::Metrics()
    : ttft_ms_({5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000}),
      token_ms_({1, 2.5, 5, 10, 20, 35, 50, 75, 100, 150, 250, 500, 1000}) {}

void Metrics::record(const RequestStats& s, FinishReason reason) {
  std::lock_guard lock(mu_);
  ++requests_;
  prompt_tokens_ += static_cast<uint64_t>(s.prompt_tokens);
  cached_tokens_ += static_cast<uint64_t>(s.cached_tokens);
  prefilled_tokens_ += static_cast<uint64_t>(s.prefilled_tokens);
  generated_tokens_ += static_cast<uint64_t>(s.generated_tokens);
  preemptions_ += static_cast<uint64_t>(s.preemptions);
  draft_tokens_ += static_cast<uint64_t>(s.draft_tokens);
  draft_accepted_ += static_cast<uint64_t>(s.draft_accepted);
  if (reason == FinishReason::Cancelled) ++cancelled_;
  if (s.generated_tokens > 0) ttft_ms_.observe(s.ttft_ms);
  if (s.generated_tokens > 1)
    token_ms_.observe(s.decode_ms / static_cast<double>(s.generated_tokens - 1));
}

void Metrics::record_http_error(int status) {
  std::lock_guard lock(mu_);
  if (status >= 500)
    ++errors_5xx_;
  else if (status >= 400)
    ++errors_4xx_;
}

namespace {

constexpr const char* kCounter = "counter";
constexpr const char* kGauge = "gauge";

// One plain sample, with the HELP and TYPE lines Prometheus expects before it.
struct Sample {
  const char* name;
  const char* type;
  const char* help;
  double value;
};

void append(std::string& out, std::span<const Sample> samples) {
  for (const Sample& s : samples)
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n{} {}\n", s.name, s.help, s.name, s.type,
                       s.name, s.value);
}

template <typename T>
double num(T v) {
  return static_cast<double>(v);
}

// part / whole, 0 before there is a whole (a fresh server).
double ratio(double part, double whole) {
  return whole != 0 ? part / whole : 0.0;
}

// Scheduler, next-turn warming and HTTP load.
void append_load(std::string& out, const MetricsGauges& g) {
  const EngineMetrics& e = g.engine;
  const Sample rows[] = {
      {"hearth_requests_running", kGauge, "Sequences in the engine's running set.", num(e.running)},
      {"hearth_requests_queued", kGauge, "Sequences waiting to be scheduled.", num(e.queued)},
      {"hearth_warm_requests", kGauge,
       "Next-turn warming requests running or waiting (background work).", num(e.warming)},
      {"hearth_warm_tokens_total", kCounter,
       "Tokens computed ahead by next-turn warming (not in the prefill count).",
       num(e.warm_tokens)},
      {"hearth_warm_hit_tokens_total", kCounter,
       "Warmed tokens a later request found in the cache.", num(e.warm_hit_tokens)},
      {"hearth_warm_wasted_tokens_total", kCounter,
       "Warmed tokens no request used (recorded after the last 64 warm requests).",
       num(e.warm_wasted_tokens)},
      {"hearth_http_generations_active", kGauge, "Generation requests being served over HTTP.",
       num(g.http_requests_active)},
  };
  append(out, rows);
}

void append_kv_pool(std::string& out, const EngineMetrics& e) {
  const int64_t used = e.kv_blocks - e.kv_blocks_free;
  const Sample pool[] = {
      {"hearth_kv_blocks_total", kGauge, "KV pool blocks.", num(e.kv_blocks)},
      {"hearth_kv_blocks_used", kGauge, "KV pool blocks in use (cache included).", num(used)},
      {"hearth_kv_blocks_cache_only", kGauge,
       "KV blocks held only by the prefix cache (reclaimable).", num(e.kv_blocks_cache_only)},
      {"hearth_kv_pool_usage_ratio", kGauge, "Used / total KV blocks.",
       ratio(num(used), num(e.kv_blocks))},
  };
  append(out, pool);
  if (e.kv_window_blocks == 0) return;  // models with sliding-window layers: their own pool
  const Sample window_pool[] = {
      {"hearth_kv_window_blocks_total", kGauge, "Sliding-window KV blocks.",
       num(e.kv_window_blocks)},
      {"hearth_kv_window_blocks_used", kGauge, "Sliding-window KV blocks in use (cache included).",
       num(e.kv_window_blocks - e.kv_window_blocks_free)},
      {"hearth_kv_window_blocks_cache_only", kGauge,
       "Sliding-window KV blocks held only by the prefix cache (reclaimable).",
       num(e.kv_window_blocks_cache_only)},
  };
  append(out, window_pool);
}

void append_prefix_cache(std::string& out, const EngineMetrics& e) {
  const auto& c = e.cache;
  const Sample rows[] = {
      {"hearth_prefix_cache_lookups_total", kCounter, "Prefix cache lookups.", num(c.lookups)},
      {"hearth_prefix_cache_hit_tokens_total", kCounter,
       "Tokens served from the prefix cache (memory or disk).", num(c.hit_tokens)},
      {"hearth_prefix_cache_lookup_hit_ratio", kGauge, "Hit tokens / looked-up tokens since start.",
       ratio(num(c.hit_tokens), num(c.lookup_tokens))},
      {"hearth_prefix_cache_evictions_total", kCounter,
       "Blocks evicted from memory (to disk or dropped).", num(c.evictions)},
      {"hearth_prefix_cache_resident_blocks", kGauge, "Blocks held by the prefix cache.",
       num(c.resident_blocks)},
      {"hearth_prefix_cache_snapshots", kGauge,
       "Recurrent-state snapshots held by the prefix cache (hybrid models).", num(c.snapshots)},
      {"hearth_prefix_cache_snapshot_bytes", kGauge, "Memory of those snapshots.",
       num(c.snapshots) * num(e.state_slot_bytes)},
      {"hearth_prefix_cache_snapshot_hits_total", kCounter,
       "Prefix hits that resumed from a recurrent-state snapshot.", num(c.snapshot_hits)},
      {"hearth_prefix_cache_snapshot_evictions_total", kCounter,
       "Snapshots evicted to stay within their budget.", num(c.snapshot_evictions)},
      {"hearth_prefix_cache_cut_tokens_total", kCounter,
       "Matched tokens recomputed because no snapshot was at the end of the match.",
       num(c.cut_tokens)},
  };
  append(out, rows);
}

void append_disk_tier(std::string& out, const EngineMetrics& e) {
  const Sample rows[] = {
      {"hearth_disk_tier_bytes_written_total", kCounter, "KV bytes written to disk.",
       num(e.disk.bytes_written)},
      {"hearth_disk_tier_bytes_read_total", kCounter, "KV bytes read back from disk.",
       num(e.disk.bytes_read)},
      {"hearth_disk_tier_hit_tokens_total", kCounter, "Prefix tokens served from disk.",
       num(e.cache.disk_hit_tokens)},
      {"hearth_disk_tier_bytes", kGauge, "KV bytes on disk now.", num(e.disk.bytes)},
  };
  append(out, rows);
}

}  // namespace

void Metrics::append_request_counters(std::string& out) const {
  const Sample requests[] = {
      {"hearth_requests_total", kCounter, "Generation requests finished.", num(requests_)},
      {"hearth_requests_cancelled_total", kCounter,
       "Generation requests cancelled (client gone or shutdown).", num(cancelled_)},
  };
  append(out, requests);
  out += fmt::format(
      "# HELP hearth_http_errors_total Error replies by status class.\n"
      "# TYPE hearth_http_errors_total counter\n"
      "hearth_http_errors_total{{class=\"4xx\"}} {}\nhearth_http_errors_total{{class=\"5xx\"}} "
      "{}\n",
      errors_4xx_, errors_5xx_);
  const Sample tokens[] = {
      {"hearth_prompt_tokens_total", kCounter, "Prompt tokens of finished requests.",
       num(prompt_tokens_)},
      {"hearth_prompt_tokens_cached_total", kCounter,
       "Prompt tokens whose KV came from the prefix cache.", num(cached_tokens_)},
      {"hearth_prefill_tokens_total", kCounter,
       "Tokens computed in prefill (recomputation after preemption included).",
       num(prefilled_tokens_)},
      {"hearth_generated_tokens_total", kCounter, "Generated tokens.", num(generated_tokens_)},
      {"hearth_preemptions_total", kCounter, "Sequences preempted for KV space.",
       num(preemptions_)},
      {"hearth_draft_tokens_total", kCounter, "Speculative decoding: tokens drafted and verified.",
       num(draft_tokens_)},
      {"hearth_draft_accepted_total", kCounter,
       "Speculative decoding: drafted tokens the sampler chose.", num(draft_accepted_)},
      {"hearth_prefix_cache_hit_ratio", kGauge, "Cached prompt tokens / prompt tokens since start.",
       ratio(num(cached_tokens_), num(prompt_tokens_))},
  };
  append(out, tokens);
}

std::string Metrics::render(const MetricsGauges& g) const {
  std::lock_guard lock(mu_);
  std::string out;
  append_request_counters(out);
  ttft_ms_.render(out, "hearth_time_to_first_token_ms",
                  "Submit to first generated token, milliseconds.");
  token_ms_.render(out, "hearth_time_per_output_token_ms",
                   "Mean decode time per token after the first, milliseconds, per request.");
  append_load(out, g);
  append_kv_pool(out, g.engine);
  append_prefix_cache(out, g.engine);
  append_disk_tier(out, g.engine);
  return out;
}

}  // namespace hearth::server
