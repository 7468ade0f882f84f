// One function per page: each draws into `main` from the JSON endpoints.
// Amounts come from the server as exact USD text; nothing here does money
// arithmetic with floats.
import { call, el, nanoFromUsd, problem, table, toast, usdFromNano, when } from "./api.js";

const SCOPES = ["inference", "account:read", "account:write", "usage:read"];
const FREQUENCIES = ["daily", "weekly", "monthly", "off"];

function fail(answer) {
  throw new Error(problem(answer));
}

function alertBox() {
  return el("p", { class: "error", role: "alert" });
}

// --- Sign in ---------------------------------------------------------------

async function signIn(main) {
  main.classList.add("narrow");
  const status = el("p", { role: "status", "aria-live": "polite" });
  const email = el("input", { type: "email", name: "email", id: "email-input", required: true, autocomplete: "email" });
  const form = el("form", { class: "stack", id: "sign-in-form" },
    el("label", { for: "email-input" }, "Email address", email),
    el("button", { type: "submit" }, "Email me a sign-in link"));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    status.className = "";
    status.textContent = "Sending…";
    const answer = await call("POST", "/api/auth/magic-link", { email: email.value.trim() });
    if (answer.status === 202) {
      status.className = "ok";
      status.textContent = `${answer.body.message} Open the link on this device.`;
    } else {
      status.className = "error";
      status.textContent = problem(answer);
    }
  });
  main.append(el("h1", {}, "Sign in"),
    el("p", {}, "We email you a link that signs you in; no password needed."), form, status);
}

// --- Usage -----------------------------------------------------------------

function card(label, money, id) {
  return el("div", { class: "card" },
    el("div", { class: "label" }, label),
    el("div", { class: "value", id }, money.usd));
}

/** The 30 days as an SVG bar chart: one bar per day, its amount in a title. */
function chart(days) {
  const ns = "http://www.w3.org/2000/svg";
  const width = 600, height = 180, pad = 24, gap = 2;
  const max = days.reduce((m, d) => Math.max(m, d.spend.nano_usd), 0);
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("class", "chart");
  svg.setAttribute("role", "img");
  const spent = days.filter((d) => d.spend.nano_usd > 0);
  svg.setAttribute("aria-label",
    `Spend per day for the last ${days.length} days; ${spent.length} days with spend` +
    (spent.length ? `, the most ${days.find((d) => d.spend.nano_usd === max).spend.usd}.` : "."));
  const step = (width - 2 * pad) / days.length;
  days.forEach((day, i) => {
    // Bar heights only: proportions, never amounts, are computed here.
    const h = max > 0 ? Math.round((day.spend.nano_usd / max) * (height - 2 * pad)) : 0;
    const rect = document.createElementNS(ns, "rect");
    rect.setAttribute("class", "bar");
    rect.setAttribute("x", String(pad + i * step + gap / 2));
    rect.setAttribute("y", String(height - pad - h));
    rect.setAttribute("width", String(Math.max(step - gap, 1)));
    rect.setAttribute("height", String(Math.max(h, day.spend.nano_usd > 0 ? 1 : 0)));
    const title = document.createElementNS(ns, "title");
    title.textContent = `${day.day}: ${day.spend.usd} (${day.requests} requests)`;
    rect.append(title);
    svg.append(rect);
  });
  for (const [i, anchor] of [[0, "start"], [days.length - 1, "end"]]) {
    const label = document.createElementNS(ns, "text");
    label.setAttribute("x", String(anchor === "start" ? pad : width - pad));
    label.setAttribute("y", String(height - 6));
    label.setAttribute("text-anchor", anchor);
    label.textContent = days[i].day;
    svg.append(label);
  }
  const top = document.createElementNS(ns, "text");
  top.setAttribute("x", String(pad));
  top.setAttribute("y", "14");
  top.textContent = max > 0 ? `max ${days.find((d) => d.spend.nano_usd === max).spend.usd}` : "no spend yet";
  svg.append(top);
  return svg;
}

