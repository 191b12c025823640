#include "server/metrics.h"

#include <fmt/format.h>

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
void metric(std::string& out, const char* name, const char* type, const char* help, double v) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n{} {}\n", name, help, name, type, name, v);
}
}  // namespace

std::string Metrics::render(const MetricsGauges& g) const {
  std::lock_guard lock(mu_);
  std::string out;
  auto d = [](auto v) { return static_cast<double>(v); };
  metric(out, "hearth_requests_total", "counter", "Generation requests finished.", d(requests_));
  metric(out, "hearth_requests_cancelled_total", "counter",
         "Generation requests cancelled (client gone or shutdown).", d(cancelled_));
  out += fmt::format(
      "# HELP hearth_http_errors_total Error replies by status class.\n"
      "# TYPE hearth_http_errors_total counter\n"
      "hearth_http_errors_total{{class=\"4xx\"}} {}\nhearth_http_errors_total{{class=\"5xx\"}} "
      "{}\n",
      errors_4xx_, errors_5xx_);
  metric(out, "hearth_prompt_tokens_total", "counter", "Prompt tokens of finished requests.",
         d(prompt_tokens_));
  metric(out, "hearth_prompt_tokens_cached_total", "counter",
         "Prompt tokens whose KV came from the prefix cache.", d(cached_tokens_));
  metric(out, "hearth_prefill_tokens_total", "counter",
         "Tokens computed in prefill (recomputation after preemption included).",
         d(prefilled_tokens_));
  metric(out, "hearth_generated_tokens_total", "counter", "Generated tokens.",
         d(generated_tokens_));
  metric(out, "hearth_preemptions_total", "counter", "Sequences preempted for KV space.",
         d(preemptions_));
  metric(out, "hearth_draft_tokens_total", "counter",
         "Speculative decoding: tokens drafted and verified.", d(draft_tokens_));
  metric(out, "hearth_draft_accepted_total", "counter",
         "Speculative decoding: drafted tokens the sampler chose.", d(draft_accepted_));
  metric(out, "hearth_prefix_cache_hit_ratio", "gauge",
         "Cached prompt tokens / prompt tokens since start.",
         prompt_tokens_ ? d(cached_tokens_) / d(prompt_tokens_) : 0.0);
  ttft_ms_.render(out, "hearth_time_to_first_token_ms",
                  "Submit to first generated token, milliseconds.");
  token_ms_.render(out, "hearth_time_per_output_token_ms",
                   "Mean decode time per token after the first, milliseconds, per request.");
  const EngineMetrics& e = g.engine;
  metric(out, "hearth_requests_running", "gauge", "Sequences in the engine's running set.",
         d(e.running));
  metric(out, "hearth_requests_queued", "gauge", "Sequences waiting to be scheduled.", d(e.queued));
  metric(out, "hearth_warm_requests", "gauge",
         "Next-turn warming requests running or waiting (background work).", d(e.warming));
  metric(out, "hearth_warm_tokens_total", "counter",
         "Tokens computed ahead by next-turn warming (not in the prefill count).",
         d(e.warm_tokens));
  metric(out, "hearth_warm_hit_tokens_total", "counter",
         "Warmed tokens a later request found in the cache.", d(e.warm_hit_tokens));
  metric(out, "hearth_warm_wasted_tokens_total", "counter",
         "Warmed tokens no request used (recorded after the last 64 warm requests).",
         d(e.warm_wasted_tokens));
  metric(out, "hearth_http_generations_active", "gauge",
         "Generation requests being served over HTTP.", d(g.http_requests_active));
  const int64_t used = e.kv_blocks - e.kv_blocks_free;
  metric(out, "hearth_kv_blocks_total", "gauge", "KV pool blocks.", d(e.kv_blocks));
  metric(out, "hearth_kv_blocks_used", "gauge", "KV pool blocks in use (cache included).", d(used));
  metric(out, "hearth_kv_blocks_cache_only", "gauge",
         "KV blocks held only by the prefix cache (reclaimable).", d(e.kv_blocks_cache_only));
  metric(out, "hearth_kv_pool_usage_ratio", "gauge", "Used / total KV blocks.",
         e.kv_blocks ? d(used) / d(e.kv_blocks) : 0.0);
  if (e.kv_window_blocks > 0) {  // models with sliding-window layers: their own pool
    metric(out, "hearth_kv_window_blocks_total", "gauge", "Sliding-window KV blocks.",
           d(e.kv_window_blocks));
    metric(out, "hearth_kv_window_blocks_used", "gauge",
           "Sliding-window KV blocks in use (cache included).",
           d(e.kv_window_blocks - e.kv_window_blocks_free));
    metric(out, "hearth_kv_window_blocks_cache_only", "gauge",
           "Sliding-window KV blocks held only by the prefix cache (reclaimable).",
           d(e.kv_window_blocks_cache_only));
  }
  metric(out, "hearth_prefix_cache_lookups_total", "counter", "Prefix cache lookups.",
         d(e.cache.lookups));
  metric(out, "hearth_prefix_cache_hit_tokens_total", "counter",
         "Tokens served from the prefix cache (memory or disk).", d(e.cache.hit_tokens));
  metric(out, "hearth_prefix_cache_lookup_hit_ratio", "gauge",
         "Hit tokens / looked-up tokens since start.",
         e.cache.lookup_tokens ? d(e.cache.hit_tokens) / d(e.cache.lookup_tokens) : 0.0);
  metric(out, "hearth_prefix_cache_evictions_total", "counter",
         "Blocks evicted from memory (to disk or dropped).", d(e.cache.evictions));
  metric(out, "hearth_prefix_cache_resident_blocks", "gauge", "Blocks held by the prefix cache.",
         d(e.cache.resident_blocks));
  metric(out, "hearth_prefix_cache_snapshots", "gauge",
         "Recurrent-state snapshots held by the prefix cache (hybrid models).",
         d(e.cache.snapshots));
  metric(out, "hearth_prefix_cache_snapshot_bytes", "gauge", "Memory of those snapshots.",
         d(e.cache.snapshots) * d(e.state_slot_bytes));
  metric(out, "hearth_prefix_cache_snapshot_hits_total", "counter",
         "Prefix hits that resumed from a recurrent-state snapshot.", d(e.cache.snapshot_hits));
  metric(out, "hearth_prefix_cache_snapshot_evictions_total", "counter",
         "Snapshots evicted to stay within their budget.", d(e.cache.snapshot_evictions));
  metric(out, "hearth_prefix_cache_cut_tokens_total", "counter",
         "Matched tokens recomputed because no snapshot was at the end of the match.",
         d(e.cache.cut_tokens));
  metric(out, "hearth_disk_tier_bytes_written_total", "counter", "KV bytes written to disk.",
         d(e.disk.bytes_written));
  metric(out, "hearth_disk_tier_bytes_read_total", "counter", "KV bytes read back from disk.",
         d(e.disk.bytes_read));
  metric(out, "hearth_disk_tier_hit_tokens_total", "counter", "Prefix tokens served from disk.",
         d(e.cache.disk_hit_tokens));
  metric(out, "hearth_disk_tier_bytes", "gauge", "KV bytes on disk now.", d(e.disk.bytes));
  return out;
}

}  // namespace hearth::server
