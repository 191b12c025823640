// The `hearth` binary end to end: run (the known stories260K continuation), inspect, synth,
// and clear errors with a non-zero exit status.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "common/shared_data.h"

namespace hearth {
namespace {

struct Result {
  int status = -1;
  std::string out;  // stdout only (stderr goes to err)
  std::string err;
};

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

Result hearth(const std::string& args) {
  static int n = 0;
  const std::string err_path =
      std::filesystem::temp_directory_path() /
      ("hearth-cli-err-" + std::to_string(::getpid()) + "-" + std::to_string(n++));
  const std::string cmd =
      std::string(HEARTH_BINARY_DIR) + "/src/hearth " + args + " 2>" + quote(err_path);
  Result r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t k;
  while ((k = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, k);
  const int st = ::pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.err = test::read_file(err_path);
  std::filesystem::remove(err_path);
  return r;
}

TEST(Cli, RunPrintsKnownGreedyContinuation) {
  HEARTH_SHARED_OR_SKIP(model, "models/stories260K.gguf");
  HEARTH_SHARED_OR_SKIP(golden, "golden/stories260K/bos_only.json");
  const auto g = nlohmann::json::parse(test::read_file(golden));
  Result r = hearth("run -m " + quote(model) + " -p '' -n 64 --temp 0");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, g["generation"]["text"].get<std::string>());
  // And it is the start of the 120-token continuation the model README gives.
  EXPECT_EQ(r.out.rfind(" Once upon a time, there was a little girl named Lily. She loved to play "
                        "outside in the park.",
                        0),
            0u)
      << r.out;
  // The plain reference path prints the same text.
  Result ref = hearth("run -m " + quote(model) + " -p '' -n 64 --temp 0 --reference");
  ASSERT_EQ(ref.status, 0) << ref.err;
  EXPECT_EQ(ref.out, r.out);
}

TEST(Cli, RunWithPromptAndSeedIsReproducible) {
  HEARTH_SHARED_OR_SKIP(model, "models/stories260K.gguf");
  const std::string args =
      "run -m " + quote(model) + " -p 'Once upon a time' -n 24 --temp 0.9 --seed 7";
  Result a = hearth(args), b = hearth(args);
  ASSERT_EQ(a.status, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_FALSE(a.out.empty());
}

TEST(Cli, InspectShowsMetadataAndTensors) {
  HEARTH_SHARED_OR_SKIP(model, "models/stories260K.gguf");
  Result r = hearth("inspect " + quote(model));
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* want :
       {"version: 3", "general.architecture", "tokenizer.ggml.tokens", "token_embd.weight",
        "blk.4.ffn_down.weight", "tensors (48)", "arch=llama"})
    EXPECT_NE(r.out.find(want), std::string::npos) << want << "\n" << r.out;
}

TEST(Cli, SynthOutputLoadsInInspectAndRun) {
  HEARTH_SHARED_OR_SKIP(vocab, "models/stories260K.gguf");
  const std::string out = std::filesystem::temp_directory_path() /
                          ("hearth-cli-synth-" + std::to_string(::getpid()) + ".gguf");
  Result s =
      hearth("synth --arch qwen3 --n-embd 256 --head-dim 64 --n-ff 512 --type Q4_K --vocab " +
             quote(vocab) + " -o " + quote(out));
  ASSERT_EQ(s.status, 0) << s.err;
  Result i = hearth("inspect " + quote(out));
  EXPECT_EQ(i.status, 0) << i.err;
  EXPECT_NE(i.out.find("blk.0.attn_q_norm.weight"), std::string::npos);
  EXPECT_NE(i.out.find("Q4_K"), std::string::npos);
  Result r = hearth("run -m " + quote(out) + " -p 'hello' -n 8 --temp 0");
  EXPECT_EQ(r.status, 0) << r.err;
  std::filesystem::remove(out);
}

TEST(Cli, TokenizePrintsIds) {
  HEARTH_SHARED_OR_SKIP(model, "models/stories260K.gguf");
  Result r = hearth("tokenize -m " + quote(model) + " --ids 'Once upon a time'");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("1, 403, 407, 261, 378"), std::string::npos) << r.out;
  HEARTH_SHARED_OR_SKIP(qwen, "tokenizers/vocab-qwen3.gguf");
  Result s = hearth("tokenize -m " + quote(qwen) + " --ids --special '<|im_start|>user'");
  ASSERT_EQ(s.status, 0) << s.err;
  EXPECT_NE(s.out.find("151644"), std::string::npos) << s.out;
}

TEST(Cli, ErrorsAreClearAndNonZero) {
  Result r = hearth("run -m /nonexistent/model.gguf -p hi");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("/nonexistent/model.gguf"), std::string::npos) << r.err;
  Result v = hearth("inspect " + quote(HEARTH_BINARY_DIR "/CMakeCache.txt"));
  EXPECT_EQ(v.status, 1);
  EXPECT_NE(v.err.find("CMakeCache.txt"), std::string::npos) << v.err;
  Result u = hearth("frobnicate");
  EXPECT_NE(u.status, 0);
}

}  // namespace
}  // namespace hearth
