// The web chat page: GET /, /index.html and /assets/<file> answered from the files embedded at
// build time (webui_assets.h), gzip when the client takes it, under a Content-Security-Policy
// that lets the page run its own script and talk to this server only. The page needs no API
// key (it is what asks the user for one); the API it calls still does.
#pragma once

#include <httplib.h>

#include <span>
#include <string_view>

#include "server/webui_assets.h"

namespace hearth::server {

// Whether `path` is one of the page's: "/", "/index.html" or under "/assets/".
bool is_webui_path(std::string_view path);

// The asset served at `path` ("/index.html" is the page, "/"), or nullptr.
const WebAsset* find_web_asset(std::span<const WebAsset> assets, std::string_view path);

// Whether an Accept-Encoding value takes gzip ("gzip" or "*" listed with a q above 0).
bool accepts_gzip(std::string_view accept_encoding);

// Replies 200 with the asset (its gzip bytes when the request takes them) and the page's
// security and caching headers.
void send_web_asset(const WebAsset& asset, const httplib::Request& req, httplib::Response& res);

}  // namespace hearth::server
