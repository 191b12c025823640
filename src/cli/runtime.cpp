#include "cli/runtime.h"

#include <algorithm>

namespace hearth::cli {

Runtime::Runtime(const std::string& path, int threads) {
  load(path);
  tokenizer();
  pool_ = std::make_unique<ops::ThreadPool>(threads);
}

Runtime::Runtime(int threads) : pool_(std::make_unique<ops::ThreadPool>(threads)) {}

void Runtime::load(const std::string& path) {
  engine_.reset();
  tokenizer_.reset();
  model_ = Model::load(path);
}

const Tokenizer& Runtime::tokenizer() {
  if (!tokenizer_) tokenizer_ = std::make_unique<Tokenizer>(Tokenizer::from_gguf(model_->file()));
  return *tokenizer_;
}

int64_t Runtime::context(int64_t requested) const {
  return requested > 0 ? requested : std::min<int64_t>(hparams().n_ctx_train, 4096);
}

void Runtime::load_draft(const std::string& path) {
  draft_ = Model::load(path);
}

Engine& Runtime::make_engine(const EngineOptions& options) {
  engine_.reset();
  EngineOptions o = options;
  if (draft_) o.draft_model = draft_.get();
  engine_ = std::make_unique<Engine>(*model_, tokenizer(), o, *pool_);
  return *engine_;
}

}  // namespace hearth::cli
