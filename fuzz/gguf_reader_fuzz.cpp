// libFuzzer target for the GGUF reader. Any input must either parse or throw hearth::Error
// whose message starts with the file name. A parsed file must also survive a round trip:
// Writer re-encodes it and the re-encoded image parses to the same metadata and tensors. Its
// hyperparameters are then read as the model loader reads them (every architecture's keys,
// per-layer arrays, layer kinds) and every tensor the architecture expects is looked up.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "gguf/reader.h"
#include "gguf/value.h"
#include "gguf/writer.h"
#include "model/hparams.h"
#include "model/tensor_names.h"
#include "util/error.h"

namespace {

using hearth::Error;
using namespace hearth::gguf;

[[noreturn]] void die(const char* what, const std::string& detail) {
  std::fprintf(stderr, "gguf_reader_fuzz: %s: %s\n", what, detail.c_str());
  std::abort();
}

// Reads what a consumer would read, so the sanitizers see any bad pointer or value.
size_t touch(const File& f) {
  size_t h = f.version() + f.alignment() + f.data_offset();
  for (const KeyValue& kv : f.metadata()) {
    h += kv.key.size() + kv.value.to_display().size() + kv.value.array_size();
    try {
      h += static_cast<size_t>(f.get_int(kv.key).value_or(0));
    } catch (const Error& e) {
      if (std::string(e.what()).rfind(f.name() + ": ", 0) != 0) die("bad getter error", e.what());
    }
    try {
      h += static_cast<size_t>(f.get_float(kv.key).value_or(0) != 0);
      h += f.get_string(kv.key).value_or("").size();
    } catch (const Error&) {
    }
  }
  for (const TensorInfo& t : f.tensors()) {
    h += t.shape_string().size() + static_cast<size_t>(t.n_elements() + t.n_rows());
    if (f.find_tensor(t.name) != &t) die("find_tensor", t.name);
    if (t.nbytes > 0) h += t.data[0] + t.data[t.nbytes - 1];
  }
  return h;
}

void round_trip(const File& f) {
  Writer w;
  try {
    for (const KeyValue& kv : f.metadata()) w.set(kv.key, kv.value);
    for (const TensorInfo& t : f.tensors()) {
      std::vector<int64_t> ne(t.ne.begin(), t.ne.begin() + t.n_dims);
      w.add_tensor(t.name, t.type, ne, std::vector<uint8_t>(t.data, t.data + t.nbytes));
    }
  } catch (const Error& e) {
    // The only rule the writer adds over the reader: llama.cpp's tensor name limit.
    for (const TensorInfo& t : f.tensors())
      if (t.name.size() > Writer::kMaxTensorName) return;
    die("writer rejected a parsed file", e.what());
  }
  const std::vector<uint8_t> bytes = w.to_bytes();
  try {
    const File g = File::parse(bytes.data(), bytes.size(), "roundtrip.gguf");
    if (g.metadata().size() != f.metadata().size()) die("round trip", "metadata count");
    for (size_t k = 0; k < f.metadata().size(); ++k)
      if (g.metadata()[k].key != f.metadata()[k].key ||
          !(g.metadata()[k].value == f.metadata()[k].value))
        die("round trip changed a value", f.metadata()[k].key);
    if (g.alignment() != f.alignment()) die("round trip", "alignment");
    if (g.tensors().size() != f.tensors().size()) die("round trip", "tensor count");
    for (size_t k = 0; k < f.tensors().size(); ++k) {
      const TensorInfo& a = f.tensors()[k];
      const TensorInfo& b = g.tensors()[k];
      if (a.name != b.name || a.type != b.type || a.ne != b.ne || a.n_dims != b.n_dims ||
          a.nbytes != b.nbytes || (a.nbytes > 0 && std::memcmp(a.data, b.data, a.nbytes) != 0))
        die("round trip changed a tensor", a.name);
    }
  } catch (const Error& e) {
    die("re-encoded file does not parse", e.what());
  }
}

}  // namespace

// The loader's first steps: hyperparameters (an Error naming the file for anything it cannot
// run) and the tensor list they imply.
void read_hparams(const File& f) {
  const hearth::HParams hp = hearth::HParams::from_gguf(f);
  size_t found = 0;
  for (const hearth::TensorSpec& t : hearth::tensor_specs(hp))
    found += f.find_tensor(t.name) != nullptr ? 1 : 0;
  if (hp.recurrent_state_floats() < 0 || hp.n_kv_layers() > hp.n_layer)
    die("hparams", hp.summary() + " (" + std::to_string(found) + " tensors found)");
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string kName = "fuzz.gguf";
  try {
    const File f = File::parse(data, size, kName);
    (void)touch(f);
    round_trip(f);
    read_hparams(f);
  } catch (const Error& e) {
    if (std::string(e.what()).rfind(kName + ": ", 0) != 0)
      die("error without the file name", e.what());
  }
  return 0;
}
