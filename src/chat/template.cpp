#include "chat/template.h"

#include "chat/interpreter.h"
#include "chat/parser.h"

namespace hearth::chat {

Template Template::parse(std::string source) {
  Template t;
  t.program_ = std::make_shared<const Program>(parse_template(source));
  t.source_ = std::move(source);
  return t;
}

Rendered Template::render(const nlohmann::ordered_json& context,
                          const RenderOptions& options) const {
  Interpreter in(*program_, options);
  return in.run(context);
}

Rendered Template::render(Variables variables, const RenderOptions& options) const {
  Interpreter in(*program_, options);
  return in.run(std::move(variables));
}

std::function<std::tm()> fixed_clock(int year, int month, int day, int hour, int minute,
                                     int second) {
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  // Fill weekday and day of year (timegm normalises as UTC, which has no DST surprises).
  const std::time_t t = timegm(&tm);
  gmtime_r(&t, &tm);
  return [tm] { return tm; };
}

}  // namespace hearth::chat
