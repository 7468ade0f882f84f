// What every page shares: calling the router's JSON endpoints (same
// origin, the session cookie rides along) and building DOM nodes.

/** Calls `path`; answers `{status, body, headers}` (body parsed when JSON). */
export async function call(method, path, body) {
  const init = { method, credentials: "same-origin", headers: { accept: "application/json" } };
  if (body !== undefined) {
    init.headers["content-type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  const type = response.headers.get("content-type") || "";
  const parsed = type.includes("json") ? await response.json() : null;
  return { status: response.status, body: parsed, headers: response.headers };
}

/** The error message of an answer that is not a success. */
export function problem(answer) {
  const error = answer.body && answer.body.error;
  if (error && error.message) return error.message;
  return `The router answered ${answer.status}.`;
}

/** `el("p", {class: "x"}, "text", child)`: an element with attributes and children. */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === false || value === null || value === undefined) continue;
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** A table: `columns` of `[heading, cell(row), numeric?]`; stacked at phone width. */
export function table(caption, columns, rows, empty) {
  if (!rows.length) return el("p", { class: "hint" }, empty);
  return el("div", { class: "table-wrap" },
    el("table", { class: "stacked" },
      el("caption", { class: "sr-only" }, caption),
      el("thead", {}, el("tr", {}, columns.map(([h, , n]) => el("th", { scope: "col", class: n ? "num" : null }, h)))),
      el("tbody", {}, rows.map((row) => el("tr", {},
        columns.map(([h, cell, n]) => el("td", { "data-label": h, class: n ? "num" : null }, cell(row))))))));
}

/** A short message for screen readers and eyes. */
export function toast(text) {
  const node = document.getElementById("toast");
  node.textContent = text;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { node.textContent = ""; }, 5000);
}

/** A date-time as the reader's local time. */
export function when(text) {
  if (!text) return "never";
  const date = new Date(text);
  return Number.isNaN(date.getTime()) ? text : date.toLocaleString();
}

/** USD text ("12.5") as integer nano-USD, exactly (no floats); null if blank. */
export function nanoFromUsd(text) {
  const value = String(text).trim().replace(/^\$/, "");
  if (value === "") return null;
  const match = /^(\d+)(?:\.(\d{0,9}))?$/.exec(value);
  if (!match) throw new Error(`"${text}" is not an amount in USD.`);
  const nano = BigInt(match[1]) * 1000000000n + BigInt((match[2] || "").padEnd(9, "0"));
  if (nano > BigInt(Number.MAX_SAFE_INTEGER)) throw new Error(`"${text}" is too large.`);
  return Number(nano);
}

/** Integer nano-USD as USD text ("12.50"), exactly; "" for null. */
export function usdFromNano(nano) {
  if (nano === null || nano === undefined) return "";
  const n = BigInt(nano);
  const fraction = (n % 1000000000n).toString().padStart(9, "0").replace(/0+$/, "").padEnd(2, "0");
  return `${n / 1000000000n}.${fraction}`;
}
