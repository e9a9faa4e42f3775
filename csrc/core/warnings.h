// Where the core reports problems it cannot throw for (destructors). The default handler
// writes to stderr; the Python bindings route warnings to Python's warnings module.
#pragma once

#include <functional>
#include <string>

namespace tgc {

using WarningHandler = std::function<void(const std::string&)>;

// Installs `handler` (an empty one restores the default) and returns the previous one.
WarningHandler set_warning_handler(WarningHandler handler);

// Reports `message` through the current handler. Never throws.
void warn(const std::string& message) noexcept;

}  // namespace tgc
