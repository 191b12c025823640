// `hearth template -m MODEL | --template FILE.jinja --context CONTEXT.json`: prints the prompt
// a chat template renders for a conversation, byte for byte (nothing appended), or the
// template's error (exit code 1). CONTEXT.json is shaped like ../shared/templates/cases.json's
// cases: messages, tools, documents, add_generation_prompt, bos_token, eos_token, kwargs. With
// -m, the template comes from the model's metadata and bos/eos from its vocabulary.
#include <cstdio>
#include <fstream>
#include <iterator>

#include "chat/chat_formatter.h"
#include "chat/template.h"
#include "cli/commands.h"
#include "gguf/reader.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace hearth::cli {
namespace {

using json = nlohmann::ordered_json;

struct TemplateOptions {
  std::string model;
  std::string template_file;
  std::string context_file;
  std::string now;  // YYYY-MM-DDTHH:MM:SS for strftime_now
  bool openai = false;
  bool show_ranges = false;
};

std::string read_all(const std::string& path, const char* what) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail("{}: cannot open {}", path, what);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

int run_template(const TemplateOptions& o) {
  if (o.model.empty() == o.template_file.empty())
    fail("give either -m MODEL or --template FILE.jinja");
  json ctx_in = json::object();
  if (!o.context_file.empty()) {
    ctx_in = json::parse(read_all(o.context_file, "context file"), nullptr, false);
    if (ctx_in.is_discarded() || !ctx_in.is_object())
      fail("{}: the context must be a JSON object", o.context_file);
  }
  std::optional<std::string> source;
  if (!o.model.empty()) {
    gguf::File file = gguf::File::open(o.model);
    source = file.get_string("tokenizer.chat_template");
    Tokenizer tok = Tokenizer::from_gguf(file);
    if (tok.bos() != kNoToken) ctx_in["bos_token"] = tok.token_to_piece(tok.bos(), true);
    if (tok.eos() != kNoToken) ctx_in["eos_token"] = tok.token_to_piece(tok.eos(), true);
  } else {
    source = read_all(o.template_file, "template");
  }

  chat::RenderOptions ropt;
  if (!o.now.empty()) {
    int y, mo, d, h, mi, s;
    if (std::sscanf(o.now.c_str(), "%d-%d-%dT%d:%d:%d", &y, &mo, &d, &h, &mi, &s) != 6)
      fail("--now '{}': expected YYYY-MM-DDTHH:MM:SS", o.now);
    ropt.clock = chat::fixed_clock(y, mo, d, h, mi, s);
  }
  const json messages = ctx_in.value("messages", json::array());
  const json tools = ctx_in.value("tools", json(nullptr));
  const bool add_gen = ctx_in.value("add_generation_prompt", false);
  const json kwargs = ctx_in.value("kwargs", json(nullptr));

  chat::Rendered r;
  if (o.openai) {
    chat::ChatFormatter f(source, ctx_in.value("bos_token", ""), ctx_in.value("eos_token", ""));
    r = f.format(messages, tools, add_gen, kwargs, ropt);
  } else {
    // Exactly the variables transformers passes (see ../shared/templates/README.md).
    if (!source || source->empty()) fail("{}: the model has no tokenizer.chat_template", o.model);
    json ctx = json::object();
    ctx["messages"] = messages;
    ctx["tools"] = tools;
    ctx["documents"] = ctx_in.value("documents", json(nullptr));
    ctx["add_generation_prompt"] = add_gen;
    for (const char* k : {"bos_token", "eos_token"})
      if (ctx_in.contains(k)) ctx[k] = ctx_in[k];
    if (kwargs.is_object())
      for (const auto& [k, v] : kwargs.items()) ctx[k] = v;
    r = chat::Template::parse(*source).render(ctx, ropt);
  }
  std::fwrite(r.text.data(), 1, r.text.size(), stdout);
  std::fflush(stdout);
  if (o.show_ranges)
    for (const auto& [a, b] : r.special_ok) std::fprintf(stderr, "special_ok [%zu, %zu)\n", a, b);
  return 0;
}

}  // namespace

void add_template(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<TemplateOptions>();
  CLI::App* cmd = app.add_subcommand("template", "Render a chat template for a conversation");
  cmd->add_option("-m,--model", o->model, "GGUF model (template and bos/eos from its metadata)");
  cmd->add_option("--template", o->template_file, "Jinja template file");
  cmd->add_option("--context", o->context_file,
                  "JSON: messages, tools, documents, add_generation_prompt, bos_token, "
                  "eos_token, kwargs");
  cmd->add_option("--now", o->now, "Fixed time for strftime_now (YYYY-MM-DDTHH:MM:SS)");
  cmd->add_flag("--openai", o->openai,
                "Normalise OpenAI messages first (as the server does; ChatML without template)");
  cmd->add_flag("--ranges", o->show_ranges,
                "Print the byte ranges where special tokens may be parsed to stderr");
  cmd->callback([&ctx, o] { ctx.exit_code = run_template(*o); });
}

}  // namespace hearth::cli
