// GET /props, as llama-server answers it: the model served, its context and chat template, the
// sampler settings a request starts from, and what this binary is (build_info, web chat).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "sampling/params.h"
#include "server/server.h"

namespace hearth::server {

struct PropsInput {
  const ModelInfo& model;
  std::string chat_template;  // the template in use (ChatML when the model has none)
  int total_slots = 0;        // sequences decoded together (--parallel)
  SamplerParams defaults;     // what a request's sampler fields are read over
  bool webui = false;         // the page is served at /
};

nlohmann::json props_json(const PropsInput& in);

// "hearth <version> (<git describe>)", or without the parentheses when not built from a checkout.
std::string build_info();

}  // namespace hearth::server
