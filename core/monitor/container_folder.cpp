#include "core/monitor/container_folder.h"

#include <cstdio>

namespace vgpu::monitor {

ContainerState DecideContainerState(const FolderFindings& f) {
  if (f.entries_truncated || f.region_files_ignored > 0) return ContainerState::kOverLimits;
  if (f.unreadable || f.refused > 0) return ContainerState::kUnusable;
  if (f.pending > 0) return ContainerState::kPending;
  return ContainerState::kOk;
}

std::string OverLimitsMessage(const FolderFindings& f) {
  std::string what;
  if (f.entries_truncated) {
    what = "more than " + std::to_string(kMaxFolderEntries) + " entries";
  }
  if (f.region_files_ignored > 0) {
    if (!what.empty()) what += " and ";
    what += "more than " + std::to_string(kMaxRegionFiles) + " *.cache files";
  }
  if (what.empty()) return "";
  return "holds " + what + "; the monitor reads at most " + std::to_string(kMaxFolderEntries) +
         " entries and " + std::to_string(kMaxRegionFiles) +
         " region files of a container and ignores the rest (a container flooding its folder)";
}

std::string SafeText(std::string_view text, size_t max_bytes) {
  std::string out;
  const bool cut = text.size() > max_bytes;
  if (cut) text = text.substr(0, max_bytes);
  out.reserve(text.size());
  for (const char c : text) {
    const auto b = static_cast<unsigned char>(c);
    if (b >= 0x20 && b < 0x7f && b != '\\') {
      out += c;
    } else {
      char esc[8];
      (void)std::snprintf(esc, sizeof esc, "\\x%02x", b);
      out += esc;
    }
  }
  if (cut) out += "...";
  return out;
}

}  // namespace vgpu::monitor
