// Chat-template rendering cost: a 50-turn conversation (100 messages, ~60-byte contents plus a
// tool list) rendered with real templates, as the server renders every request.
//
//   template_bench [--iters N] [TEMPLATE.jinja ...]
//
// Without arguments it uses the Qwen3, Llama 3.1 and Mistral Nemo templates from
// $HEARTH_SHARED_DIR (default ../shared)/templates, plus the built-in ChatML fallback. Reports
// parse time and, per render, the best and median over --iters runs of this thread's CPU time
// (robust to other load on the shared machine), with the prompt size.
#include <fmt/format.h>

#include <time.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "chat/chat_formatter.h"
#include "chat/template.h"

namespace {

using json = nlohmann::ordered_json;

double cpu_us() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

json conversation(int turns) {
  json msgs = json::array();
  msgs.push_back({{"role", "system"}, {"content", "You are a helpful assistant."}});
  for (int i = 0; i < turns; ++i) {
    msgs.push_back(
        {{"role", "user"},
         {"content", fmt::format("Question {}: what is {} times {}, and why?", i, i, i + 7)}});
    msgs.push_back({{"role", "assistant"},
                    {"content", fmt::format("{} times {} is {}, because multiplication adds {} "
                                            "copies of {}.",
                                            i, i + 7, i * (i + 7), i, i + 7)}});
  }
  msgs.push_back({{"role", "user"}, {"content", "Thanks, one more please."}});
  return msgs;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

void bench(const std::string& name, const std::string& source, int iters) {
  using namespace hearth::chat;
  const double p0 = cpu_us();
  ChatFormatter f(source.empty() ? std::nullopt : std::optional<std::string>(source), "<s>",
                  "</s>");
  const double parse_us = cpu_us() - p0;
  const json msgs = conversation(50);
  const json tools = json::parse(R"([{"type": "function", "function": {"name": "get_weather",
      "description": "Get the weather.", "parameters": {"type": "object", "properties":
      {"city": {"type": "string"}}, "required": ["city"]}}}])");
  std::vector<double> times;
  size_t bytes = 0;
  for (int i = 0; i < iters; ++i) {
    const double t0 = cpu_us();
    const Rendered r = f.format(msgs, i % 2 ? tools : json(nullptr), true);
    times.push_back(cpu_us() - t0);
    bytes = r.text.size();
  }
  std::sort(times.begin(), times.end());
  fmt::print(
      "{:<40} parse {:7.1f} us | 50-turn render best {:7.1f} us, median {:7.1f} us | {} "
      "bytes\n",
      name, parse_us, times.front(), times[times.size() / 2], bytes);
}

}  // namespace

int main(int argc, char** argv) {
  int iters = 200;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--iters" && i + 1 < argc) {
      iters = std::max(1, std::atoi(argv[++i]));
    } else {
      files.push_back(a);
    }
  }
  if (files.empty()) {
    const char* env = std::getenv("HEARTH_SHARED_DIR");
    const std::string dir =
        std::string(env && *env ? env : HEARTH_SHARED_DIR_DEFAULT) + "/templates/templates/";
    for (const char* n : {"Qwen-Qwen3-0.6B.jinja", "meta-llama-Llama-3.1-8B-Instruct.jinja",
                          "mistralai-Mistral-Nemo-Instruct-2407.jinja"})
      if (std::filesystem::exists(dir + n)) files.push_back(dir + n);
  }
  try {
    bench("ChatML (built-in fallback)", "", iters);
    for (const auto& f : files)
      bench(std::filesystem::path(f).filename().string(), read_file(f), iters);
  } catch (const std::exception& e) {
    fmt::print(stderr, "template_bench: {}\n", e.what());
    return 1;
  }
  return 0;
}