async function usage(main) {
  const answer = await call("GET", "/api/usage");
  if (answer.status !== 200) fail(answer);
  const u = answer.body;
  main.append(
    el("h1", {}, "Usage"),
    el("section", { class: "cards", "aria-label": "Credit" },
      card("Balance", u.balance, "balance"),
      card("Held by requests in flight", u.held, "held"),
      card("Available", u.available, "available"),
      card("Spent, last 30 days", u.total, "total")),
    el("h2", {}, "Spend by day (UTC)"),
    chart(u.days),
    el("details", {}, el("summary", {}, "The days as a table"),
      table("Spend by day", [["Day", (d) => d.day], ["Requests", (d) => d.requests, true], ["Spend", (d) => d.spend.usd, true]],
        u.days.filter((d) => d.requests > 0), "No spend in the last 30 days.")),
    el("h2", {}, "By model"),
    table("Spend by model", [["Model", (m) => m.model], ["Requests", (m) => m.requests, true], ["Spend", (m) => m.spend.usd, true]],
      u.by_model, "No spend in the last 30 days."),
    el("h2", {}, "By key"),
    table("Spend by key", [["Key", (k) => el("code", {}, k.prefix)], ["Requests", (k) => k.requests, true], ["Spend", (k) => k.spend.usd, true]],
      u.by_key, "No spend in the last 30 days."),
    el("p", {}, el("a", { href: "/account/requests" }, "See every request")));
}

// --- Requests --------------------------------------------------------------

async function requests(main, { arg }) {
  if (arg) return request(main, arg);
  const params = new URLSearchParams(location.search);
  const keys = await call("GET", "/api/keys");
  const field = (label, input) => el("label", {}, label, input);
  const model = el("input", { type: "text", name: "model", value: params.get("model") || "" });
  const key = el("select", { name: "key" }, el("option", { value: "" }, "Any key"),
    (keys.body?.data || []).map((k) => el("option", { value: k.id, selected: params.get("key") === k.id }, k.prefix)));
  const status = el("select", { name: "status" }, ["", "succeeded", "failed", "reserved"].map((s) =>
    el("option", { value: s, selected: (params.get("status") || "") === s }, s || "Any status")));
  const from = el("input", { type: "date", name: "from", value: params.get("from") || "" });
  const to = el("input", { type: "date", name: "to", value: params.get("to") || "" });
  const form = el("form", { class: "inline", method: "get", action: "/account/requests", id: "filters" },
    field("Model", model), field("Key", key), field("Status", status), field("From", from), field("To", to),
    el("button", { type: "submit" }, "Filter"));
  main.append(el("h1", {}, "Requests"), form);
  const query = new URLSearchParams();
  for (const name of ["model", "key", "status", "from", "to"]) if (params.get(name)) query.set(name, params.get(name));
  const answer = await call("GET", `/api/requests?${query}`);
  if (answer.status !== 200) {
    main.append(el("p", { class: "error", role: "alert" }, problem(answer)));
    return;
  }
  main.append(el("h2", {}, `${answer.body.data.length} requests`),
    table("Requests", [
      ["When", (r) => el("a", { href: `/account/requests/${r.id}` }, when(r.created_at))],
      ["Model", (r) => r.model],
      ["Key", (r) => el("code", {}, r.key_prefix)],
      ["Status", (r) => r.status],
      ["Charge", (r) => r.charge.usd, true],
    ], answer.body.data, "No request matches."));
}

