-- The baseline: the bench's trivial handler, sent what write.lua sends.
local event = require("event")

request = function()
  return wrk.format("POST", "/api/v1/write-events", event.headers, event.body("/bench/wrk/0", 0))
end
