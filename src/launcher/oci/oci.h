// flatux as an OCI runtime: runc's command line (create, start, state,
// kill, delete, run, list, ps, spec, features), each container one flatux
// kernel over the bundle's root (docs/ARCHITECTURE.md, "The OCI runtime").
#pragma once

namespace flatux::launcher {

// `flatux-oci [GLOBAL OPTIONS] COMMAND [OPTIONS] ARGS`.
int oci_main(int argc, char** argv);

}  // namespace flatux::launcher