async function request(main, id) {
  const answer = await call("GET", `/api/requests/${encodeURIComponent(id)}`);
  if (answer.status !== 200) fail(answer);
  const r = answer.body;
  const fact = (term, value) => [el("dt", {}, term), el("dd", {}, value)];
  main.append(
    el("p", {}, el("a", { href: "/account/requests" }, "← All requests")),
    el("h1", {}, "Request"),
    el("dl", { class: "facts" },
      fact("ID", el("code", {}, r.id)), fact("Model", r.model), fact("Status", r.status),
      fact("Protocol", r.protocol), fact("Streamed", r.stream ? "yes" : "no"),
      fact("Started", when(r.created_at)), fact("Finished", when(r.finished_at)),
      r.error ? fact("Error", el("code", {}, r.error)) : null,
      fact("Charge", el("strong", { id: "charge" }, r.charge.usd)),
      fact("From the cache", r.cache_hit ? "yes" : "no"),
      r.tokens ? fact("Tokens", `${r.tokens.input} in, ${r.tokens.output} out` +
        (r.tokens.cache_read ? `, ${r.tokens.cache_read} cached` : "") +
        (r.tokens.reasoning ? `, ${r.tokens.reasoning} reasoning` : "")) : null),
    el("h2", {}, "Attempts"),
    table("Attempts", [
      ["#", (a) => a.number, true], ["Route protocol", (a) => a.route_protocol],
      ["Outcome", (a) => a.outcome], ["Started", (a) => when(a.started_at)], ["Took", (a) => `${a.duration_ms} ms`, true],
    ], r.attempts, "No attempt was made (answered from the cache, or refused before)."));
}

// --- Keys ------------------------------------------------------------------

function policySummary(p) {
  const parts = [];
  if (p.allowed_models) parts.push(`models: ${p.allowed_models.join(", ")}`);
  if (p.ip_allowlist) parts.push(`networks: ${p.ip_allowlist.join(", ")}`);
  if (p.monthly_budget_nano_usd !== null) parts.push(`budget $${usdFromNano(p.monthly_budget_nano_usd)}/month`);
  for (const w of p.spend_limits || []) parts.push(`$${usdFromNano(w.amount_nano_usd)} per ${w.window_seconds / 3600} h`);
  if (p.requests_per_minute !== null) parts.push(`${p.requests_per_minute}/min`);
  if (p.requests_per_day !== null) parts.push(`${p.requests_per_day}/day`);
  if (p.max_concurrent_requests !== null) parts.push(`${p.max_concurrent_requests} at once`);
  return parts.length ? parts.join("; ") : "no limits";
}

const list = (text) => {
  const items = text.split(",").map((s) => s.trim()).filter(Boolean);
  return items.length ? items : null;
};
const whole = (text) => (text.trim() === "" ? null : Number.parseInt(text, 10));

/** The policy fields of the create and change forms; `read()` gives the body's fields. */
function policyFields(prefix, p) {
  const input = (name, label, hint, value, type = "text") => {
    const id = `${prefix}-${name}`;
    const node = el("input", { type, id, name, value: value ?? "", inputmode: type === "number" ? "numeric" : null, min: type === "number" ? "1" : null });
    return { node, field: el("label", { for: id }, label, hint ? el("span", { class: "hint" }, hint) : null, node) };
  };
  const models = input("models", "Allowed models", "Comma-separated; empty allows every model.", p?.allowed_models?.join(", "));
  const ips = input("ips", "Allowed networks", "CIDR, comma-separated; empty allows any address.", p?.ip_allowlist?.join(", "));
  const budget = input("budget", "Monthly budget (USD)", "Empty: no budget.", usdFromNano(p?.monthly_budget_nano_usd));
  const window = p?.spend_limits?.[0];
  // The form edits the first window; any others (set through the admin API) are kept as they are.
  const others = (p?.spend_limits || []).slice(1).map((w) => ({ amount_nano_usd: w.amount_nano_usd, window_seconds: w.window_seconds }));
  const kept = others.length ? `${others.length} more window(s) kept as they are.` : null;
  const limit = input("limit", "Spend limit (USD)", kept ? `Within the window below; empty: none. ${kept}` : "Within the window below; empty: none.", usdFromNano(window?.amount_nano_usd));
  const hours = input("hours", "Spend limit window (hours)", null, window ? String(window.window_seconds / 3600) : "24", "number");
  const rpm = input("rpm", "Requests per minute", null, p?.requests_per_minute, "number");
  const rpd = input("rpd", "Requests per day", null, p?.requests_per_day, "number");
  const conc = input("concurrent", "Requests at once", null, p?.max_concurrent_requests, "number");
  const fields = [models, ips, budget, limit, hours, rpm, rpd, conc].map((f) => f.field);
  const read = () => {
    const amount = nanoFromUsd(limit.node.value);
    const seconds = Math.round(Number(hours.node.value || "24") * 3600);
    return {
      allowed_models: list(models.node.value),
      ip_allowlist: list(ips.node.value),
      monthly_budget_nano_usd: nanoFromUsd(budget.node.value),
      spend_limits: amount === null
        ? (others.length ? others : null)
        : [{ amount_nano_usd: amount, window_seconds: seconds }, ...others],
      requests_per_minute: whole(rpm.node.value),
      requests_per_day: whole(rpd.node.value),
      max_concurrent_requests: whole(conc.node.value),
    };
  };
  return { fields, read };
}

