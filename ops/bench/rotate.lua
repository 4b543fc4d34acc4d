-- wrk script for the benchmarks (PERFORMANCE.md "Method"): sends requests read from a file, one per line as
-- `path<TAB>bearer token<TAB>body` (a POST of the JSON body, or a GET when the body is empty), rotating through them
-- so every request carries another caller's token.
-- Requests are formatted once in init, so the load generator spends nothing per request but an index step.
-- Prints one line `WRKJSON {...}` with the counts and latency percentiles (µs) when the run is done.
local requests = {}
local count = 0
local index = 0

function init(args)
  local file = assert(io.open(args[1], "r"))
  for line in file:lines() do
    local path, token, body = line:match("^([^\t]*)\t([^\t]*)\t(.*)$")
    if path then
      count = count + 1
      if body == "" then
        requests[count] = wrk.format("GET", path, { ["Authorization"] = "Bearer " .. token })
      else
        requests[count] = wrk.format("POST", path, {
          ["Authorization"] = "Bearer " .. token,
          ["Content-Type"] = "application/json",
        }, body)
      end
    end
  end
  file:close()
  assert(count > 0, "no requests in " .. args[1])
  -- Start away from the first line, so a warm-up and the measured run do not replay the same prefix.
  index = tonumber(args[2] or "0") % count
end

function request()
  index = index + 1
  if index > count then index = 1 end
  return requests[index]
end

function done(summary, latency, _requests)
  local e = summary.errors
  io.write(string.format(
    'WRKJSON {"requests":%d,"durationUs":%d,"p50Us":%d,"p99Us":%d,"non2xx":%d,"connectErrors":%d,"readErrors":%d,"writeErrors":%d,"timeouts":%d}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    e.status, e.connect, e.read, e.write, e.timeout))
end
