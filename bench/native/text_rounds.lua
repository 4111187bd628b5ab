-- An allocation-heavy interpreter workload for the native agent's overhead (bench/RESULTS.md): Lua 5.4 building
-- and rewriting text with gsub, counting words with gmatch, formatting with string.format and joining with
-- table.concat. Deterministic: the lines come from a seeded linear congruential generator, and the checksum it
-- prints depends only on the arguments.
-- usage: lua5.4 text_rounds.lua [LINES] [ROUNDS]
local lines_wanted = tonumber(arg[1]) or 4000
local rounds = tonumber(arg[2]) or 200

local state = 12345
local function next_random(n)
  state = (state * 1103515245 + 12345) % 2147483648
  return state % n
end

local words = {}
for i = 1, 500 do
  local letters = {}
  for j = 1, 3 + next_random(8) do letters[j] = string.char(97 + next_random(26)) end
  words[i] = table.concat(letters)
end

local lines = {}
for i = 1, lines_wanted do
  local parts = {}
  for j = 1, 6 + next_random(10) do parts[j] = words[1 + next_random(#words)] end
  lines[i] = table.concat(parts, " ")
end

local checksum = 0
for round = 1, rounds do
  local counts = {}
  local out = {}
  for i = 1, #lines do
    local line = lines[i]:gsub("(%a)(%a*)", function(first, rest) return first:upper() .. rest end)
    for word in line:gmatch("%a+") do counts[word] = (counts[word] or 0) + 1 end
    out[#out + 1] = string.format("%5d|%-40.40s|%3d", i, line, #line + round)
  end
  local text = table.concat(out, "\n")
  checksum = (checksum + #text) % 1000000007
  local distinct = 0
  for _ in pairs(counts) do distinct = distinct + 1 end
  checksum = (checksum * 31 + distinct) % 1000000007
end
print(string.format("checksum %d", checksum))