async function keys(main) {
  main.append(el("h1", {}, "API keys"));
  const issued = el("div", { id: "issued" });
  const listing = el("div", { id: "key-list" });
  const error = alertBox();

  const scopeBoxes = SCOPES.map((scope) => el("input", { type: "checkbox", name: "scope", value: scope, checked: scope === "inference" }));
  const policy = policyFields("new", null);
  const create = el("form", { class: "stack", id: "create-key" },
    el("fieldset", {}, el("legend", {}, "Scopes"),
      scopeBoxes.map((box) => el("label", { class: "check" }, box, box.value))),
    policy.fields,
    el("button", { type: "submit" }, "Create key"));
  create.addEventListener("submit", async (event) => {
    event.preventDefault();
    error.textContent = "";
    let body;
    try {
      body = { scopes: scopeBoxes.filter((b) => b.checked).map((b) => b.value), ...policy.read() };
    } catch (e) {
      error.textContent = e.message;
      return;
    }
    for (const [k, v] of Object.entries(body)) if (v === null) delete body[k];
    const answer = await call("POST", "/api/keys", body);
    if (answer.status !== 201) {
      error.textContent = problem(answer);
      return;
    }
    const secret = el("input", { type: "text", readonly: true, id: "new-key", value: answer.body.key, "aria-label": "Your new API key" });
    const copy = el("button", { type: "button", onclick: async () => {
      secret.select();
      try { await navigator.clipboard.writeText(secret.value); toast("Copied."); } catch { toast("Select the key and copy it."); }
    } }, "Copy");
    issued.replaceChildren(el("div", { class: "panel", role: "region", "aria-label": "New key" },
      el("h2", {}, "Your new key"),
      el("p", {}, "Copy it now: it is shown this once and cannot be shown again."),
      el("div", { class: "secret" }, secret, copy)));
    secret.focus();
    create.reset();
    await refresh();
  });

  async function refresh() {
    const answer = await call("GET", "/api/keys");
    if (answer.status !== 200) fail(answer);
    const rows = answer.body.data;
    listing.replaceChildren(table("Your API keys", [
      ["Key", (k) => el("code", {}, `${k.prefix}…`)],
      ["Scopes", (k) => k.scopes.join(", ")],
      ["Policy", (k) => policySummary(k.policy)],
      ["This month", (k) => k.spend_this_month.usd, true],
      ["Last used", (k) => when(k.last_used_at)],
      ["", (k) => (k.revoked_at ? el("span", { class: "badge off" }, `revoked ${when(k.revoked_at)}`) : el("div", { class: "row" },
        el("button", { type: "button", class: "quiet", "aria-label": `Change the policy of ${k.prefix}`, "data-edit": k.prefix, onclick: () => edit(k) }, "Change policy"),
        el("button", { type: "button", class: "danger", "aria-label": `Revoke ${k.prefix}`, "data-revoke": k.prefix, onclick: () => revoke(k) }, "Revoke")))],
    ], rows, "No keys yet."));
  }

  async function revoke(k) {
    if (!confirm(`Revoke ${k.prefix}…? Requests with it are refused at once.`)) return;
    const answer = await call("DELETE", `/api/keys/${k.id}`);
    if (answer.status !== 204) error.textContent = problem(answer);
    else toast(`Revoked ${k.prefix}.`);
    await refresh();
  }

  function edit(k) {
    const fields = policyFields(`edit-${k.id.slice(0, 8)}`, k.policy);
    const form = el("form", { class: "stack", id: "edit-key" }, el("h2", {}, `Change ${k.prefix}…`), fields.fields,
      el("div", { class: "row" }, el("button", { type: "submit" }, "Save"),
        el("button", { type: "button", class: "quiet", onclick: () => form.remove() }, "Cancel")));
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      let body;
      try { body = fields.read(); } catch (e) { error.textContent = e.message; return; }
      const answer = await call("PATCH", `/api/keys/${k.id}`, body);
      if (answer.status !== 200) { error.textContent = problem(answer); return; }
      toast("Saved.");
      form.remove();
      await refresh();
    });
    document.getElementById("edit-key")?.remove();
    listing.after(form);
    form.querySelector("input").focus();
  }

  main.append(issued, error, listing, el("h2", {}, "Create a key"), create);
  await refresh();
}

