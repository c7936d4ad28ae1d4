-- Shared by the write scripts: the bench's event of ~230 bytes of data and
-- the request headers, with the token from EVENTSTORE_API_TOKEN.
local event = {}

function event.body(subject, n, preconditions)
  local body = string.format('{"events":[{"source":"https://bench.eventstore.example","subject":"%s","type":"io.eventstore.bench.recorded",'
    .. '"data":{"amount":%d,"currency":"EUR","customer":"c-%06d","note":"an ordinary event of a few hundred bytes",'
    .. '"items":[{"sku":"a-1","qty":1},{"sku":"b-2","qty":3}]}}]', subject, n, n % 1000000)
  if preconditions then
    body = body .. ',"preconditions":[' .. preconditions .. ']'
  end
  return body .. '}'
end

event.headers = {
  ["Content-Type"] = "application/json",
  ["Authorization"] = "Bearer " .. (os.getenv("EVENTSTORE_API_TOKEN") or ""),
}

return event
