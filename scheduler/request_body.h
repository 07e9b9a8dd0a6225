#pragma once

// The extender's and the webhook's request bodies as they come off the network, decoded within
// codec::kKubeObjectJson (core/codec/bounded_json.h) before any verb sees them.
// scheduler/server.cpp answers with these; the fuzz targets run the same path.

#include <functional>
#include <nlohmann/json.hpp>
#include <string_view>

#include "scheduler/extender.h"
#include "scheduler/metrics.h"

namespace vgpu::scheduler {

using JsonVerb = std::function<VerbResult(const nlohmann::json&)>;

// 400 naming the problem for a body that is not JSON or is over a limit (too deep, too many
// values, a string too long), before a DOM of it is built; 400 too for a std::exception from the
// verb (a JSON type surprise deep in an object). Each counts in metrics.bad_requests.
VerbResult RunJsonVerb(std::string_view body, SchedulerMetrics& metrics, const JsonVerb& verb);

// The webhook: as RunJsonVerb, except that a review over the limits whose request.uid can be read
// (without a DOM) is answered 200 with allowed: false and the reason. The API server then refuses
// the object whatever the webhook's failurePolicy; a 400 under failurePolicy Ignore (the chart's
// default) would admit it unchecked.
VerbResult RunAdmission(std::string_view body, SchedulerMetrics& metrics, Extender& extender);

}  // namespace vgpu::scheduler
