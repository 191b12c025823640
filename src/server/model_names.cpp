#include "server/model_names.h"

#include <fmt/format.h>

#include "server/api_error.h"

namespace hearth::server {

const ModelInfo& resolve_model(const std::string& name,
                               const std::vector<const ModelInfo*>& served) {
  if (served.size() == 1) return *served.front();
  std::string ids;
  for (const ModelInfo* m : served) {
    if (name == m->id) return *m;
    for (const std::string& a : m->aliases)
      if (name == a) return *m;
    ids += (ids.empty() ? "'" : ", '") + m->id + "'";
  }
  throw ApiError(404,
                 fmt::format("The model '{}' does not exist (this server serves {})", name, ids),
                 "invalid_request_error", "model", "model_not_found");
}

}  // namespace hearth::server
