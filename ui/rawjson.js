// Reads JSON text without re-serializing it: the server's bytes are what the
// console shows, so integers beyond 2^53 keep their digits and escapes such
// as \u003c stay as stored. Input is assumed to be valid JSON (it comes
// from the server).

/** Index just past the JSON value starting at i (whitespace before it skipped by the caller). */
function valueEnd(text, i) {
  const c = text[i];
  if (c === '"') return stringEnd(text, i);
  if (c === '{' || c === '[') {
    let depth = 0;
    for (let j = i; j < text.length; j += 1) {
      const d = text[j];
      if (d === '"') j = stringEnd(text, j) - 1;
      else if (d === '{' || d === '[') depth += 1;
      else if (d === '}' || d === ']') {
        depth -= 1;
        if (depth === 0) return j + 1;
      }
    }
    return text.length;
  }
  let j = i;
  while (j < text.length && !',}] \n\r\t'.includes(text[j])) j += 1;
  return j;
}

function stringEnd(text, i) {
  for (let j = i + 1; j < text.length; j += 1) {
    if (text[j] === '\\') j += 1;
    else if (text[j] === '"') return j + 1;
  }
  return text.length;
}

function skipSpace(text, i) {
  while (i < text.length && ' \n\r\t'.includes(text[i])) i += 1;
  return i;
}

/**
 * The members of a JSON object as [key, raw value text] pairs, in order;
 * null when text is not an object.
 */
export function members(text) {
  let i = skipSpace(text, 0);
  if (text[i] !== '{') return null;
  const out = [];
  i = skipSpace(text, i + 1);
  while (i < text.length && text[i] !== '}') {
    const keyEnd = stringEnd(text, i);
    const key = JSON.parse(text.slice(i, keyEnd));
    i = skipSpace(text, skipSpace(text, keyEnd) + 1); // past ':'
    const end = valueEnd(text, i);
    out.push([key, text.slice(i, end)]);
    i = skipSpace(text, end);
    if (text[i] === ',') i = skipSpace(text, i + 1);
  }
  return out;
}

/** The text to show for a raw JSON value: strings unquoted, everything else as stored. */
export function displayText(raw) {
  if (raw === undefined) return '';
  return raw[0] === '"' ? JSON.parse(raw) : raw;
}

/** Indents raw JSON text by two spaces a level, keeping every token as stored. */
export function pretty(text) {
  let out = '';
  let indent = '';
  for (let i = 0; i < text.length; i += 1) {
    const c = text[i];
    if (c === '"') {
      const end = stringEnd(text, i);
      out += text.slice(i, end);
      i = end - 1;
    } else if (c === '{' || c === '[') {
      const close = c === '{' ? '}' : ']';
      const next = skipSpace(text, i + 1);
      if (text[next] === close) {
        out += c + close;
        i = next;
      } else {
        indent += '  ';
        out += `${c}\n${indent}`;
      }
    } else if (c === '}' || c === ']') {
      indent = indent.slice(2);
      out += `\n${indent}${c}`;
    } else if (c === ',') {
      out += `,\n${indent}`;
    } else if (c === ':') {
      out += ': ';
    } else if (!' \n\r\t'.includes(c)) {
      out += c;
    }
  }
  return out;
}
