// The dashboard's static files (static/), built into the binary by embed_assets.cmake:
// no Node at build or run time, nothing read from disk when serving.
#pragma once

#include <string_view>

namespace baton::web {

struct Asset {
  std::string_view path;  // "/index.html", "/app.js"
  std::string_view type;  // its Content-Type
  std::string_view body;
};

// The file at `path` ("/app.js"); nullptr for none.
const Asset* FindAsset(std::string_view path);

}  // namespace baton::web
