-- links.lua: a pandoc filter for the man pages built from docs/.
--  * A link to another document of the tree keeps only its text (a man page
--    has no links to follow); absolute URLs stay.
--  * Images are dropped (a terminal cannot show them).
--  * Tables get column widths from their content, within 88 % of the line,
--    so that tbl never needs more than an 80-column terminal gives it, and
--    no column is narrower than its longest word.

function Link(el)
  if not el.target:match("^%a[%w+.-]*:") then
    return el.content
  end
end

function Image(el)
  return {}
end

local function cell_text(cell)
  return pandoc.utils.stringify(cell.contents or cell)
end

function Table(el)
  local n = #el.colspecs
  local longest, word = {}, {}
  for i = 1, n do longest[i] = 1; word[i] = 1 end
  local function visit(rows)
    for _, row in ipairs(rows) do
      for i, cell in ipairs(row.cells) do
        if i <= n then
          local t = cell_text(cell)
          longest[i] = math.max(longest[i], #t)
          for w in t:gmatch("%S+") do word[i] = math.max(word[i], #w) end
        end
      end
    end
  end
  visit(el.head.rows)
  for _, body in ipairs(el.bodies) do visit(body.body) end
  -- pandoc's man writer gives a table 70 ens at width 1.0; keep to 88 % of
  -- that. Each column gets at least its longest word, and the rest is shared
  -- by the square root of its longest cell, so a column of long prose does
  -- not starve a column of names.
  local total = 0.88 * 70
  local base, rest, sum, w = 0, 0, 0, {}
  for i = 1, n do base = base + word[i] + 1 end
  rest = math.max(total - base, 0)
  for i = 1, n do w[i] = math.sqrt(longest[i]); sum = sum + w[i] end
  for i = 1, n do
    local ens = word[i] + 1 + rest * w[i] / sum
    el.colspecs[i] = {el.colspecs[i][1], ens / 70}
  end
  return el
end