// --- Data protection -------------------------------------------------------

async function dataProtection(main) {
  const answer = await call("GET", "/api/data-protection");
  if (answer.status !== 200) fail(answer);
  let on = answer.body.zero_data_retention;
  const state = el("span", { id: "zdr-state", class: "badge" });
  const button = el("button", { type: "button", role: "switch", id: "zdr-switch" });
  const error = alertBox();
  const draw = () => {
    state.textContent = on ? "On" : "Off";
    state.className = `badge ${on ? "on" : "off"}`;
    button.setAttribute("aria-checked", String(on));
    button.textContent = on ? "Turn zero data retention off" : "Turn zero data retention on";
  };
  const dialog = el("dialog", { id: "zdr-confirm", "aria-labelledby": "zdr-confirm-title" },
    el("h2", { id: "zdr-confirm-title" }, "Turn on zero data retention?"),
    el("p", {}, "Every upload of this account is deleted, the cached responses are cleared, and new uploads are refused. " +
      "Requests go only to suppliers that keep no data; a model without such a supplier stops answering. " +
      "Turning it off later does not bring the uploads back."),
    el("form", { method: "dialog", class: "row" },
      el("button", { value: "confirm", class: "danger", id: "zdr-confirm-yes" }, "Turn it on"),
      el("button", { value: "cancel", class: "quiet" }, "Cancel")));
  const set = async (value) => {
    error.textContent = "";
    const change = await call("PATCH", "/api/data-protection", { zero_data_retention: value });
    if (change.status !== 200) { error.textContent = problem(change); return; }
    on = change.body.zero_data_retention;
    draw();
    toast(`Zero data retention is ${on ? "on" : "off"}.`);
  };
  button.addEventListener("click", () => {
    if (on) set(false);
    else dialog.showModal();
  });
  dialog.addEventListener("close", () => {
    if (dialog.returnValue === "confirm") set(true);
    button.focus();
  });
  draw();
  main.append(el("h1", {}, "Data protection"),
    el("p", {}, "Zero data retention: ", state),
    el("p", {}, "When it is on, the router keeps none of your content: your uploads are deleted and no new ones are taken, " +
      "answers are not cached, and requests go only to suppliers that retain no data."),
    el("div", { class: "switch" }, button), error, dialog);
}

// --- Digests ---------------------------------------------------------------

