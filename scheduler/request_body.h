#pragma once

// The extender's and the webhook's request bodies as they come off the network, decoded within
// codec::kKubeObjectJson (core/codec/bounded_json.h) before any verb sees them.
// scheduler/server.cpp answers with these; the fuzz targets run the same path.

#include <functional>
#include <nlohmann/json.hpp>
#include <string_view>

#include "scheduler/decode_budget.h"
#include "scheduler/extender.h"
#include "scheduler/metrics.h"

namespace vgpu::scheduler {

using JsonVerb = std::function<VerbResult(const nlohmann::json&)>;

// 400 naming the problem for a body that is not JSON or is over a limit (too deep, too many
// values, a string too long), before a DOM of it is built; 400 too for a std::exception from the
// verb (a JSON type surprise deep in an object). Each counts in metrics.bad_requests. The body is
// decoded only with room for it in `budget` (held until the verb returns); without room in time:
// 503 with Retry-After.
VerbResult RunJsonVerb(std::string_view body, SchedulerMetrics& metrics, DecodeBudget& budget,
                       const JsonVerb& verb);

// The webhook: as RunJsonVerb, except that a review over the limits whose request.uid can be read
// (without a DOM) is answered 200 with allowed: false and the reason. The API server then refuses
// the object whatever the webhook's failurePolicy; a 400 under failurePolicy Ignore (the chart's
// default) would admit it unchecked. For the same reason a review that finds no room in `budget`
// in time is denied by its uid too (code 429: retry), not answered 503.
VerbResult RunAdmission(std::string_view body, SchedulerMetrics& metrics, DecodeBudget& budget,
                        Extender& extender);

}  // namespace vgpu::scheduler
