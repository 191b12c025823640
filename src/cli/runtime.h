// What the subcommands that generate (`run`, `chat`, `bench`, `serve`) load, once and in this
// order: the model, its tokenizer, the thread pool, and an engine over the three when asked.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "engine/engine.h"
#include "model/weights.h"
#include "ops/thread_pool.h"
#include "tokenizer/tokenizer.h"

namespace hearth::cli {

class Runtime {
 public:
  // The model at `path` and its tokenizer, then a pool of `threads`.
  Runtime(const std::string& path, int threads);
  // The pool alone (`bench` measures the machine before it loads a model); see load().
  explicit Runtime(int threads);

  // Loads the model at `path`; its tokenizer is read on the first call of tokenizer().
  void load(const std::string& path);

  // A draft model for speculative decoding (engine/draft_model.h); make_engine passes it on.
  void load_draft(const std::string& path);

  const Model& model() const { return *model_; }
  const HParams& hparams() const { return model_->hparams(); }
  const Tokenizer& tokenizer();
  ops::ThreadPool& pool() { return *pool_; }

  // The context per sequence: `requested` when > 0, else the training context, at most 4096.
  int64_t context(int64_t requested) const;

  // An engine over the model, tokenizer and pool, not started (any earlier one is destroyed
  // first, so two never hold KV memory at once).
  Engine& make_engine(const EngineOptions& options);
  Engine& engine() { return *engine_; }

 private:
  // Declared in the order of loading: destroyed engine first, model last.
  std::unique_ptr<Model> model_;
  std::unique_ptr<Model> draft_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<ops::ThreadPool> pool_;
  std::unique_ptr<Engine> engine_;
};

}  // namespace hearth::cli
