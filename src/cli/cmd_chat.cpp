// `hearth chat -m MODEL`: an interactive conversation on stdin/stdout with the model's own chat
// template. Each line read is a user turn; the whole conversation is rendered, generated from,
// the reply printed (reasoning to stderr) and appended as an assistant message, until EOF.
#include <iostream>
#include <random>
#include <string>

#include "chat/chat_formatter.h"
#include "chat/prompt.h"
#include "chat/reply_stream.h"
#include "cli/commands.h"
#include "cli/runtime.h"
#include "util/error.h"

namespace hearth::cli {
namespace {

using json = nlohmann::ordered_json;

struct ChatOptions {
  std::string model;
  std::string system;
  std::string kwargs;
  int64_t n_predict = 512;
  float temperature = 0.7f;
  int64_t seed = -1;
  int64_t n_ctx = 0;
  int threads = 2;
};

void write_out(std::FILE* f, const std::string& s) {
  if (s.empty()) return;
  std::fwrite(s.data(), 1, s.size(), f);
  std::fflush(f);
}

int run_chat(const ChatOptions& o) {
  Runtime rt(o.model, o.threads);
  const Tokenizer& tok = rt.tokenizer();
  const std::string bos = tok.bos() != kNoToken ? tok.token_to_piece(tok.bos(), true) : "";
  const std::string eos = tok.eos() != kNoToken ? tok.token_to_piece(tok.eos(), true) : "";
  chat::ChatFormatter formatter(rt.model().file().get_string("tokenizer.chat_template"), bos, eos);
  const chat::PromptBuilder prompts(formatter, tok);
  chat::PromptInput in;
  if (!o.kwargs.empty()) {
    in.kwargs = json::parse(o.kwargs, nullptr, false);
    if (in.kwargs.is_discarded() || !in.kwargs.is_object())
      fail("--kwargs '{}': expected a JSON object", o.kwargs);
  }

  const int64_t n_ctx = rt.context(o.n_ctx);
  EngineOptions eo;
  eo.max_running = 1;
  eo.max_seq_tokens = n_ctx;
  Engine& engine = rt.make_engine(eo);
  uint64_t seed = o.seed >= 0 ? static_cast<uint64_t>(o.seed) : std::random_device{}();

  json& messages = in.messages;
  if (!o.system.empty()) messages.push_back({{"role", "system"}, {"content", o.system}});
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    messages.push_back({{"role", "user"}, {"content", line}});
    chat::ChatPrompt prompt = prompts.render(in);
    GenerationRequest req;
    req.prompt_text = std::move(prompt.text);
    req.context_limit = n_ctx;  // the prompt and one generated token must fit
    req.temperature = o.temperature;
    req.seed = seed++;
    req.max_tokens = o.n_predict;
    chat::ReplyStream reply(formatter.reasoning_splitter(prompt.rendered));
    std::string error;
    req.on_event = [&](const EngineEvent& e) {
      const chat::ReasoningDelta d = reply.push(e.text, e.kind == EngineEvent::Kind::Finished);
      write_out(stderr, d.reasoning);
      write_out(stdout, d.content);
      if (e.kind == EngineEvent::Kind::Finished &&
          (e.reason == FinishReason::Error || e.reason == FinishReason::GrammarFailed ||
           e.reason == FinishReason::PoolFull))
        error = e.error;
    };
    SubmitResult r = engine.submit(std::move(req));
    if (r.context_exceeded)
      fail("the conversation has {} tokens, more than the context of {} (use -c)", r.prompt_tokens,
           n_ctx);
    if (!r.ok()) fail("{}", r.error);
    engine.run_until_idle();
    if (!error.empty()) fail("generation failed: {}", error);
    write_out(stdout, "\n");
    json message = {{"role", "assistant"}, {"content", reply.content()}};
    if (!reply.reasoning().empty()) message["reasoning_content"] = reply.reasoning();
    messages.push_back(std::move(message));
  }
  return 0;
}

}  // namespace

void add_chat(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<ChatOptions>();
  CLI::App* cmd = app.add_subcommand(
      "chat", "Chat on stdin/stdout with the model's own chat template (one line per turn)");
  cmd->add_option("-m,--model", o->model, "GGUF model file")->required();
  cmd->add_option("--system", o->system, "System prompt");
  cmd->add_option("--kwargs", o->kwargs,
                  "Extra template variables as JSON, e.g. '{\"enable_thinking\": false}'");
  cmd->add_option("-n,--n-predict", o->n_predict, "Tokens per reply at most")
      ->capture_default_str();
  cmd->add_option("--temp", o->temperature, "Temperature (0 = greedy)")->capture_default_str();
  cmd->add_option("--seed", o->seed, "Random seed (-1 = random)")->capture_default_str();
  cmd->add_option("-c,--ctx", o->n_ctx, "Context size (default: min(training context, 4096))");
  cmd->add_option("-t,--threads", o->threads, "Threads")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  cmd->callback([&ctx, o] { ctx.exit_code = run_chat(*o); });
}

}  // namespace hearth::cli
