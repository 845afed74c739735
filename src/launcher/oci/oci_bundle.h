// From an OCI bundle to what `flatux run` is given: the root, the program,
// who runs it, the mounts and the network.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "launcher/oci/oci_spec.h"
#include "launcher/run_mode.h"

namespace flatux::launcher {

// Fills *o from spec (which must outlive o: o->identity points into it).
// Mount points the bundle's mounts need are made in its root, as runc
// makes them. What flatux leaves out of the spec, each with its reason,
// is added to *ignored. False with *error set when the bundle cannot run.
bool oci_bundle_to_run(const std::string& bundle, const OciSpec& spec, RunOptions* o,
                       std::vector<std::string>* ignored, std::string* error, bool systemd_cgroup = false);

// Opens `rel` below the directory `root` as if it were /: links in it
// (absolute ones too) resolve inside it. A descriptor, or -1 with errno.
long oci_open_in_root(int root, const std::string& rel, uint64_t flags);

// linux.cgroupsPath as a path in the cgroup hierarchy: a path as it is,
// or with --systemd-cgroup "slice:prefix:name" as systemd would place it
// ("machine-a.slice:libpod:ID" is /machine.slice/machine-a.slice/libpod-ID.scope).
std::string oci_cgroup_path(const std::string& cgroups_path, bool systemd_cgroup);

}  // namespace flatux::launcher
