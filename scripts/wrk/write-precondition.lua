-- Single-event writes, each with the precondition a real client sends: the
-- first write of a subject isSubjectPristine, every later one
-- isSubjectOnEventId with the id the previous answer gave. A subject is
-- written again only after its answer came, so no precondition fails; an
-- answer that is not 200 is counted and reported by done, and its subject
-- is not written again.
local event = require("event")
local threads = {}

function setup(thread)
  table.insert(threads, thread)
  thread:set("tid", #threads)
end

local free, last, n, subjects, run
failed = 0 -- a global, which done reads of each thread

-- fresh returns a subject of its own to this thread, never written.
local function fresh()
  subjects = subjects + 1
  return string.format("/bench/wrk/%s/%d/%d", run, tid, subjects)
end

function init(args)
  free, last, n, subjects = {}, {}, 0, 0
  run = string.format("%d-%d", os.time(), math.random(1000000))
  for i = 1, 64 do
    free[#free + 1] = fresh()
  end
end

request = function()
  n = n + 1
  local subject = table.remove(free) or fresh() -- a failed answer keeps its subject
  local precondition
  if last[subject] then
    precondition = string.format('{"type":"isSubjectOnEventId","payload":{"subject":"%s","eventId":"%s"}}', subject, last[subject])
  else
    precondition = string.format('{"type":"isSubjectPristine","payload":{"subject":"%s"}}', subject)
  end
  return wrk.format("POST", "/api/v1/write-events", event.headers, event.body(subject, n, precondition))
end

response = function(status, headers, body)
  local subject = string.match(body, '"subject":"([^"]+)"')
  local id = string.match(body, '"id":"(%d+)"')
  if status ~= 200 or not subject or not id then
    failed = failed + 1
    return
  end
  last[subject] = id
  free[#free + 1] = subject
end

function done(summary, latency, requests)
  local total = 0
  for _, t in ipairs(threads) do
    total = total + t:get("failed")
  end
  io.write(string.format("failed answers: %d\n", total))
end
