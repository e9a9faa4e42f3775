#include "warnings.h"

#include <cstdio>
#include <mutex>
#include <utility>

namespace tgc {

namespace {
std::mutex& handler_mutex() {
  static std::mutex mutex;
  return mutex;
}
WarningHandler& current_handler() {
  static WarningHandler handler;
  return handler;
}
}  // namespace

WarningHandler set_warning_handler(WarningHandler handler) {
  std::lock_guard<std::mutex> lock(handler_mutex());
  return std::exchange(current_handler(), std::move(handler));
}

void warn(const std::string& message) noexcept {
  try {
    WarningHandler handler;
    {
      std::lock_guard<std::mutex> lock(handler_mutex());
      handler = current_handler();
    }
    if (handler) {
      handler(message);
      return;
    }
  } catch (...) {
    // fall through to stderr
  }
  std::fprintf(stderr, "torch_green_contexts warning: %s\n", message.c_str());
}

}  // namespace tgc