async function digests(main) {
  main.append(el("h1", {}, "Digests"));
  const [email, channels] = await Promise.all([call("GET", "/api/channels/email"), call("GET", "/v1/channels")]);
  if (email.status !== 200) fail(email);
  const events = channels.body?.available_events || [];
  const section = el("section", { "aria-labelledby": "email-title" }, el("h2", { id: "email-title" }, "Email"));
  const status = el("p", { role: "status", "aria-live": "polite", id: "digest-status" });
  const frequency = (id, current) => el("select", { id, name: "frequency" },
    FREQUENCIES.map((f) => el("option", { value: f, selected: f === current }, f)));
  const e = email.body;
  if (!e.configured) {
    section.append(el("p", {}, "Email is not set up on this router."));
  } else if (!e.channel || e.channel.status === "disconnected") {
    const consent = el("input", { type: "checkbox", id: "consent", required: true });
    const freq = frequency("email-frequency", "weekly");
    const form = el("form", { class: "stack", id: "connect-email" },
      el("p", {}, `Reports go to ${e.email}${e.email_verified ? "" : " (not verified yet)"}.`),
      el("label", { for: "email-frequency" }, "How often", freq),
      el("label", { class: "check" }, consent, "Send usage reports to this address"),
      el("button", { type: "submit" }, "Connect email"));
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const answer = await call("POST", "/api/channels/email", { consent: consent.checked, frequency: freq.value });
      if (answer.status === 200 || answer.status === 201) location.reload();
      else { status.className = "error"; status.textContent = problem(answer); }
    });
    section.append(form);
  } else {
    const c = e.channel;
    const freq = frequency("email-frequency", c.frequency);
    const boxes = events.map((id) => el("input", { type: "checkbox", name: "event", value: id, checked: c.events.includes(id) }));
    const form = el("form", { class: "stack", id: "email-settings" },
      el("p", {}, "Connected: reports go to ", el("strong", {}, c.destination), "."),
      el("label", { for: "email-frequency" }, "How often", freq),
      el("fieldset", {}, el("legend", {}, "Also tell me when"),
        boxes.map((b) => el("label", { class: "check" }, b, b.value.replaceAll("_", " ")))),
      el("div", { class: "row" },
        el("button", { type: "submit" }, "Save"),
        el("button", { type: "button", class: "quiet", id: "send-report", onclick: async () => {
          status.className = "";
          status.textContent = "Sending…";
          const answer = await call("POST", `/v1/channels/${c.id}/send-report`);
          if (answer.status === 200) {
            status.className = "ok";
            status.textContent = answer.body.sent ? `Report sent for ${answer.body.period_start} to ${answer.body.period_end}.`
              : (answer.body.message || "Nothing to report.");
          } else if (answer.status === 429) {
            const wait = answer.headers.get("retry-after");
            status.className = "error";
            status.textContent = `${problem(answer)}${wait ? ` Try again in ${wait} seconds.` : ""}`;
          } else {
            status.className = "error";
            status.textContent = problem(answer);
          }
        } }, "Send a report now"),
        el("button", { type: "button", class: "danger", id: "disconnect-email", onclick: async () => {
          if (!confirm("Stop emailing reports?")) return;
          const answer = await call("DELETE", `/api/channels/email/${c.id}`);
          if (answer.status === 200) location.reload();
          else { status.className = "error"; status.textContent = problem(answer); }
        } }, "Disconnect")));
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const body = { frequency: freq.value, events: boxes.filter((b) => b.checked).map((b) => b.value) };
      const answer = await call("PATCH", `/v1/channels/${c.id}`, body);
      status.className = answer.status === 200 ? "ok" : "error";
      status.textContent = answer.status === 200 ? "Saved." : problem(answer);
    });
    section.append(form);
  }
  section.append(status);
  const platforms = await Promise.all(["slack", "discord", "telegram"].map((p) => call("GET", `/api/channels/${p}`)));
  main.append(section,
    el("h2", {}, "Slack, Discord and Telegram"),
    el("p", { class: "hint" }, "Your operator connects these for you."),
    table("Other channels", [
      ["Platform", (p) => p.platform],
      ["Status", (p) => el("span", { class: `badge ${p.connected ? "on" : "off"}` },
        p.connected ? `connected, ${p.channel.frequency}` : (p.configured ? "not connected" : "not available"))],
      ["Destination", (p) => p.channel?.destination || "—"],
    ], platforms.filter((a) => a.status === 200).map((a) => a.body), "No other channels."));
}

export const pages = {
  "sign-in": signIn,
  usage,
  requests,
  keys,
  "data-protection": dataProtection,
  digests,
};
