// `hearth pull`: GGUF files from Hugging Face (or any server with its URL layout) into the
// model directory. Downloads go to FILE.part and resume from it with a Range request; the
// size and, when the server gives one (X-Linked-Etag for LFS files), the SHA-256 are checked
// before the file is renamed into place.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace hearth::download {

// The small chat model `hearth serve` pulls when neither -m nor HEARTH_MODEL is given.
inline constexpr const char* kDefaultModelSpec =
    "Qwen/Qwen2.5-0.5B-Instruct-GGUF/qwen2.5-0.5b-instruct-q4_k_m.gguf";

struct PullSpec {
  std::string repo;  // owner/name
  std::string file;  // path in the repo; empty: pick a GGUF from the repo's listing
};

// "owner/name" or "owner/name/path/to/file.gguf". Throws hearth::Error when malformed.
PullSpec parse_pull_spec(const std::string& text);

struct PullOptions {
  std::string endpoint;   // default: $HF_ENDPOINT, else https://huggingface.co
  std::string model_dir;  // default: model_dir()
  std::string revision = "main";
  std::string token;          // default: $HF_TOKEN (sent as Bearer)
  std::string expect_sha256;  // checked in addition to the server's hash when set
  int connect_timeout_s = 5;
  // Progress: (bytes so far, total or 0). Default: a bar on stderr when it is a terminal.
  std::function<void(uint64_t, uint64_t)> progress;
};

// $HEARTH_MODEL_DIR, else $XDG_CACHE_HOME/hearth/models, else ~/.cache/hearth/models.
std::string model_dir();
// Where a pull of `spec` lands: model_dir/owner/name/file.
std::string local_path(const PullSpec& spec, const std::string& dir);

// Downloads (or finds already complete) and returns the local path. Throws hearth::Error with
// what failed (unreachable endpoint, HTTP status, size or hash mismatch).
std::string pull(const PullSpec& spec, PullOptions options = {});

// For `hearth serve` without -m: $HEARTH_MODEL, else kDefaultModelSpec pulled on first use;
// offline it fails fast with a message saying how to pass -m.
std::string default_model_path();

}  // namespace hearth::download
