// What GET /metrics reads at scrape time (running/queued, KV pool, prefix cache, disk tier),
// apart from server/metrics.h so that the registry does not pull in the engine's headers.
#pragma once

#include <cstdint>

#include "engine/engine.h"

namespace hearth::server {

struct MetricsGauges {
  EngineMetrics engine;              // running/queued, KV pool, prefix cache, disk tier
  int64_t http_requests_active = 0;  // generation requests the server is serving
};

}  // namespace hearth::server
