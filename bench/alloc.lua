-- alloc.lua: benchmark workload 2, an allocation-heavy Lua script.
--   lua alloc.lua N
-- Builds and drops short-lived tables, strings and closures in a loop (several
-- million allocations for N = 300000), with a small long-lived set so the
-- collector has live data to trace. Prints one checksum line.
local n = tonumber(arg and arg[1]) or 300000
local keep, total = {}, 0
for i = 1, n do
  local t = { i, i * 2, name = "k" .. i }
  local s = string.format("%d:%s", i, t.name)
  local f = function() return #s + t[1] end
  total = total + f()
  if i % 100 == 0 then keep[#keep + 1] = t end
  if #keep > 2000 then keep = {} end
end
local parts = {}
for i = 1, n // 4 do parts[#parts + 1] = tostring(i) end
total = total + #table.concat(parts, ",")
print(total)
