// A container's terminal: a host pty whose master goes to the engine over
// its console socket (--console-socket), as runc hands it over.
#pragma once
#include <string>

namespace flatux::launcher {

// Makes the pty (rows x cols when not 0), sends the master over the unix
// socket at socket_path (SCM_RIGHTS, the pty's name as the message) and
// returns the terminal end in *slave. False with *error set.
bool oci_console_open(const std::string& socket_path, unsigned rows, unsigned cols, int* slave, std::string* error);

}  // namespace flatux::launcher
