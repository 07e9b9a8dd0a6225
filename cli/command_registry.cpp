#include "command_registry.h"

#include <algorithm>

namespace vgpu::cli {
namespace {

std::vector<RegisteredCommand>& Registry() {
  static std::vector<RegisteredCommand> registry;
  return registry;
}

}  // namespace

bool RegisterCommand(int order, Registrar registrar) {
  auto& registry = Registry();
  registry.push_back({order, std::move(registrar)});
  std::stable_sort(
      registry.begin(), registry.end(),
      [](const RegisteredCommand& a, const RegisteredCommand& b) { return a.order < b.order; });
  return true;
}

const std::vector<RegisteredCommand>& RegisteredCommands() {
  return Registry();
}

}  // namespace vgpu::cli
