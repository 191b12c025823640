// The web chat page's files, embedded at build time (cmake/webui.cmake runs webui/build.sh and
// cmake/embed_webui.cmake generates the definition of webui_assets() in the build folder).
#pragma once

#include <span>
#include <string_view>

namespace hearth::server {

struct WebAsset {
  std::string_view path;  // served at: "/" (the page), "/assets/app.js", "/assets/app.css"
  std::string_view mime;  // Content-Type
  std::span<const unsigned char> plain, gzip;
};

// Every embedded file; empty when the binary was built without the page (no node/npm, or
// HEARTH_WEBUI=OFF).
std::span<const WebAsset> webui_assets();

}  // namespace hearth::server
