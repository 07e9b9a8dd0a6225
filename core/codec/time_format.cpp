#include "core/codec/time_format.h"

#include <cstdio>

#include "core/codec/parse_util.h"

namespace vgpu::codec {

using codec_internal::ParseInt;
using codec_internal::Quote;

namespace {

struct Fields {
  int year, month, day, hour, minute, second;
};

Fields Split(Seconds t) {
  auto days = std::chrono::floor<std::chrono::days>(t);
  std::chrono::year_month_day ymd{days};
  std::chrono::hh_mm_ss hms{t - days};
  return {static_cast<int>(ymd.year()),
          static_cast<int>(unsigned(ymd.month())),
          static_cast<int>(unsigned(ymd.day())),
          static_cast<int>(hms.hours().count()),
          static_cast<int>(hms.minutes().count()),
          static_cast<int>(hms.seconds().count())};
}

// Parses "YYYY<sep>MM<sep>DD<T or space>hh:mm:ss" from the first 19 characters.
Result<Seconds> ParsePrefix(std::string_view s, bool allow_dot_sep, char date_time_sep) {
  auto bad = [&](const char* why) { return InvalidArgument("time " + Quote(s) + ": " + why); };
  if (s.size() < 19) return bad("too short");
  char dsep = s[4];
  if (!(dsep == '-' || (allow_dot_sep && dsep == '.')) || s[7] != dsep) {
    return bad("date must be YYYY-MM-DD");
  }
  if (s[10] != date_time_sep || s[13] != ':' || s[16] != ':') return bad("malformed time of day");
  auto y = ParseInt<int>(s.substr(0, 4));
  auto mo = ParseInt<unsigned>(s.substr(5, 2));
  auto d = ParseInt<unsigned>(s.substr(8, 2));
  auto h = ParseInt<int>(s.substr(11, 2));
  auto mi = ParseInt<int>(s.substr(14, 2));
  auto se = ParseInt<int>(s.substr(17, 2));
  if (!y || !mo || !d || !h || !mi || !se) return bad("non-numeric field");
  std::chrono::year_month_day ymd{std::chrono::year(*y), std::chrono::month(*mo),
                                  std::chrono::day(*d)};
  if (!ymd.ok()) return bad("no such date");
  if (*h > 23 || *mi > 59 || *se > 60) return bad("time of day out of range");
  return Seconds{std::chrono::sys_days(ymd)} + std::chrono::hours(*h) + std::chrono::minutes(*mi) +
         std::chrono::seconds(*se);
}

}  // namespace

std::string FormatRfc3339(Seconds t) {
  Fields f = Split(t);
  char buf[40];
  (void)std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02dZ", f.year, f.month, f.day,
                      f.hour, f.minute, f.second);
  return buf;
}

Result<Seconds> ParseRfc3339(std::string_view text) {
  auto base = ParsePrefix(text, /*allow_dot_sep=*/false, 'T');
  if (!base.ok()) return base.status();
  std::string_view rest = text.substr(19);
  if (!rest.empty() && rest[0] == '.') {  // fractional seconds, dropped
    size_t i = 1;
    while (i < rest.size() && rest[i] >= '0' && rest[i] <= '9') ++i;
    if (i == 1) return InvalidArgument("time " + Quote(text) + ": empty fraction");
    rest = rest.substr(i);
  }
  // The UTC time must be one FormatRfc3339 can write back (years 0000-9999): an offset or a leap
  // second at either end would carry it past (9999-12-31T23:59:59-00:01), and a lock written
  // back from it could not be read again.
  const auto in_range = [&](Seconds utc) -> Result<Seconds> {
    const int year = Split(utc).year;
    if (year < 0 || year > 9999) {
      return InvalidArgument("time " + Quote(text) + ": out of range (years 0000 to 9999 in UTC)");
    }
    return utc;
  };
  if (rest == "Z") return in_range(*base);
  if (rest.size() == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':') {
    auto oh = ParseInt<int>(rest.substr(1, 2));
    auto om = ParseInt<int>(rest.substr(4, 2));
    if (oh && om && *oh < 24 && *om < 60) {
      auto offset = std::chrono::hours(*oh) + std::chrono::minutes(*om);
      // Local time = UTC + offset, so UTC = local - offset.
      return in_range(rest[0] == '+' ? *base - offset : *base + offset);
    }
  }
  return InvalidArgument("time " + Quote(text) +
                         ": want RFC3339 like 2024-05-01T10:20:30Z or ...+08:00");
}

std::string FormatDateTime(Seconds t) {
  Fields f = Split(t);
  char buf[40];
  (void)std::snprintf(buf, sizeof buf, "%04d-%02d-%02d %02d:%02d:%02d", f.year, f.month, f.day,
                      f.hour, f.minute, f.second);
  return buf;
}

Result<Seconds> ParseDateTime(std::string_view text) {
  if (text.size() != 19) {
    return InvalidArgument("time " + Quote(text) + ": want YYYY-MM-DD hh:mm:ss");
  }
  return ParsePrefix(text, /*allow_dot_sep=*/true, ' ');
}

}  // namespace vgpu::codec
