// The host identity flatux runs with (identity.cpp says why).
#pragma once
#include <cstdint>
#include <string>

namespace flatux::launcher {

// Started by root: a new user namespace (plus `extra_flags`, e.g.
// CLONE_NEWNS) in which every host uid and gid maps to itself. Must be
// called while the process has one thread.
bool enter_identity_namespace(int extra_flags, std::string* why, const std::string& uid_map = "",
                              const std::string& gid_map = "");

// Started by another user: a new user namespace mapping only that user.
bool enter_own_id_namespace(int extra_flags, std::string* why);

// Keeps exactly the capabilities in `keep` (bit N: capability N) in the
// effective, permitted and bounding sets; none inheritable or ambient.
bool set_capabilities(uint64_t keep, std::string* why);

// What serving files as root needs: ownership, permission bypass, the
// set-id bits.
uint64_t file_server_capabilities();

}  // namespace flatux::launcher
