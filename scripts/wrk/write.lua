-- Single-event writes on 64 subjects per thread, without preconditions.
local event = require("event")
local n = 0

request = function()
  n = n + 1
  return wrk.format("POST", "/api/v1/write-events", event.headers, event.body(string.format("/bench/wrk/%d", n % 64), n))
end
