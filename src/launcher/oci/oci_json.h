// JSON as the runtime writes it: bytes a bundle gave that are not UTF-8
// (an annotation, an argument) are replaced, never thrown over.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace flatux::launcher {

inline std::string oci_json_text(const nlohmann::json& j, int indent = -1) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace flatux::launcher
