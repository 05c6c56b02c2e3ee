-- workload.lua: an allocation-heavy Lua script (tables, strings, closures,
-- garbage collection) used to profile an unmodified third-party program.
local n = tonumber(arg and arg[1]) or 20000
local keep = {}
for i = 1, n do
  keep[i] = { i, tostring(i) .. "-item", function() return i end }
end
local total = 0
for round = 1, 4 do
  local parts = {}
  for i = 1, n do
    parts[#parts + 1] = string.rep("x", i % 40) .. i
  end
  total = total + #table.concat(parts, ",")
  collectgarbage()
end
print(total)
