// Torch-free declaration of the device probe (device.hpp has the rest), for `pkb __probe`.
#pragma once

#include <string>

namespace pkb::device {

std::string probe_json();

}  // namespace pkb::device
