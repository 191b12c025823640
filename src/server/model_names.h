// Which served model a request's "model" field names.
//
// With one model served, any name (or none) means it, as llama-server does: clients send
// whatever their configuration holds ("gpt-4o-mini", "default"), and refusing them gains
// nothing. With several, the name must be one of theirs (id or alias), else 404.
#pragma once

#include <string>
#include <vector>

#include "server/server.h"

namespace hearth::server {

// Throws ApiError 404 model_not_found; `served` must not be empty.
const ModelInfo& resolve_model(const std::string& name,
                               const std::vector<const ModelInfo*>& served);

}  // namespace hearth::server
