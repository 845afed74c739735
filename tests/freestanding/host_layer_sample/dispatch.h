// A host-layer header that reaches into the kernel: check_host_layer.py
// must refuse it (freestanding.host_layer_selftest).
#pragma once
#include <cstdint>

#include "host/raw_syscall.h"
#include "../kernel/task/task.h"
