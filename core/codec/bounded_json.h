#pragma once

// JSON from outside the process, parsed within limits before a DOM of it exists: size, nesting
// depth, number of values, length of one string. The one parser for every decoder of such input
// (the scheduler's extender and webhook bodies, the API server's answers and watch events, which
// carry objects tenants wrote, node annotations, the node monitor's snapshot read by `vgpu top`,
// configuration and checkpoint files) and the one home of the limits.
//
// Why depth: nlohmann's parser itself is iterative, but copying, comparing and dumping a DOM
// recurse once per level. An AdmissionReview nested 135,000 levels deep (280 KB) overflowed the
// scheduler's stack when the webhook copied the pod. Why values: a DOM costs 50 to 150 bytes a
// value, and `[[],[],...]` is a value every 3 bytes of text: 16 MiB of it would be a GiB.

#include <cstddef>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/base/status.h"

namespace vgpu::codec {

struct JsonLimits {
  size_t max_bytes;         // the text
  int max_depth;            // arrays and objects inside each other; the top value is depth 1
  size_t max_values;        // values of every kind, arrays and objects included (keys are not)
  size_t max_string_bytes;  // one string or key, decoded
};

// Deeper than any document the project reads: a pod is under 20 levels (spec, affinity terms,
// match expressions, values), its managedFields repeat the object's shape one level down, and an
// extender or review envelope adds 3; every built-in Kubernetes type decodes into Go structs that
// drop unknown fields, so nothing the API server sends is deeper. A DOM this deep copies on a few
// KiB of stack.
inline constexpr int kMaxJsonDepth = 128;

// One Kubernetes object, or a request or event about one or two: an AdmissionReview (object and
// oldObject), ExtenderArgs, a watch event, a GET answer. The API server takes request bodies up to
// 3 MiB; its JSON escapes <, > and & as \u003c, so one object's text can reach 6 times that: 40 MiB
// covers two and the envelope (the listeners take 16 MiB at most: net/http_limits.h). Values: the
// densest shape its types allow is an array of empty strings (3 bytes a value: a 3 MiB pod can
// hold a million args), twice for an update's review, plus the envelope; ExtenderArgs with whole
// Node objects (nodeCacheCapable false) stay under it up to the listener's 16 MiB at 7 bytes a
// value. Such a DOM is 100 to 250 MB at most; ordinary pods are a few thousand values.
inline constexpr JsonLimits kKubeObjectJson{
    .max_bytes = size_t{40} << 20,
    .max_depth = kMaxJsonDepth,
    .max_values = 2'500'000,
    .max_string_bytes = size_t{4} << 20,  // one object's string is within its 3 MiB
};

// A LIST answer of the API server: every pod of a cluster at the first list of a watch. Its size
// is the cluster's (100,000 pods of ~500 values each are 50 M); each object in it is bounded by
// the API server as above, so only depth and strings are tight here.
inline constexpr JsonLimits kKubeListJson{
    .max_bytes = size_t{4} << 30,
    .max_depth = kMaxJsonDepth,
    .max_values = 64'000'000,
    .max_string_bytes = size_t{4} << 20,
};

// A JSON value inside an annotation (the node inventory, the device pair scores): the API server
// caps all annotations of an object together at 256 KiB.
inline constexpr JsonLimits kAnnotationJson{
    .max_bytes = size_t{256} << 10,
    .max_depth = kMaxJsonDepth,
    .max_values = 128 << 10,
    .max_string_bytes = size_t{256} << 10,
};

// A file or answer about one node: the node's config.json (a ConfigMap, 1 MiB at most), the
// kubelet's device checkpoint (each pod's device IDs: 110 pods of a few hundred IDs), the node
// monitor's snapshot (`vgpu top`; at most a few thousand containers of ~30 values each).
inline constexpr JsonLimits kNodeFileJson{
    .max_bytes = size_t{16} << 20,
    .max_depth = kMaxJsonDepth,
    .max_values = 2'000'000,
    .max_string_bytes = size_t{1} << 20,
};

// The most values `text` can hold, whatever it is: each value after the first takes at least two
// bytes (`[0,0,0]`, `[[[]]]`), so (size + 1) / 2. For reserving room for a
// document before parsing it (scheduler/decode_budget.h).
inline size_t MostJsonValues(std::string_view text) {
  return (text.size() + 1) / 2;
}

// Parses `text` within `limits`. Errors name `what` and the problem: InvalidArgument for text
// that is not JSON (with nlohmann's message: where and what), ResourceExhausted for a document
// over a limit (which limit, and its value). No DOM beyond the limits is ever built.
Result<nlohmann::json> ParseJsonWithin(std::string_view text, const JsonLimits& limits,
                                       std::string_view what);
// The same into nlohmann::ordered_json: members in document order (Go's decoding, where the last
// of two keys naming one field wins).
Result<nlohmann::ordered_json> ParseOrderedJsonWithin(std::string_view text,
                                                      const JsonLimits& limits,
                                                      std::string_view what);

// The string at `path` (object keys from the top down) of a document ParseJsonWithin refused,
// found without building anything: one pass that remembers only how much of the path it is in.
// "" when absent, not a string, or past a syntax error. For answering a refused request by its
// own identity (an AdmissionReview's request.uid). Text over `max_bytes` is not read.
std::string FindJsonString(std::string_view text, std::initializer_list<std::string_view> path,
                           size_t max_bytes);

}  // namespace vgpu::codec
