// The bundle's hooks that run in the runtime's namespaces: prestart and
// createRuntime at create (the container made, its program not started),
// poststart after start, poststop at delete. Each gets the container's
// state on its standard input, as the runtime spec says.
#pragma once
#include <string>

#include "launcher/oci/oci_commands.h"
#include "launcher/oci/oci_spec.h"

namespace flatux::launcher {

// Runs spec's hooks of kind `when` in order; `state` is the JSON they
// read. False at the first that fails (exit status, signal, timeout),
// with *error saying which.
bool oci_run_hooks(const OciSpec& spec, const std::string& when, const std::string& state, std::string* error);

}  // namespace flatux::launcher
